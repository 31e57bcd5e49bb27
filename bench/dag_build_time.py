"""Time Snakemake takes to parse the workflow and build the DAG (a dry run), per config.

    ./fud python bench/dag_build_time.py [--configs default smoke paper] [--repeats 3] [--csv out.csv]

Each repeat is a fresh `snakemake -n --quiet rules` in an empty directory;
the figure is the CPU time of that process and its children (user + system)
and its wall time, median over the repeats, with the number of jobs in the
DAG. `paper` is config/paper.yaml with stand-in asset paths (an empty
ImageNet directory, missing checkpoints), as in tests/test_paper_profile.py:
the DAG is built without the assets. It was a test's `< 10 s of CPU`
assertion, which depended on the machine; here it is a number to report.
"""

from __future__ import annotations

import argparse
import csv
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
CONFIGS = {"default": "config/config.yaml", "smoke": "config/smoke.yaml", "paper": "config/paper.yaml"}


def stand_in_paper_config(work: Path) -> Path:
    """config/paper.yaml pointing at an empty ImageNet folder and absent checkpoints under `work`."""
    cfg = yaml.safe_load((REPO / CONFIGS["paper"]).read_text())
    (work / "imagenet").mkdir(exist_ok=True)
    cfg["data"]["imagenet"]["root"] = str(work / "imagenet")
    cfg["models"]["score_model"]["guided_diffusion"]["checkpoint"] = str(work / "gd.pt")
    for name, c in cfg["models"]["classifiers"].items():
        if isinstance(c, dict):  # not the overlay's `_replace: true` mark
            c["path"] = str(work / f"{name}.pth")
    path = work / "paper.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def dry_run(config: str, work: Path) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, jobs) of one dry run of `config` in `work`."""
    configfile = stand_in_paper_config(work) if config == "paper" else REPO / CONFIGS[config]
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(REPO / "Snakefile"),
        "-n",
        "--quiet",
        "rules",
        "--configfile",
        str(configfile),
        "--directory",
        str(work / "run"),
    ]
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise RuntimeError(f"{config}: snakemake -n failed:\n{(res.stdout + res.stderr)[-3000:]}")
    total = re.search(r"^total\s+(\d+)$", res.stdout + res.stderr, re.M)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return cpu, wall, int(total[1]) if total else -1


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--csv", default=None, help="also write the rows here")
    args = ap.parse_args(argv)
    rows = []
    from fudbench.core.hardware import describe_machine

    print(describe_machine())
    print(f"{'config':8s} {'jobs':>6s} {'cpu_s':>7s} {'wall_s':>7s}  (median of {args.repeats})", flush=True)
    for config in args.configs:
        runs = []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                runs.append(dry_run(config, Path(tmp)))
        row = {
            "config": config,
            "jobs": runs[0][2],
            "repeats": args.repeats,
            "cpu_s": statistics.median(r[0] for r in runs),
            "wall_s": statistics.median(r[1] for r in runs),
        }
        rows.append(row)
        print(f"{config:8s} {row['jobs']:6d} {row['cpu_s']:7.2f} {row['wall_s']:7.2f}", flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return rows


if __name__ == "__main__":
    main()
