"""Table 3: image quality of every evaluator's intermediate samples; Fig. 2 radar."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.analysis.curves import INTERMEDIATE_CURVES
from fudbench.analysis.quality import QUALITY_METRICS
from fudbench.io import save_figure, write_csv, write_text
from fudbench.jobs import setup_job
from fudbench.report.figures import plt
from fudbench.report.ood_quality import fig2_radar, table3_quality

setup_job(snakemake)
p = snakemake.params
quality = pd.concat([pd.read_parquet(f) for f in snakemake.input], ignore_index=True)
metrics = [m for m in QUALITY_METRICS if m in quality.columns]
quality = quality[quality["curve"].isin(INTERMEDIATE_CURVES)].copy()
quality["evaluator"] = quality["curve"].map(INTERMEDIATE_CURVES)
order = [label for label in INTERMEDIATE_CURVES.values() if label in set(quality["evaluator"])]
summary, tex = table3_quality(quality, p.analysis["bootstrap"], p.analysis["ci"], p.seed, metrics=metrics,
                              evaluators=order)
write_csv(snakemake.output.csv, summary, index=False, float_format="%.6g")
write_text(snakemake.output.tex, tex)
plt.rcParams["savefig.dpi"] = p.plots["dpi"]
save_figure(fig2_radar(summary, metrics), snakemake.output.radar)
print(summary.to_string(index=False), flush=True)
