"""`fud`: Faithfulness Under the Distribution (paper Algorithm 1).

Keep-top-rho curve: for each kept fraction rho the top rho of the pixels by
attribution are kept and the rest filled by the score model's inpainting
sampler with anti-class guidance (fudbench.imputers.diffusion, built by
`fud_sampler` from its parts' settings). Score (Table 7): per image the
normalised AUC of confidence over rho; higher is better. Its intermediate
samples are the reference rows of Tables 2-4, 8, 9 and 11.
"""
from __future__ import annotations

from dataclasses import dataclass

from fudbench.analysis.auc import auc_kept
from fudbench.evaluators.base import APPENDIX_SAMPLES, MAIN_SAMPLES, CurveSpec, EvaluatorSpec
from fudbench.imputers.diffusion.settings import ConstraintSettings, GuidanceSettings, RuntimeSettings, StepSettings
from fudbench.settings import setting


# The sampler parts' settings, flat under evaluators.fud, plus the batch size.
@dataclass(frozen=True)
class FUDSettings(StepSettings, GuidanceSettings, ConstraintSettings, RuntimeSettings):
    batch_size: int = setting(64, minimum=1, description="largest batch of (image, ratio) masks; halved on GPU "
                                                         "out-of-memory")

    def problems(self, key: str) -> list[str]:
        return [p for part in (StepSettings, GuidanceSettings, ConstraintSettings, RuntimeSettings)
                for p in part.problems(self, key)]


def curves(settings: dict) -> list[CurveSpec]:
    return [CurveSpec("fud", "FUD", True, auc_kept, table="table7_scores", keeps_samples=True, samples_label="FUD",
                      samples_tables=(MAIN_SAMPLES, APPENDIX_SAMPLES), step_value="confidence", tau=True)]


def build(settings: dict, evaluation: dict, assets: dict, device):
    from fudbench.evaluators.base import Evaluator
    from fudbench.imputers.diffusion import fud_sampler
    from fudbench.imputers.resolution import bridge_resolution
    from fudbench.models.score import load_score_model
    from fudbench.protocols import TopKCurve

    unet, schedule = load_score_model(assets["score_model"], device)
    sampler = fud_sampler(unet, schedule, {k: v for k, v in settings.items() if k != "batch_size"})
    imputer = bridge_resolution(sampler, unet)  # e.g. 224 px images, 256 px U-Net (paper profile)
    curve = TopKCurve("fud", evaluation["ratios"], mode="keep", batch_size=settings["batch_size"],
                      reduction=evaluation["reduction"], keep_samples=True)
    return Evaluator("fud", [(curve, imputer)])


SPEC = EvaluatorSpec("fud", "FUD: keep-top-rho curve, anti-class-guided diffusion inpainting", FUDSettings, curves,
                     f"{__name__}:build", assets=lambda s: {"score_model"})
