"""Offline installs (tools/install_env.sh --offline DIR): reuse the node's torch, and
which lock entries to install from the wheelhouse. Standard library only: it runs
under the base interpreter before the environment exists.

    python tools/compatible_torch.py            exit 0 if the base interpreter's torch + torchvision
                                                are reused (the reason on stderr), 1 if not
    python tools/compatible_torch.py --filter   the lock's name==version lines to install (without
                                                torch's own stack when it is reused), after checking
                                                that the wheelhouse has a wheel for each; exit 1 naming
                                                the missing ones otherwise

Environment: LOCK (the lock file), WHEELHOUSE, REUSE ("yes" or empty, --filter);
FUD_REUSE_TORCH (auto | 1 | 0) and FUD_MIN_TORCH (default 2.4), the decision.

Why reuse: a cluster's torch is built for its driver (often a module or a
container), and the lock's CUDA wheels are ~5 GB to carry over. Why the
floor: the code uses torch.compile, SDPA, FlopCounterMode and torch.cpu's
ISA probes (with fallbacks), and is tested here only with the lock's torch,
so a reused torch older than FUD_MIN_TORCH is refused rather than trusted.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

# What torch brings from the lock (torch's own stack): not installed when the node's torch is reused.
TORCH_STACK = re.compile(r"^(torch|torchvision|triton|nvidia-.*)$")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def lock_entries(lock: Path) -> list[tuple[str, str]]:
    out = []
    for line in lock.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)", line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text.split("+")[0])[:3])


def reuse_decision(lock: Path) -> tuple[bool, str]:
    mode = os.environ.get("FUD_REUSE_TORCH", "auto")
    if mode == "0":
        return False, "FUD_REUSE_TORCH=0: the lock's torch from the wheelhouse"
    try:
        import torch
        import torchvision
        import torchvision.ops

        torchvision.ops.nms(torch.zeros(1, 4), torch.zeros(1), 0.5)
    except Exception as exc:  # noqa: BLE001 (any import or load failure: not reusable)
        return False, f"no usable torch + torchvision in {sys.executable} ({type(exc).__name__}: {exc})"
    have = torch.__version__
    if mode == "1":
        return True, f"FUD_REUSE_TORCH=1: the node's torch {have}, torchvision {torchvision.__version__}"
    locked = dict(lock_entries(lock)).get("torch")
    floor = _version(os.environ.get("FUD_MIN_TORCH", "2.4"))
    if locked and _version(have)[:1] != _version(locked)[:1]:
        return False, f"the node's torch {have} is not of the lock's major version ({locked})"
    if _version(have) < floor:
        return False, f"the node's torch {have} is older than FUD_MIN_TORCH ({'.'.join(map(str, floor))})"
    return True, (f"reusing the node's torch {have} (CUDA {torch.version.cuda or 'none'}), torchvision "
                  f"{torchvision.__version__} (lock: {locked}; FUD_MIN_TORCH {'.'.join(map(str, floor))})")


def wheels(wheelhouse: Path) -> set[tuple[str, str]]:
    """(canonical name, version) of every wheel in the wheelhouse."""
    out = set()
    for f in wheelhouse.glob("*.whl"):
        parts = f.name.split("-")
        if len(parts) >= 5:
            out.add((canonical(parts[0]), parts[1]))
    return out


def main(argv) -> int:
    lock = Path(os.environ["LOCK"])
    if "--filter" not in argv:
        ok, why = reuse_decision(lock)
        print(f"[install] {why}", file=sys.stderr)
        return 0 if ok else 1
    reuse = bool(os.environ.get("REUSE"))
    wanted = [(n, v) for n, v in lock_entries(lock)
              if not (reuse and TORCH_STACK.match(canonical(n).replace("_", "-")))]
    house = Path(os.environ["WHEELHOUSE"])
    have = wheels(house)
    missing = [f"{n}=={v}" for n, v in wanted if (canonical(n), v) not in have]
    if missing:
        notes = house / "missing.txt"
        reasons = dict(line.split("\t", 1) for line in notes.read_text().splitlines() if "\t" in line) \
            if notes.is_file() else {}
        lines = "\n  ".join(f"{m}: {reasons.get(m, 'not in the wheelhouse')}" for m in missing)
        print(f"[install] {len(missing)} lock entr{'y has' if len(missing) == 1 else 'ies have'} no wheel in "
              f"{house}:\n  {lines}\nBuild the wheelhouse for this node's Python and platform "
              f"(tools/wheelhouse.sh --python X.Y --platform TAG), or add the wheels (pip wheel NAME==VERSION "
              f"-w {house} on a machine like this one).", file=sys.stderr)
        return 1
    print("\n".join(f"{n}=={v}" for n, v in wanted))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
