"""Figures 3, 5, 6 and Table 10 of FUD, from fud_diagnostics traces and timing benchmarks."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fudbench.analysis.fud_diagnostics import auroc_by_step, final_l2
from fudbench.report.figures import plt
from fudbench.report.latex import booktabs, escape


def _switch_step(traces: pd.DataFrame, guidance_start: float, num_train_timesteps: int) -> float | None:
    """First denoising step whose timestep is guided (t < guidance_start * T)."""
    steps = traces[["step", "t"]].dropna().drop_duplicates().sort_values("step")
    guided = steps[steps["t"] < guidance_start * num_train_timesteps]
    return float(guided["step"].iloc[0]) if len(guided) else None


def fig3_auroc_by_step(
    traces: pd.DataFrame, clean_energy: dict, models, guidance_start: float, num_train_timesteps: int, ratios=None
):
    """Left column: Energy AUROC of each step's denoised estimate vs the clean
    images, one line per kept fraction rho, the guidance switch dashed. Right:
    the final AUROC against the switch point O (sweep), one line per rho."""
    fig, axes = plt.subplots(len(models), 2, figsize=(9, 3.2 * len(models)), squeeze=False)
    for row, model in zip(axes, models):
        main = traces[(traces.model == model) & (traces.run == "main")]
        if ratios is not None:
            main = main[main["kept"].isin(ratios)]
        auc = auroc_by_step(main, clean_energy[model])
        for kept, g in auc.groupby("kept"):
            row[0].plot(g["step"], g["auroc"], label=f"rho={kept:.0%}")
        switch = _switch_step(main, guidance_start, num_train_timesteps)
        if switch is not None:
            row[0].axvline(switch - 0.5, color="grey", ls="--", lw=1, label=f"guidance on (t < {guidance_start:g}T)")
        row[0].axhline(0.5, color="black", lw=0.5)
        row[0].set(xlabel="denoising step", ylabel="Energy AUROC (clean vs estimate)", title=f"{model}", ylim=(0, 1.02))
        row[0].legend(fontsize=6, ncol=2)
        sweep = traces[(traces.model == model) & (traces.run == "sweep")]
        last = sweep[sweep["step"] == sweep["step"].max()]
        finals = [
            {"guidance_start": o, "kept": k, "auroc": auroc_by_step(g, clean_energy[model])["auroc"].iloc[0]}
            for (o, k), g in last.groupby(["guidance_start", "kept"])
        ]
        finals = pd.DataFrame(finals)
        for kept, g in finals.groupby("kept"):
            row[1].plot(g["guidance_start"], g["auroc"], marker="o", label=f"rho={kept:.0%}")
        row[1].axvline(guidance_start, color="grey", ls="--", lw=1)
        row[1].axhline(0.5, color="black", lw=0.5)
        row[1].set(
            xlabel="guidance switch O / T (guided for t < O)",
            ylabel="final Energy AUROC",
            title=f"{model}: switch-point sweep",
            ylim=(0, 1.02),
        )
        row[1].legend(fontsize=6)
    fig.tight_layout()
    return fig


def fig5_l2_by_step(traces: pd.DataFrame, models, kept: float):
    """Mean +- std over images of ||x_t - x|| along the denoising steps at one kept fraction."""
    fig, ax = plt.subplots(figsize=(4.6, 3.2))
    for model in models:
        d = traces[(traces.model == model) & (traces.run == "main") & np.isclose(traces["kept"], kept)]
        s = d.groupby("step")["l2"].agg(["mean", "std"]).reset_index()
        ax.plot(s["step"], s["mean"], label=model)
        ax.fill_between(s["step"], s["mean"] - s["std"], s["mean"] + s["std"], alpha=0.25)
    ax.set(
        xlabel="denoising step (0 = x_T)",
        ylabel="L2(x_t, x) in [0,1] pixels",
        title=f"{1 - kept:.0%} masked (rho = {kept:.0%} kept)",
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def fig6_final_l2(traces: pd.DataFrame, models):
    """Mean +- std over images of the final ||x_0 - x|| against the masked fraction 1 - rho."""
    fig, ax = plt.subplots(figsize=(4.6, 3.2))
    for model in models:
        s = final_l2(traces[(traces.model == model) & (traces.run == "main")]).sort_values("kept")
        masked = 1 - s["kept"]
        ax.errorbar(masked, s["mean"], yerr=s["std"], marker="o", capsize=3, label=model)
    ax.set(xlabel="masked fraction 1 - rho", ylabel="final L2(x_0, x) in [0,1] pixels")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def table10_timing(timings: pd.DataFrame, device: str):
    """timings: one row per (steps, image) with the seconds of one fill of `n_ratios` samples of that
    image in one batch (1: one sample, batch 1, the paper's setting; older runs: all ratios).
    Returns (summary, LaTeX) with mean and bootstrap-free min/max over images."""
    s = timings.groupby("steps")["seconds"].agg(["mean", "std", "min", "max", "count"]).reset_index()
    s = s.rename(columns={"count": "n_images"})
    s.insert(0, "device", device)
    rows = [
        [str(int(r.steps)), f"{r.mean:.3f}", f"{r.std:.3f}" if np.isfinite(r.std) else "--", str(int(r.n_images))]
        for r in s.itertuples()
    ]
    n_ratios = int(timings["n_ratios"].iloc[0])
    if n_ratios == 1:
        what, unit = "per sample (one image at one keep ratio, batch 1, as the paper)", "s / sample"
    else:
        what, unit = f"per image (all {n_ratios} ratios of one image in one batch)", "s / image"
    tex = booktabs(
        ["DDIM steps", unit, "std", "images"],
        rows,
        caption=f"Wall time of FUD {what} against the number of DDIM steps, on "
        f"{escape(device)} (Table 10 of FUD; the paper: batch 1 on an L40S).",
        label="tab:timing",
        align="rrrr",
    )
    return s, tex


def table5_caption(kept: float, sigma: float, explainer: str) -> str:
    return (
        f"Hard vs soft constraint: image quality of FUD samples ({escape(explainer)}, "
        f"{1 - kept:.0%} masked; soft $\\sigma = {sigma:g}$) against the originals, mean over images and "
        "models ($\\pm$ half-width of the bootstrap 95\\% CI; best in bold) (Table 5 of FUD)."
    )
