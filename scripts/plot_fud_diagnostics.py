"""Figs. 3, 5 and 6 of FUD from the sampler traces of every model."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import pandas as pd

from fudbench.core.io import save_figure
from fudbench.workflow.jobs import setup_job
from fudbench.report.diagnostics import fig3_auroc_by_step, fig5_l2_by_step, fig6_final_l2, plt

setup_job(snakemake)
p, inp, out = snakemake.params, snakemake.input, snakemake.output
traces = pd.concat([pd.read_parquet(f) for f in inp.traces], ignore_index=True)
clean = pd.read_parquet(inp.clean_energy)
clean_energy = {m: g.set_index("image")["energy"] for m, g in clean.groupby("model")}
plt.rcParams["savefig.dpi"] = p.plots["dpi"]
save_figure(
    fig3_auroc_by_step(
        traces,
        clean_energy,
        p.models,
        p.fud["guidance_start"],
        p.num_train_timesteps,
        ratios=p.diagnostics["figure_ratios"],
    ),
    out.fig3,
)
save_figure(fig5_l2_by_step(traces, p.models, p.diagnostics["trace_kept"]), out.fig5)
save_figure(fig6_final_l2(traces, p.models), out.fig6)
