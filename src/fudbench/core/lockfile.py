"""The pinned entries of requirements.lock, read one way everywhere: by
fudbench.core.hardware (which installed packages are off the lock), by
tools/compatible_torch.py and tools/wheelhouse.sh (what to install or fetch).
Standard library only: the tools run it under the base interpreter, before
the environment exists.

    python src/fudbench/core/lockfile.py [LOCK]   prints the lock's name==version lines
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

# name==version at the start of a line; markers, hashes and comments after the version are not part of it
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)")


def lock_entries(lock) -> list[tuple[str, str]]:
    """(name, version) of every pinned line of the lock file, in its order."""
    out = []
    for line in Path(lock).read_text().splitlines():
        m = PIN.match(line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


if __name__ == "__main__":
    default = Path(__file__).resolve().parents[3] / "requirements.lock"
    for name, version in lock_entries(sys.argv[1] if len(sys.argv) > 1 else default):
        print(f"{name}=={version}")
