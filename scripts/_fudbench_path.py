"""Make this checkout's library importable in script jobs (local or cluster).

Snakemake puts scripts/ on sys.path; importing this module puts ../src first,
so jobs always run the library of the workflow they belong to, whatever is
installed in the environment.
"""
import sys
from pathlib import Path

_SRC = str(Path(__file__).resolve().parents[1] / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)
