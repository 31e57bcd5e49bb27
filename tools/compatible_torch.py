"""Offline installs (tools/install_env.sh --offline DIR): reuse the node's torch, and
which lock entries to install from the wheelhouse. Standard library only: it runs
under the base interpreter before the environment exists.

    python tools/compatible_torch.py            exit 0 if the base interpreter's torch + torchvision
                                                are reused (the reason on stderr), 1 if not
    python tools/compatible_torch.py --filter   the lock's name==version lines to install (without
                                                torch's own stack when it is reused), after checking
                                                that the wheelhouse has a wheel for each; exit 1 naming
                                                the missing ones otherwise
    python tools/compatible_torch.py --view DIR [--pth FILE]
                                                make DIR a folder of links to what the new environment
                                                takes from the node: torch's stack (every torch,
                                                torchvision, triton, nvidia-* and cuda-* package of the
                                                node) and, with FUD_NODE_PACKAGES=1, the lock entries the
                                                wheelhouse lacks; FILE: the .pth file that adds DIR after
                                                the environment's own packages

Environment: LOCK (the lock file), WHEELHOUSE, REUSE ("yes" or empty, --filter);
FUD_REUSE_TORCH (auto | 1 | 0) and FUD_MIN_TORCH (default 2.4), the decision;
FUD_NODE_PACKAGES=1: lock entries without a wheel are taken from the node at its versions (each named)
instead of stopping the install (a node that already holds most of the lock, e.g. a GPU container).

Why a view and not --system-site-packages: that option shows the *base* interpreter's folder, which
misses a torch installed in a virtual environment (a cluster's venv module, a container's
/opt/.../.venv: seen on this project's GPU machine), and it would show every other package of the
node too; one of those (transformers, imported by diffusers when present) demanded another
huggingface-hub than the lock's and broke the run. The view holds torch's stack and nothing else.

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

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from fudbench.core.lockfile import lock_entries  # noqa: E402  (standard library only, like this tool)

# What torch brings from the lock (torch's own stack): not installed when the node's torch is reused.
TORCH_STACK = re.compile(r"^(torch|torchvision|triton|pytorch-triton|nvidia-.*|cuda-.*)$")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


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
    return True, (
        f"reusing the node's torch {have} (CUDA {torch.version.cuda or 'none'}), torchvision "
        f"{torchvision.__version__} (lock: {locked}; FUD_MIN_TORCH {'.'.join(map(str, floor))})"
    )


def wheels(wheelhouse: Path) -> set[tuple[str, str]]:
    """(canonical name, version) of every wheel in the wheelhouse."""
    out = set()
    for f in wheelhouse.glob("*.whl"):
        parts = f.name.split("-")
        if len(parts) >= 5:
            out.add((canonical(parts[0]), parts[1]))
    return out


def in_torch_stack(name: str) -> bool:
    return bool(TORCH_STACK.match(canonical(name).replace("_", "-")))


def node_distributions() -> dict:
    """canonical name -> the node interpreter's installed distribution (the first on sys.path, the one
    an import finds)."""
    from importlib import metadata

    out = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and canonical(name) not in out:
            out[canonical(name)] = dist
    return out


def from_node(lock: Path, house: Path, reuse: bool) -> tuple[list, dict, list]:
    """(lock entries to install from the wheelhouse, {canonical name: node distribution} to take from
    the node instead, notes for the log): torch's stack when reused; with FUD_NODE_PACKAGES=1 also the
    entries without a wheel that the node has, never torch's stack (that is the reuse decision's)."""
    have, node = wheels(house), node_distributions()
    take_missing = os.environ.get("FUD_NODE_PACKAGES", "") == "1"
    install, taken, notes = [], {}, []
    for n, v in lock_entries(lock):
        c = canonical(n)
        if in_torch_stack(n) and reuse:
            if c in node:
                taken[c] = node[c]
            else:
                notes.append(f"the lock's {n} {v} is left out: the node's torch comes without it")
        elif (c, v) not in have and take_missing and c in node and not in_torch_stack(n):
            taken[c] = node[c]
        else:
            install.append((n, v))
    if reuse:  # torch's stack as the node has it, also parts the lock does not name (other CUDA packages)
        taken.update({c: d for c, d in node.items() if in_torch_stack(c)})
    return install, taken, notes


def _owned_paths(dist) -> list[tuple[str, ...]]:
    """The distribution's files as path parts relative to its site folder (RECORD), without scripts
    outside it (`../bin/...`), absolute paths and byte-code caches."""
    out = []
    for rel in dist.files or []:
        parts = Path(rel).parts
        if parts and not Path(rel).is_absolute() and ".." not in parts and "__pycache__" not in parts:
            out.append(parts)
    return out


def make_view(view: Path, taken: dict) -> list[str]:
    """Links in `view` to each taken distribution's top-level files and folders (packages, modules,
    .dist-info, .pth files). A folder that another distribution of the node shares (a namespace such
    as google/) is made in the view and holds links to the taken ones' entries alone, so the view shows
    nothing else of the node. Returns notes for the log (distributions with nothing to link)."""
    view.mkdir(parents=True, exist_ok=True)
    owners: dict[str, set] = {}
    for c, dist in node_distributions().items():
        for parts in _owned_paths(dist):
            owners.setdefault(parts[0], set()).add(c)
    notes = []
    for c, dist in taken.items():
        root = Path(dist.locate_file(""))
        paths = _owned_paths(dist)
        if not paths:
            notes.append(f"{dist.metadata['Name']}: no file list (RECORD) to link; not taken")
        for parts in paths:
            top = parts[0]
            shared = not owners.get(top, set()) <= set(taken)
            entry = parts[:2] if shared and len(parts) > 1 else parts[:1]
            target, link = root.joinpath(*entry), view.joinpath(*entry)
            if link.is_symlink() or not target.exists():
                continue
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(target)
    return notes


def pth_line(view: Path) -> str:
    """The .pth line that adds the view after the environment's own packages (its own .pth files too)."""
    return f"import site; site.addsitedir({str(view)!r})"


def main(argv) -> int:
    lock = Path(os.environ["LOCK"])
    if "--view" in argv:
        view = Path(argv[argv.index("--view") + 1])
        _, taken, notes = from_node(lock, Path(os.environ["WHEELHOUSE"]), bool(os.environ.get("REUSE")))
        notes += make_view(view, taken)
        pth = Path(argv[argv.index("--pth") + 1]) if "--pth" in argv else None
        if pth is not None:
            pth.write_text(pth_line(view) + "\n")
        for note in notes:
            print(f"[install] note: {note}", file=sys.stderr)
        locked = dict((canonical(n), v) for n, v in lock_entries(lock))
        shown = [
            f"{d.metadata['Name']} {d.version}"
            + (f" (lock {locked[c]})" if locked.get(c, d.version) != d.version else "")
            for c, d in sorted(taken.items())
        ]
        print(f"[install] from the node ({view}): {', '.join(shown) or 'nothing'}", file=sys.stderr)
        return 0
    if "--filter" not in argv:
        ok, why = reuse_decision(lock)
        print(f"[install] {why}", file=sys.stderr)
        return 0 if ok else 1
    reuse = bool(os.environ.get("REUSE"))
    house = Path(os.environ["WHEELHOUSE"])
    wanted, _, _ = from_node(lock, house, reuse)
    have = wheels(house)
    missing = [f"{n}=={v}" for n, v in wanted if (canonical(n), v) not in have]
    if missing:
        notes = house / "missing.txt"
        reasons = (
            dict(line.split("\t", 1) for line in notes.read_text().splitlines() if "\t" in line)
            if notes.is_file()
            else {}
        )
        lines = "\n  ".join(f"{m}: {reasons.get(m, 'not in the wheelhouse')}" for m in missing)
        print(
            f"[install] {len(missing)} lock entr{'y has' if len(missing) == 1 else 'ies have'} no wheel in "
            f"{house}:\n  {lines}\nBuild the wheelhouse for this node's Python and platform "
            f"(tools/wheelhouse.sh --python X.Y --platform TAG), or add the wheels (pip wheel NAME==VERSION "
            f"-w {house} on a machine like this one), or take them from this node's own packages at its "
            f"versions (FUD_NODE_PACKAGES=1).",
            file=sys.stderr,
        )
        return 1
    print("\n".join(f"{n}=={v}" for n, v in wanted))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
