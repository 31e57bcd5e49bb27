"""FUD diagnostics (Figs. 3, 5, 6, Table 10): traces, their long format and the figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from fudbench.analysis.fud_diagnostics import (
    auroc_by_step,
    diagnostics_frame,
    final_l2,
    keep_masks,
    sample_seeds,
    trace_fud,
)
from fudbench.imputers.diffusion import fud_sampler

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)


@pytest.fixture(scope="module")
def traced(tiny_unet, tiny_cnn):
    unet, schedule = tiny_unet
    torch.manual_seed(3)
    x = torch.rand(2, 3, 8, 8)
    y = tiny_cnn(x).argmax(1)
    ratios = [0.25, 0.75]
    masks = keep_masks(torch.rand(2, 3, 8, 8), ratios, "abs_sum", [1, 2])
    imputer = fud_sampler(unet, schedule, {"steps": 4, "guidance_scale": 4.0, "guidance_start": 0.5})
    xs, ys = x.repeat_interleave(2, 0), y.repeat_interleave(2, 0)
    seeds = sample_seeds((0, "t"), [10, 11], ratios)
    final, l2, energy, scored = trace_fud(imputer, tiny_cnn, xs, ys, masks.flatten(0, 1), seeds, batch_size=3)
    return dict(
        imputer=imputer,
        x=xs,
        masks=masks.flatten(0, 1),
        final=final,
        l2=l2,
        energy=energy,
        scored=scored,
        ratios=ratios,
        seeds=seeds,
        y=ys,
    )


def test_keep_masks_keep_the_requested_fraction():
    masks = keep_masks(torch.rand(3, 3, 10, 10), [0.1, 0.5], "abs_sum", [0, 1, 2])
    assert masks.shape == (3, 2, 1, 10, 10)
    assert masks[:, 0].sum((1, 2, 3)).tolist() == [10, 10, 10]
    assert masks[:, 1].sum((1, 2, 3)).tolist() == [50, 50, 50]


def test_trace_shapes_and_final_distance(traced):
    n_steps = len(traced["imputer"].timesteps)
    assert traced["l2"].shape == (4, n_steps + 1) and traced["energy"].shape == (4, n_steps)
    assert np.isfinite(traced["energy"]).all()
    # the last traced distance is the final sample's distance to the original
    final_l2 = (traced["final"] - traced["x"]).flatten(1).norm(dim=1).numpy()
    np.testing.assert_allclose(traced["l2"][:, -1], final_l2, atol=1e-4)
    # kept pixels are the original's exactly
    m = traced["masks"].bool().expand_as(traced["x"])
    assert torch.equal(traced["final"][m], traced["x"][m])


def test_trace_batches_do_not_change_samples(traced, tiny_cnn):
    from fudbench.imputers.base import ImputeContext

    out, _ = traced["imputer"].sample(
        traced["x"][1:2], traced["masks"][1:2], ImputeContext(tiny_cnn, traced["y"][1:2], traced["seeds"][1:2])
    )
    torch.testing.assert_close(out, traced["final"][1:2], atol=1e-5, rtol=0)


def test_frame_layout_and_aurocs(traced):
    timesteps = traced["imputer"].timesteps
    frame = diagnostics_frame(
        "cnn", 0.5, traced["ratios"], [10, 11], timesteps, traced["l2"], traced["energy"], traced["scored"]
    )
    n_steps = len(timesteps) + 1
    assert len(frame) == 4 * n_steps
    assert frame["energy"].isna().sum() == 4  # x_T has no estimate
    row = frame[(frame.image == 11) & (frame.kept == 0.75) & (frame.step == n_steps - 1)]
    assert row["l2"].item() == pytest.approx(traced["l2"][3, -1])
    clean = pd.Series([frame["energy"].min() - 1.0] * 3)  # clean energies lower than every sample
    auc = auroc_by_step(frame, clean)
    assert len(auc) == 2 * len(timesteps) and (auc["auroc"] == 1.0).all()
    fl = final_l2(frame)
    assert list(fl["kept"]) == [0.25, 0.75] and (fl["count"] == 2).all()


def test_figures_and_timing_table(traced):
    from fudbench.report.diagnostics import fig3_auroc_by_step, fig5_l2_by_step, fig6_final_l2, table10_timing

    timesteps = traced["imputer"].timesteps
    frame = diagnostics_frame(
        "cnn", 0.5, traced["ratios"], [10, 11], timesteps, traced["l2"], traced["energy"], traced["scored"]
    )
    traces = pd.concat(
        [frame.assign(run="main"), frame.assign(run="sweep"), frame.assign(run="sweep", guidance_start=0.0)]
    )
    clean = {"cnn": pd.Series(np.linspace(-3, 0, 5))}
    for fig in (
        fig3_auroc_by_step(traces, clean, ["cnn"], 0.5, 100),
        fig5_l2_by_step(traces, ["cnn"], 0.75),
        fig6_final_l2(traces, ["cnn"]),
    ):
        assert fig.axes
    timings = pd.DataFrame(
        {
            "steps": [10, 10, 20, 20],
            "image": [0, 1, 0, 1],
            "seconds": [1.0, 1.2, 2.0, 2.4],
            "n_ratios": 9,
            "device": "CPU",
        }
    )
    summary, tex = table10_timing(timings, "CPU")
    assert summary["mean"].tolist() == pytest.approx([1.1, 2.2])
    assert "\\toprule" in tex and "CPU" in tex and "all 9 ratios" in tex and "s / image" in tex
    # issue 47: the workflow times one sample per fill (batch 1, the paper's Table 10), and says so
    summary, tex = table10_timing(timings.assign(n_ratios=1), "CPU")
    assert summary["mean"].tolist() == pytest.approx([1.1, 2.2])
    assert "batch 1, as the paper" in tex and "s / sample" in tex and "ratios of one image" not in tex
