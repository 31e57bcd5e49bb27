"""The cue verdicts and endpoint cells from whatever evaluate records a cue run has
written so far (fudbench.meta.cue.cue_verdict_frames on them): for a run that has
not finished (e.g. FUD's evaluate jobs still running), the other metrics' verdicts are
already final (each metric's per-image Spearman reads only its own records; the macro
bootstrap's resamples do not depend on the metric). Not a Snakemake script.

    ./fud python studies/planted_cue/cue_partial.py results/cue OUT --configfile studies/planted_cue/cue.yaml [overlay.yaml ...]

Writes OUT/cue_verdict.csv, OUT/cue_spearman_per_image.csv and OUT/cue_endpoint.csv
(the endpoint is empty until FUD's records exist); needs the run's cue_coverage.parquet.
"""

from __future__ import annotations

import argparse
import glob
from pathlib import Path

import pandas as pd

from fudbench.meta.cue import CueCheck, cue_verdict_frames, endpoint_rows
from fudbench.analysis.curves import configured_curve_scores, derived_scores, per_image_scores
from fudbench.config.files import resolve_config
from fudbench.core.io import read_parquet, write_csv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--configfile", nargs="+", required=True)
    a = ap.parse_args()
    cfg = resolve_config([Path(c) for c in a.configfile])
    files = sorted(glob.glob(str(a.results / "records/*/*/*/shard*.parquet")))
    if not files:
        raise SystemExit(f"{a.results}/records: no evaluate records yet")
    records = pd.concat([read_parquet(f) for f in files], ignore_index=True)
    per_image = per_image_scores(records)
    per_image = pd.concat([per_image, derived_scores(records, per_image)], ignore_index=True)
    coverage = pd.read_parquet(a.results / "analysis/cue_coverage.parquet")
    ana = cfg["analysis"]
    verdicts, rho = cue_verdict_frames(
        per_image.dropna(subset=["score"]),
        coverage,
        cfg["explainers"],
        configured_curve_scores(cfg["evaluators"]),
        n_boot=ana["bootstrap"],
        ci=ana["ci"],
        seed=cfg["seed"],
    )
    a.out.mkdir(parents=True, exist_ok=True)
    write_csv(a.out / "cue_verdict.csv", verdicts, index=False, float_format="%.6g")
    write_csv(a.out / "cue_spearman_per_image.csv", rho, index=False, float_format="%.6g")
    primary = (CueCheck.from_config(ana.get("cue")).truth, True)
    endpoint = endpoint_rows(rho, primary=primary, ci=ana["ci"], verdicts=verdicts)
    write_csv(a.out / "cue_endpoint.csv", endpoint, index=False, float_format="%.6g")
    print(f"{len(files)} record files; curves: {', '.join(sorted(per_image['curve'].unique()))}")


if __name__ == "__main__":
    main()
