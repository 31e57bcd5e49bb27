"""Compare two runs' results file by file: are the numbers identical?

    ./fud python bench/compare_results.py <results/run A> <results/run B> [--tables]

Records (records/**/*.parquet) must be equal in every column but the
wall-clock `seconds`, exactly (no tolerance); intermediate samples
(samples/**/*.npz) bit for bit. With --tables, the tables' CSVs too, but for
their wall-time columns (fudbench.report.TIMING_COLUMNS), as sets of rows (a table whose rows come in another
order is reported as reordered, not as different). Prints one line per kind and every differing file; exits 1
if anything differs or a file exists in one run only. Used to check that a
refactoring changed no number (issue 16).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from fudbench.report import TIMING_COLUMNS  # noqa: E402

WALL_CLOCK = ("seconds",)


def _files(root: Path, pattern: str) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in sorted(root.glob(pattern))}


def compare_frames(a: pd.DataFrame, b: pd.DataFrame) -> str | None:
    """None if equal (wall-clock columns dropped), else what differs."""
    a = a.drop(columns=[c for c in WALL_CLOCK if c in a])
    b = b.drop(columns=[c for c in WALL_CLOCK if c in b])
    if list(a.columns) != list(b.columns):
        return f"columns differ: {list(a.columns)} vs {list(b.columns)}"
    try:
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_exact=True)
    except AssertionError as exc:
        return str(exc).splitlines()[0] + " " + " ".join(str(exc).splitlines()[1:4])
    return None


def compare_tables(a: pd.DataFrame, b: pd.DataFrame) -> str | None:
    """None if equal; 'reordered' notes tables with the same rows in another order."""
    if compare_frames(a, b) is None:
        return None

    def canonical(t):
        return t.sort_values(list(t.columns), key=lambda c: c.astype(str)).reset_index(drop=True)

    if list(a.columns) == list(b.columns) and compare_frames(canonical(a), canonical(b)) is None:
        return "reordered"
    return compare_frames(a, b)


def compare_npz(a: Path, b: Path) -> str | None:
    with np.load(a) as x, np.load(b) as y:
        if sorted(x.files) != sorted(y.files):
            return f"arrays differ: {sorted(x.files)} vs {sorted(y.files)}"
        bad = [k for k in x.files if not np.array_equal(x[k], y[k], equal_nan=x[k].dtype.kind == "f")]
        return f"arrays {bad} differ" if bad else None


def _untimed(path: Path) -> pd.DataFrame:
    """A table's CSV without its wall-time columns."""
    t = pd.read_csv(path)
    return t.drop(columns=[c for c in TIMING_COLUMNS.get(path.name, ()) if c in t.columns])


def compare(root_a: Path, root_b: Path, tables: bool) -> int:
    kinds = [
        ("records", "records/**/*.parquet", lambda p, q: compare_frames(pd.read_parquet(p), pd.read_parquet(q))),
        ("samples", "samples/**/*.npz", compare_npz),
    ]
    if tables:
        kinds.append(("tables", "tables/*.csv", lambda p, q: compare_tables(_untimed(p), _untimed(q))))
    problems = 0
    for kind, pattern, same in kinds:
        a, b = _files(root_a, pattern), _files(root_b, pattern)
        only = sorted(set(a) ^ set(b))
        found = {k: d for k in sorted(set(a) & set(b)) if (d := same(a[k], b[k])) is not None}
        reordered = sorted(k for k, d in found.items() if d == "reordered")
        diffs = {k: d for k, d in found.items() if d != "reordered"}
        note = f", {len(reordered)} with the same rows in another order" if reordered else ""
        print(f"{kind}: {len(set(a) & set(b))} files in both, {len(diffs)} differ, {len(only)} in one run only{note}")
        for k in reordered:
            print(f"  reordered: {k}")
        for k in only:
            print(f"  only in {'A' if k in a else 'B'}: {k}")
        for k, d in diffs.items():
            print(f"  differs: {k}: {d}")
        problems += len(only) + len(diffs)
    print("identical" if not problems else f"{problems} difference(s)")
    return 1 if problems else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from fudbench.config.cli import user_file

    ap.add_argument("a", type=user_file)
    ap.add_argument("b", type=user_file)
    ap.add_argument("--tables", action="store_true", help="also the tables' CSVs (not their wall-time columns)")
    args = ap.parse_args(argv)
    for root in (args.a, args.b):
        if not (root / "records").is_dir():
            ap.error(f"{root} has no records/ folder: give a run's results directory, e.g. results/smoke")
    from fudbench.core.hardware import describe_results

    print(describe_results(args.a), describe_results(args.b), sep="\n")
    return compare(args.a, args.b, args.tables)


if __name__ == "__main__":
    sys.exit(main())
