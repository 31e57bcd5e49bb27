"""The run's provenance: machine, versions, threads, FUD's resolved precision."""

import _fudbench_path  # puts this checkout's src/ first on sys.path
import subprocess
from pathlib import Path

import pandas as pd
import torch  # noqa: F401  (setup_job sets the job's threads on it)

from fudbench.core.device import resolve_device
from fudbench.core.hardware import run_info
from fudbench.core.io import write_csv, write_json
from fudbench.workflow.jobs import setup_job

log = setup_job(snakemake)
p = snakemake.params
repo = Path(_fudbench_path.__file__).resolve().parents[1]
commit = subprocess.run(
    ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
).stdout.strip()
info = {**run_info(resolve_device(p.job["device"]), p.fud), "commit": commit or "unknown"}
for key, value in info.items():
    log.info("%s: %s", key, value)
write_json(snakemake.output.info, info)
write_csv(snakemake.output.table, pd.DataFrame({"key": list(info), "value": [str(v) for v in info.values()]}))
