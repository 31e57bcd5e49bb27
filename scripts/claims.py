"""The headline claims of the meta-evaluation (fudbench.analysis.claims), each
decided by a paired bootstrap over images."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.analysis.claims import decide_claims
from fudbench.evaluators import configured_curves
from fudbench.io import write_csv, write_text
from fudbench.jobs import setup_job
from fudbench.report.meta import claims_table

log = setup_job(snakemake)
p = snakemake.params
per_image = pd.read_parquet(snakemake.input.per_image).dropna(subset=["score"])
specs = configured_curves(p.evaluators)
curve_scores = {c: (s.label, s.higher_is_better, s.score) for c, s in specs.items()}
claims = decide_claims(per_image, p.explainers, curve_scores, n_boot=p.analysis["bootstrap"], ci=p.analysis["ci"],
                       seed=p.seed)
write_csv(snakemake.output.csv, claims, index=False, float_format="%.6g")
write_text(snakemake.output.tex, claims_table(claims, p.analysis["ci"]))
with pd.option_context("display.width", 200, "display.max_columns", 12):
    print(claims.to_string(index=False), flush=True)
