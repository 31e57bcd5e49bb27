"""A metric of your own (docs/your_own.md, "Your own fill or metric"): `top_mass`, a complexity metric.

    evaluators:
      top_mass: {method: "examples/your_own/my_metric.py:SPEC", fraction: 0.1}
    # or from Python: fudbench.evaluate(..., metrics={"top_mass": {"method": "examples/your_own/my_metric.py:SPEC"}})

Per image: the share of the map's mass that lies in its top `fraction` of pixels. The map is reduced to
one value per pixel (the config's evaluation.reduction, default abs_sum), taken in absolute value, and
the k = ceil(fraction x H x W) largest values are summed over the total. Higher = the map puts its
mass on fewer pixels (sparser, less complex). Values in [k / (H x W), 1]: a constant map scores the
floor k / (H x W) (about `fraction`), a map with a single non-zero pixel 1, a map of uniform noise
about 0.19 at fraction 0.1 (the top tenth of U(0, 1) averages 0.95 against 0.5 overall); an
all-zero map has no mass (NaN, left out of the means). Like every complexity metric it says
nothing about faithfulness (a one-pixel map wins it): read it beside a faithfulness metric.

The recipe of docs/architecture.md ("How to add a metric"), in one file: a settings dataclass (the
config is validated from it when the Snakefile is parsed), the curves it writes (CurveSpec:
direction, per-image score, value range, table), a protocol (what one shard's records are), `build`,
its cost for the estimate before a run, and SPEC with its category. Two more declarations exist for
other kinds of metric: `needs_masks=True` (it reads the images' ground-truth masks: a localisation
metric such as `rma`) and `needs_explainer=True` (it calls the explainer again on inputs it makes: a
robustness or randomisation metric).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from fudbench.core.auc import mean_of
from fudbench.core.settings import Settings, setting
from fudbench.evaluators.base import COMPLEXITY, CurveSpec, EvaluatorSpec


@dataclass(frozen=True)
class TopMassSettings(Settings):
    fraction: float = setting(
        0.1, exclusiveMinimum=0, exclusiveMaximum=1, description="share of the pixels whose mass is counted"
    )
    batch_size: int = setting(64, minimum=1, description="clean images per classifier forward (the records)")


def top_mass(attribution, fraction: float, reduction: str) -> np.ndarray:
    """(N,) share of each map's |per-pixel value| in its ceil(fraction x H x W) largest pixels; NaN
    where a map has no mass."""
    import torch

    from fudbench.core.masks import reduce_attribution

    values = torch.nan_to_num(reduce_attribution(attribution, reduction).double().abs().flatten(1))
    k = max(1, math.ceil(fraction * values.shape[1]))
    top = values.topk(k, dim=1).values.sum(1)
    total = values.sum(1)
    return torch.where(total > 0, top / total.clamp(min=1e-300), torch.nan).cpu().numpy()


def curves(settings: dict) -> list[CurveSpec]:
    percent = f"{100 * settings['fraction']:g}%"
    return [
        CurveSpec(
            "top_mass",
            f"Top-{percent} mass",
            True,  # sparser maps score higher
            mean_of("top_mass"),
            table="appendix_scores",
            value_range=(0.0, 1.0),
            caption=f"share of the map's mass in its top {percent} of pixels (complexity: higher = sparser)",
        )
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    """The runtime: imported only when a job or fudbench.evaluate builds the entry (the spec above
    stays torch-free, so the Snakefile can read it at parse time)."""
    from fudbench.evaluators.base import Evaluator
    from fudbench.protocols.base import CurveResult, Protocol

    @dataclass
    class TopMass(Protocol):
        curve: str = "top_mass"
        fraction: float = 0.1
        reduction: str = "abs_sum"
        batch_size: int = 64

        def evaluate(self, shard, attribution) -> CurveResult:
            t0 = time.perf_counter()
            share = top_mass(attribution, self.fraction, self.reduction)

            # one record per image with the clean image's response (the columns every protocol records)
            return self.clean_records(shard, t0, top_mass=share)

    protocol = TopMass(
        fraction=settings["fraction"], reduction=evaluation["reduction"], batch_size=settings["batch_size"]
    )
    return Evaluator("top_mass", [(protocol, None)])  # no pixel is removed: no imputer


def cost(settings: dict, evaluation: dict) -> dict:
    """Passes per image and explainer for the estimate before a run (fudbench.workflow.cost.Passes)."""
    return {"forwards": 1, "note": "1 forward per explainer (the share itself is a sort of the map)"}


SPEC = EvaluatorSpec(
    "top_mass",
    "share of the map's mass in its top fraction of pixels (complexity)",
    TopMassSettings,
    curves,
    f"{__file__}:build",
    cost=cost,
    category=COMPLEXITY,
)
