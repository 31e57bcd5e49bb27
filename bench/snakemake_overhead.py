"""CPU of Snakemake's own process, with and without fudbench.workflow.snakemake_main's
scheduler fix (docs/performance.md, "Snakemake's own CPU").

    ./fud python bench/snakemake_overhead.py --jobs 300 --cores 2

Runs a throwaway workflow of N jobs that each sleep (so the jobs themselves
cost next to no CPU) twice, once as `python -m snakemake` and once as
`python -m fudbench.workflow.snakemake_main`, and prints for each the wall time and
the user + system CPU of Snakemake and its children (the jobs' shells), with
the machine's CPU model and flags.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SNAKEFILE = """
import os
N = int(os.environ["BENCH_JOBS"])
rule all:
    input: expand("out/{i}.txt", i=range(N))
rule one:
    output: "out/{i}.txt"
    shell: "sleep %s; echo {wildcards.i} > {output}"
"""


def run(module: str, jobs: int, cores: int, sleep: float) -> dict:
    with tempfile.TemporaryDirectory() as work:
        (Path(work) / "Snakefile").write_text(SNAKEFILE % sleep)
        env = dict(
            os.environ,
            BENCH_JOBS=str(jobs),
            PYTHONPATH=os.pathsep.join(
                [str(Path(__file__).resolve().parents[1] / "src"), os.environ.get("PYTHONPATH", "")]
            ),
        )
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        res = subprocess.run(
            [sys.executable, "-m", module, "--cores", str(cores), "-q"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if res.returncode != 0:
            raise SystemExit(f"{module} failed:\n{res.stderr[-2000:]}")
        return {"wall": wall, "user": after.ru_utime - before.ru_utime, "sys": after.ru_stime - before.ru_stime}


def main(argv=None) -> int:
    from fudbench.core.hardware import describe_machine

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--sleep", type=float, default=0.5, help="seconds each job sleeps")
    args = ap.parse_args(argv)
    print(describe_machine())
    print(f"{args.jobs} jobs of `sleep {args.sleep}`, --cores {args.cores}")
    for module in ("snakemake", "fudbench.workflow.snakemake_main"):
        r = run(module, args.jobs, args.cores, args.sleep)
        print(f"{module:24s} wall {r['wall']:6.1f} s   CPU user {r['user']:6.2f} s + sys {r['sys']:5.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
