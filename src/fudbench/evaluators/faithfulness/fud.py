"""`fud`: Faithfulness Under the Distribution (paper Algorithm 1).

Keep-top-rho curve: for each kept fraction rho the top rho of the pixels by
attribution are kept and the rest filled by the score model's inpainting
sampler with anti-class guidance (fudbench.imputers.diffusion, built by
`fud_sampler` from its parts' settings). Score (Table 7): per image the
normalised AUC of confidence over rho; higher is better. Its intermediate
samples are the reference rows of Tables 2-4, 8, 9 and 11.

Variants (docs/evaluators.md, "FUD variants"; the defaults are the paper's):
the sampler parts' options (known: renoise, guidance_schedule), the mask
units (granularity: whole patches or SLIC superpixels, ranked by their mean
score; fudbench.protocols.faithfulness.topk) and `symmetric`, which adds the curve
`fud_bottom` (keep the bottom rho, same sampler and noise) and the derived
per-image score `fud_symmetric` = AUC(fud) - AUC(fud_bottom) over the actual
kept fractions (higher is better; about 0 for a map no better than random).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fudbench.core.auc import auc_kept
from fudbench.evaluators.base import (
    ALIAS_SEPARATOR,
    APPENDIX_SAMPLES,
    MAIN_SAMPLES,
    PROBABILITY_AREA,
    CurveSpec,
    EvaluatorSpec,
)
from fudbench.imputers.diffusion.settings import (
    ConstraintSettings,
    GuidanceSettings,
    RuntimeSettings,
    StepSettings,
    jump_problems,
)
from fudbench.core.settings import setting

TOP, BOTTOM, SYMMETRIC = "fud", "fud_bottom", "fud_symmetric"
MASK_SETTINGS = ("granularity", "patch_size", "n_segments", "compactness")  # TopKCurve's fields of the same names


# The sampler parts' settings, flat under evaluators.fud, plus the mask and score options and the batch size.
@dataclass(frozen=True)
class FUDSettings(StepSettings, GuidanceSettings, ConstraintSettings, RuntimeSettings):
    granularity: Literal["pixel", "patch", "slic"] = setting(
        "pixel",
        description="units kept whole: pixel (paper) | patch (squares of side patch_size) | slic "
        "(SLIC superpixels of the clean image); regions rank by their mean attribution",
    )
    patch_size: int = setting(
        4,
        minimum=1,
        description="granularity patch: side of the square patches in pixels (4 at 32 px: 64 patches of 16 pixels)",
    )
    n_segments: int = setting(
        64, minimum=1, description="granularity slic: SLIC's target number of superpixels (64 at 32 px gives 44-56)"
    )
    compactness: float = setting(10.0, exclusiveMinimum=0, description="granularity slic: SLIC compactness")
    symmetric: bool = setting(
        False,
        description="also keep the bottom rho (curve fud_bottom, same sampler and "
        "noise); score fud_symmetric = AUC(fud) - AUC(fud_bottom)",
    )
    batch_size: int = setting(
        64, minimum=1, description="largest batch of (image, ratio) masks; halved on GPU out-of-memory"
    )
    noise_draw: int = setting(
        0,
        minimum=0,
        description="0: the paired noise of the method (every fud entry draws the "
        "same fill noise); k > 0: an independent k-th draw, e.g. the "
        "compute-matched comparator 'paper FUD averaged over two "
        "draws' (pipeline.evaluator_noise)",
    )

    def problems(self, key: str) -> list[str]:
        return [
            p
            for part in (StepSettings, GuidanceSettings, ConstraintSettings, RuntimeSettings)
            for p in part.problems(self, key)
        ] + jump_problems(self.steps, self, key)


def curves(settings: dict) -> list[CurveSpec]:
    top = CurveSpec(
        TOP,
        "FUD",
        True,
        auc_kept,
        table="table7_scores",
        keeps_samples=True,
        samples_label="FUD",
        samples_tables=(MAIN_SAMPLES, APPENDIX_SAMPLES),
        step_value="confidence",
        tau=True,
        auc_over_ratios=True,
        value_range=PROBABILITY_AREA,
    )
    if not settings["symmetric"]:
        return [top]
    return [
        top,
        CurveSpec(
            BOTTOM,
            "FUD bottom",
            False,
            auc_kept,
            step_value="confidence",
            auc_over_ratios=True,
            value_range=PROBABILITY_AREA,
        ),
    ]


def symmetric_curves(settings: dict) -> list[CurveSpec]:
    """The derived score of a symmetric entry. It has no records of its own: its score function reads an
    image's rows of both curves (symmetric_scores groups them); it is a score, so the meta-evaluation can
    name it (analysis.meta_metrics); appendix_scores shows it, Table 7 keeps the paper's columns."""
    if not settings["symmetric"]:
        return []
    return [
        CurveSpec(
            SYMMETRIC,
            "FUD symmetric",
            True,
            symmetric_score,
            table="appendix_scores",
            caption="FUD symmetric (keep-top minus keep-bottom area, higher better)",
        )
    ]


def _base(curve: str) -> str:
    return curve.partition(ALIAS_SEPARATOR)[0]


def symmetric_score(rows) -> float:
    """Per image: AUC of confidence over the kept fraction of the top curve
    minus that of the bottom curve; rows: the image's records of both (an
    entry's `fud[@entry]` and `fud_bottom[@entry]`)."""
    base = rows["curve"].map(_base)
    return auc_kept(rows[base == TOP]) - auc_kept(rows[base == BOTTOM])


def symmetric_scores(records):
    """Per (model, explainer, image) of every entry that wrote a bottom curve:
    the score `fud_symmetric[@entry]` (per_image format)."""
    import pandas as pd

    cols = ["model", "explainer", "curve", "image", "score"]
    parts = records["curve"].str.partition(ALIAS_SEPARATOR)
    d = records.assign(base=parts[0], suffix=parts[1] + parts[2])
    d = d[d["suffix"].isin(set(d.loc[d["base"] == BOTTOM, "suffix"])) & d["base"].isin((TOP, BOTTOM))]
    rows = [
        {"model": m, "explainer": e, "curve": SYMMETRIC + suffix, "image": i, "score": symmetric_score(g)}
        for (m, e, suffix, i), g in d.groupby(["model", "explainer", "suffix", "image"], sort=True)
        if g["base"].nunique() == 2
    ]  # both curves of the image written
    # typed as per_image_scores' columns, so that an empty result leaves the concatenated dtypes alone
    return pd.DataFrame(rows, columns=cols).astype({"image": "int64", "score": "float64"})


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.imputers.diffusion import fud_sampler
    from fudbench.imputers.resolution import bridge_resolution
    from fudbench.models.score import load_score_model
    from fudbench.protocols import TopKCurve

    unet, schedule = load_score_model(assets["score_model"], device)
    own = {"batch_size", "symmetric", "noise_draw", *MASK_SETTINGS}  # the evaluator's; the rest are the sampler's
    sampler = fud_sampler(unet, schedule, {k: v for k, v in settings.items() if k not in own})
    imputer = bridge_resolution(sampler, unet)  # e.g. 224 px images, 256 px U-Net (paper profile)
    curve = TopKCurve(
        TOP,
        evaluation["ratios"],
        mode="keep",
        batch_size=settings["batch_size"],
        reduction=evaluation["reduction"],
        keep_samples=True,
        bottom_curve=BOTTOM if settings["symmetric"] else None,
        **{k: settings[k] for k in MASK_SETTINGS},
    )
    return Evaluator("fud", [(curve, imputer)])


SPEC = EvaluatorSpec(
    "fud",
    "FUD: keep-top-rho curve, anti-class-guided diffusion inpainting",
    FUDSettings,
    curves,
    f"{__name__}:build",
    assets=lambda s: {"score_model"},
    catalogue_variants=lambda: [{}, {"symmetric": True}],
    derived=lambda records, per_image: symmetric_scores(records),
    derived_curves=symmetric_curves,
    quick={"steps": 3, "batch_size": 16},
)
