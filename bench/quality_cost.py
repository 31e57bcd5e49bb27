"""CPU cost of the quality jobs (piq metrics of the kept samples) on a finished run, as the
jobs pay it: one fresh process per evaluator x shard running pipeline.sample_quality, its
imports included; optionally against another checkout's library, with the outputs compared.

    ./fud python bench/quality_cost.py RESULTS --config CONFIG [--src OTHER/src] [--evaluators fud insdel]

RESULTS is the run's results/<run_name>, CONFIG its config file(s) (overlays of
config/config.yaml, as ./fud takes them). Prints per evaluator x shard the process's user +
system CPU seconds (imports, reading, metrics) with this checkout's src/ and, with --src, with
that one (e.g. a copy of an earlier commit: `git archive <commit> | tar -x -C /tmp/old`), and
whether the two measured the same numbers bit for bit. Run it with one thread's worth of CPU
free; CPU seconds, unlike wall time, survive a shared machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

JOB = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
import torch
torch.set_num_threads(1)
from fudbench.workflow.pipeline import sample_quality
args = json.loads(sys.argv[2])
samples = {tuple(k.split("|")): v for k, v in args["samples"].items()}
q = sample_quality(args["images"], samples, args["shard"], args["shard_size"], args["metrics"],
                   args["images_per_shard"])
q.to_parquet(args["out"])
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu_s": r.ru_utime + r.ru_stime, "pairs": len(q)}))
"""


def jobs(results: Path, cfg: dict, evaluators=None) -> list[dict]:
    """The quality jobs of the run: one per evaluator x shard with kept samples."""
    models = list(cfg["models"]["classifiers"])
    explainers = cfg["analysis"].get("pooled_explainers") or list(cfg["explainers"])
    out = []
    for evaluator in evaluators or list(cfg["evaluators"]):
        shards = sorted(
            {p.name for p in (results / "samples" / models[0] / explainers[0] / evaluator).glob("shard*.npz")}
        )
        for shard in shards:
            samples = {
                f"{m}|{e}": str(results / "samples" / m / e / evaluator / shard) for m in models for e in explainers
            }
            if not all(Path(p).is_file() for p in samples.values()):
                continue
            out.append(
                {
                    "evaluator": evaluator,
                    "images": str(results / "data" / "eval.npz"),
                    "samples": samples,
                    "shard": int(shard[5:-4]),
                    "shard_size": cfg["data"]["shard_size"],
                    "metrics": cfg["evaluation"]["quality"]["metrics"],
                    "images_per_shard": cfg["evaluation"]["quality"]["images_per_shard"],
                }
            )
    return out


def run(src: Path, job: dict, out: Path) -> dict:
    res = subprocess.run(
        [sys.executable, "-c", JOB, str(src), json.dumps({**job, "out": str(out)})], capture_output=True, text=True
    )
    if res.returncode:
        raise RuntimeError(
            f"quality job {job['evaluator']} shard {job['shard']} failed with {src}:\n{res.stderr[-3000:]}"
        )
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> list[dict]:
    import pandas as pd

    try:
        from fudbench.config.cli import user_file  # paths as typed, where ./fud was called
    except ImportError:
        user_file = Path
    from fudbench.config.files import resolve_config
    from fudbench.core.hardware import describe_machine

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=user_file)
    ap.add_argument("--config", nargs="*", type=user_file, default=[])
    ap.add_argument("--src", type=user_file, help="another checkout's src/ to compare with")
    ap.add_argument("--evaluators", nargs="*")
    args = ap.parse_args(argv)
    cfg = resolve_config(args.config)
    todo = jobs(args.results, cfg, args.evaluators)
    if not todo:
        raise SystemExit(f"{args.results}: no kept samples of the pooled explainers found under samples/")
    print(describe_machine("cpu"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, job in enumerate(todo):
            row = {"evaluator": job["evaluator"], "shard": job["shard"]}
            new = run(REPO / "src", job, Path(tmp) / f"new{i}.parquet")
            row.update(pairs=new["pairs"], cpu_s=round(new["cpu_s"], 2))
            if args.src:
                old = run(args.src, job, Path(tmp) / f"old{i}.parquet")
                row["cpu_s_other"] = round(old["cpu_s"], 2)
                a, b = (pd.read_parquet(Path(tmp) / f"{k}{i}.parquet") for k in ("new", "old"))
                row["identical"] = a.equals(b)
            rows.append(row)
            print(row, flush=True)
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    total = {c: round(table[c].sum(), 1) for c in ("cpu_s", "cpu_s_other") if c in table}
    print(f"total CPU s: {total}")
    return rows


if __name__ == "__main__":
    main()
