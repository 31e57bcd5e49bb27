"""Tables 3 and 9: image quality of intermediate samples; Table 3 also draws Fig. 2 (radar)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.analysis.quality import QUALITY_METRICS
from fudbench.core.io import save_figure, write_csv, write_text
from fudbench.workflow.jobs import setup_job
from fudbench.report.figures import plt
from fudbench.report.ood_quality import fig2_radar, table3_quality
from fudbench.report.paper_tables import QUALITY_TABLES, intermediate_curves

setup_job(snakemake)
p = snakemake.params
table = p.table
curves = intermediate_curves(table)
quality = pd.concat([pd.read_parquet(f) for f in snakemake.input], ignore_index=True)
metrics = [m for m in QUALITY_METRICS if m in quality.columns]
quality = quality[quality["curve"].isin(curves) & quality["explainer"].isin(p.explainers)].copy()
quality["evaluator"] = quality["curve"].map(curves)
order = [label for label in dict.fromkeys(curves.values()) if label in set(quality["evaluator"])]
# the LaTeX caption naming the protocols that ran (fudbench.report.captions.quality_tex_caption; None: the default)
spec = {**QUALITY_TABLES[table], **({"caption": p.tex_caption} if getattr(p, "tex_caption", None) else {})}
summary, tex = table3_quality(
    quality, p.analysis["bootstrap"], p.analysis["ci"], p.seed, metrics=metrics, evaluators=order, **spec
)
write_csv(snakemake.output.csv, summary, index=False, float_format="%.6g")
write_text(snakemake.output.tex, tex)
if snakemake.output.get("radar"):
    plt.rcParams["savefig.dpi"] = p.plots["dpi"]
    save_figure(fig2_radar(summary, metrics), snakemake.output.radar)
print(summary.to_string(index=False), flush=True)
