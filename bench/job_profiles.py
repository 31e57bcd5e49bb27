"""Where a run's time goes, per job and per Python function: a table of the cProfile files that
`FUD_PROFILE_DIR=<folder> ./fud run` leaves (fudbench.workflow.jobs.profile_job), longest job first.

    FUD_PROFILE_DIR=/tmp/prof ./fud run --cores 2
    ./fud python bench/job_profiles.py /tmp/prof [--top 3] [--csv jobs.csv]

Each row: the job (rule and wildcard values), its profiled seconds, and the functions with the most
time of their own (torch operators appear as `{built-in method torch.conv2d}` and the like). cProfile
slows Python-heavy jobs (matplotlib, pandas) by up to ~2x and tensor-heavy ones by a few percent, so
compare jobs with each other and runs with runs profiled the same way; for wall and CPU seconds
without the profiler use the jobs' logs (bench/workflow_overhead.py).
"""

from __future__ import annotations

import argparse
import csv
import pstats
from pathlib import Path


def own_time_leaders(stats: pstats.Stats, top: int) -> list[tuple[str, float]]:
    """The `top` functions with the most time of their own: (label, seconds)."""
    rows = []
    for (filename, line, function), (_, _, own, _, _) in stats.stats.items():
        where = "" if filename == "~" else f"{Path(filename).name}:{line} "
        rows.append((f"{where}{function}", own))
    return sorted(rows, key=lambda r: -r[1])[:top]


def table(folder: Path, top: int) -> list[dict]:
    rows = []
    for path in sorted(folder.glob("*.prof")):
        stats = pstats.Stats(str(path))
        rows.append({"job": path.stem, "seconds": stats.total_tt, "leaders": own_time_leaders(stats, top)})
    return sorted(rows, key=lambda r: -r["seconds"])


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path, help="the FUD_PROFILE_DIR of a run")
    ap.add_argument("--top", type=int, default=3, help="functions shown per job")
    ap.add_argument("--csv", type=Path, help="also write job, seconds and the leaders here")
    args = ap.parse_args(argv)
    rows = table(args.folder, args.top)
    if not rows:
        raise SystemExit(f"no .prof files in {args.folder}: run with FUD_PROFILE_DIR={args.folder} first")
    total = sum(r["seconds"] for r in rows)
    print(f"# {len(rows)} job profiles in {args.folder}, {total:.1f} profiled seconds in all")
    for r in rows:
        leaders = "; ".join(f"{label} {s:.2f} s" for label, s in r["leaders"])
        print(f"{r['seconds']:8.2f} s  {r['job']:40s} {leaders}")
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["job", "seconds", "share", "leaders"])
            for r in rows:
                w.writerow(
                    [
                        r["job"],
                        f"{r['seconds']:.3f}",
                        f"{r['seconds'] / total:.4f}",
                        "; ".join(f"{label} {s:.3f}" for label, s in r["leaders"]),
                    ]
                )
    return rows


if __name__ == "__main__":
    main()
