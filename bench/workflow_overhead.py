"""Where a workflow run's time goes: job start-up vs work, per rule.

    ./fud python bench/workflow_overhead.py [results/synthetic] [--wrapper] [--csv out.csv]

Reads a finished (or running) run's folder:
- each job's log: the two `fudbench-timing` lines that fudbench.workflow.jobs.setup_job
  writes, `startup` (process start to the first line of work: interpreter,
  Snakemake's script preamble, imports) and `work` (first line of work to
  exit, with the heavy libraries loaded by then: torch, diffusers, piq ...);
- each job's Snakemake benchmark file (`s` column): the job's wall time as
  Snakemake measured it, where the rule declares one;
- Snakemake's log of the run (.snakemake/log/, newest first, or --snakemake-log)
  for the run's wall time.

Prints, per rule: jobs, median start-up, median work, median wall and total
seconds; then the start-up share of the jobs' wall time, i.e. everything but
work (start-up inside the job's process plus what Snakemake spends outside
it: spawning, teardown, waiting for a core), and the run's wall time and the
share of the cores the jobs kept busy. Jobs without timing lines (rules whose
script does not call setup_job) are not counted.

--wrapper also measures Snakemake's script wrapper alone: a throwaway
workflow of trivial `script:` jobs that import nothing, run with one core;
the median start-up of those jobs is what every script job pays before its
first import.
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

TIMING = re.compile(r"^(\S+ \S+) (\S+) INFO: fudbench-timing (startup|work) ([\d.]+) s(?: \(loaded: (.*)\))?")
SMK_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")


def job_timings(results: Path) -> list[dict]:
    """One dict per job log with timing lines: rule, log, startup, work, wall."""
    jobs = []
    for log in sorted((results / "logs").rglob("*.log")):
        found = {}
        for line in log.read_text(errors="replace").splitlines():
            m = TIMING.match(line)
            if m:
                found["rule"], found[m.group(3)] = m.group(2), float(m.group(4))
                if m.group(5):
                    found["loaded"] = m.group(5)
        if "startup" not in found:
            continue
        rel = log.relative_to(results / "logs").with_suffix(".tsv")
        bench = results / "benchmarks" / rel
        wall = None
        if bench.is_file():
            rows = list(csv.DictReader(bench.open(), delimiter="\t"))
            wall = float(rows[-1]["s"]) if rows else None
        jobs.append(
            {
                "rule": found["rule"],
                "log": str(rel.with_suffix("")),
                "startup": found["startup"],
                "work": found.get("work"),
                "wall": wall,
                "loaded": found.get("loaded", "?"),
            }
        )
    return jobs


def run_wall_seconds(log: Path) -> tuple[float, int] | None:
    """(seconds from the first to the last timestamp, finished jobs) of a Snakemake log."""
    stamps = [
        datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        for line in log.read_text(errors="replace").splitlines()
        if (m := SMK_STAMP.match(line))
    ]
    done = re.findall(r"^(\d+) of \d+ steps", log.read_text(errors="replace"), re.M)
    if len(stamps) < 2:
        return None
    return (stamps[-1] - stamps[0]).total_seconds(), int(done[-1]) if done else 0


def summarise(jobs: list[dict]) -> list[dict]:
    by_rule = defaultdict(list)
    for j in jobs:
        by_rule[j["rule"]].append(j)
    rows = []
    for rule, js in sorted(by_rule.items(), key=lambda kv: -sum(j["startup"] + (j["work"] or 0) for j in kv[1])):
        med = lambda key: statistics.median([j[key] for j in js if j[key] is not None] or [float("nan")])  # noqa: E731
        rows.append(
            {
                "rule": rule,
                "jobs": len(js),
                "startup_median_s": med("startup"),
                "work_median_s": med("work"),
                "wall_median_s": med("wall"),
                "startup_total_s": sum(j["startup"] for j in js),
                "work_total_s": sum(j["work"] or 0 for j in js),
                "loaded": " | ".join(sorted({j["loaded"] for j in js})),
            }
        )
    return rows


def wrapper_cost(n_jobs: int = 8) -> float:
    """Median start-up of a `script:` job that imports nothing (one core, so no contention)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "job.py").write_text(
            "import sys\nsys.path.insert(0, %r)\nfrom fudbench.workflow.jobs import setup_job\nsetup_job(snakemake)\n"
            "open(snakemake.output[0], 'w').close()\n" % str(Path(__file__).resolve().parents[1] / "src")
        )
        (tmp / "Snakefile").write_text(
            f"rule all:\n    input: expand('out/{{i}}.txt', i=range({n_jobs}))\n\n"
            "rule trivial:\n    output: 'out/{i}.txt'\n    log: 'logs/trivial/{i}.log'\n    script: 'job.py'\n"
        )
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "snakemake", "--cores", "1", "-q"], cwd=tmp, check=True, capture_output=True
        )
        total = time.perf_counter() - t0
        startups = [j["startup"] for j in job_timings(tmp)]
    print(
        f"Snakemake script wrapper: {n_jobs} trivial jobs in {total:.1f} s (incl. Snakemake's own start); "
        f"median start-up per job {statistics.median(startups):.2f} s (interpreter + preamble + fudbench.workflow.jobs)"
    )
    return statistics.median(startups)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from fudbench.config.cli import user_file

    ap.add_argument(
        "results",
        nargs="?",
        default=None,
        type=user_file,
        help="the run's results/<run_name> (default: the repository's results/synthetic)",
    )
    ap.add_argument(
        "--snakemake-log",
        type=user_file,
        help="Snakemake's log of the run (default: newest in .snakemake/log of the run's folder)",
    )
    ap.add_argument("--cores", type=int, default=2, help="cores the run used (for the busy share)")
    ap.add_argument("--wrapper", action="store_true", help="also measure Snakemake's script wrapper alone")
    ap.add_argument("--csv", type=user_file, help="write the per-rule table here")
    args = ap.parse_args(argv)
    args.results = args.results or Path(__file__).resolve().parents[1] / "results" / "synthetic"

    jobs = job_timings(args.results)
    from fudbench.core.hardware import describe_results

    print(describe_results(args.results))
    if not jobs:
        sys.exit(f"no fudbench-timing lines under {args.results}/logs: is this a results folder of a run?")
    rows = summarise(jobs)
    print(
        f"{'rule':<26}{'jobs':>5}{'start-up':>10}{'work':>9}{'wall':>9}{'start-up':>11}{'work':>10}  "
        "heavy libraries loaded by the end of the job"
    )
    print(f"{'':<26}{'':>5}{'median s':>10}{'median':>9}{'median':>9}{'total s':>11}{'total s':>10}")
    for r in rows:
        print(
            f"{r['rule']:<26}{r['jobs']:>5}{r['startup_median_s']:>10.2f}{r['work_median_s']:>9.2f}"
            f"{r['wall_median_s']:>9.2f}{r['startup_total_s']:>11.1f}{r['work_total_s']:>10.1f}  {r['loaded']}"
        )
    startup = sum(j["startup"] for j in jobs)
    work = sum(j["work"] or 0 for j in jobs)
    # Job wall time: Snakemake's benchmark where the rule has one, else start-up + work.
    wall_jobs = sum(j["wall"] if j["wall"] is not None else j["startup"] + (j["work"] or 0) for j in jobs)
    outside = wall_jobs - startup - work
    print(
        f"\n{len(jobs)} timed jobs, {wall_jobs:.0f} job-seconds of wall time: work {work:.0f} s, start-up in "
        f"the job's process {startup:.0f} s, outside it (spawn, teardown, waits) {outside:.0f} s"
    )
    print(f"start-up share of the jobs' wall time: {(wall_jobs - work) / wall_jobs:.1%}")
    # the run's working directory holds results/<run> and .snakemake/
    log = args.snakemake_log or max(
        (args.results.parent.parent / ".snakemake" / "log").glob("*.snakemake.log"),
        default=None,
        key=lambda p: p.stat().st_mtime,
    )
    wall = run_wall_seconds(log) if log and log.is_file() else None
    if wall:
        seconds, done = wall
        print(
            f"run: {done} jobs finished in {seconds / 60:.1f} min wall ({log.name}); {args.cores} cores x wall = "
            f"{args.cores * seconds:.0f} core-seconds, of which jobs {wall_jobs / (args.cores * seconds):.0%} "
            f"(the rest: Snakemake's own start and scheduling, cores idle on the DAG's critical path)"
        )
    if args.wrapper:
        wrapper_cost()
    if args.csv:
        with args.csv.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
