"""Fig. 4: every gallery image's intermediate samples under each evaluator, for one
model x explainer; and the all-pairs grid of one image (qualitative_samples)."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
from fudbench.analysis.curves import INTERMEDIATE_CURVES
from fudbench.io import load_npz, save_figure
from fudbench.jobs import setup_job
from fudbench.report.figures import fig4_qualitative, plt, qualitative_grid

setup_job(snakemake)
p = snakemake.params
plots = p.plots
plt.rcParams["savefig.dpi"] = plots["dpi"]
gallery = load_npz(snakemake.input[0])
# the paper's column order: INFID, INS/DEL, Sen-N, FUD
labels = {c: INTERMEDIATE_CURVES[c] for c in ("infidelity", "deletion_ratios", "sensitivity_n", "fud")
          if c in INTERMEDIATE_CURVES}
save_figure(fig4_qualitative(gallery, labels, p.models[0], plots["qualitative_explainers"][0]), snakemake.output.fig4)
save_figure(qualitative_grid(gallery, INTERMEDIATE_CURVES, explainers=plots["qualitative_explainers"]),
            snakemake.output.grid)
