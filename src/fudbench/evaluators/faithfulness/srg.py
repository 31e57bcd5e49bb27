"""`srg`: SRG / R-OMS superpixel pixel flipping (Bluecher et al., seeds/002).

One MIF / LIF / R-OMS triple of curves per configured imputer
(srg_<kind>__<imputer>; areas over the occluded superpixel fraction: MIF lower,
LIF higher, R-OMS higher = a more reliable occlusion), and the relevance gains
derived from them: MRG = R-OMS - MIF, LRG = LIF - R-OMS, SRG = LIF - MIF (0 for
a random explainer; Table srg_scores). R-OMS does not depend on the explainer:
with assets["srg_reference"] (rule srg_reference) it is read from there and
only MIF and LIF are computed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fudbench.core.auc import auc_removed
from fudbench.evaluators.base import OWN_SETTING, PROBABILITY_AREA, CurveSpec, EvaluatorSpec
from fudbench.evaluators.imputing import IMPUTER_OPTIONS_SCHEMA, build_imputers, imputer_assets, imputer_problems
from fudbench.core.settings import Settings, setting

KINDS = ("mif", "lif", "roms")
GAINS = ("mrg", "lrg", "srg")


@dataclass(frozen=True)
class SRGSettings(Settings):
    segmentation: Literal["slic", "squares"] = setting("slic")
    n_segments: int = setting(16, minimum=1, description="SLIC's target number of superpixels (it may produce fewer)")
    compactness: float = setting(
        10.0, exclusiveMinimum=0, description="SLIC compactness (scikit-image default 10; seeds/002: 1 at 224 px)"
    )
    square_side: int = setting(8, minimum=1, description="side of the square superpixels (segmentation squares)")
    n_steps: int = setting(15, minimum=1, description="occlusion steps n = {0, round(geomspace(1, K, n_steps)), K}")
    n_imputations: int = setting(3, minimum=1, description="fills averaged per point for stochastic imputers")
    n_random: int = setting(8, minimum=1, description="random orderings averaged into R-OMS")
    reduction: Literal["abs_sum", "sum", "max_abs", "l2"] = setting(
        "sum", description="per-pixel relevance before the superpixel mean (sum = signed)"
    )
    imputers: list[str] = setting(
        default_factory=lambda: ["telea", "mean"],
        minItems=1,
        uniqueItems=True,
        description="imputer names (or aliases in imputer_options)",
    )
    imputer_options: dict = setting(default_factory=dict, schema=IMPUTER_OPTIONS_SCHEMA)
    batch_size: int = setting(128, minimum=1)

    def problems(self, key: str) -> list[str]:
        return imputer_problems(self.imputers, self.imputer_options, f"{key}.imputers")


def curve_name(kind: str, imputer: str) -> str:
    return f"srg_{kind}__{imputer}"


def curves(settings: dict) -> list[CurveSpec]:
    out = []
    for imp in settings["imputers"]:
        out += [
            CurveSpec(curve_name("mif", imp), f"MIF ({imp})", False, auc_removed, value_range=PROBABILITY_AREA),
            CurveSpec(curve_name("lif", imp), f"LIF ({imp})", True, auc_removed, value_range=PROBABILITY_AREA),
            CurveSpec(
                curve_name("roms", imp),
                f"R-OMS ({imp})",
                True,
                auc_removed,
                value_range=PROBABILITY_AREA,
                reference=True,
            ),
        ]
    return out


def gain_curves(settings: dict) -> list[CurveSpec]:
    return [
        CurveSpec(f"{gain}__{imp}", f"{gain.upper()} ({imp})", True, table="srg_scores")
        for imp in settings["imputers"]
        for gain in GAINS
    ]


def catalogue_variants() -> list[dict]:
    """The analysis knows the curves of every registered imputer."""
    from fudbench.imputers.registry import IMPUTERS

    return [{"imputers": list(IMPUTERS)}]


def relevance_gains(per_image):
    """MRG, LRG, SRG per (model, explainer, image, imputer) from the per-image
    AUCs of the srg_{mif,lif,roms}__<imputer> curves, in per_image's format."""
    import pandas as pd

    cols = ["model", "explainer", "curve", "image", "score"]
    parts = per_image["curve"].str.extract(r"^srg_(?P<kind>mif|lif|roms)__(?P<imputer>.+)$")
    d = per_image.assign(kind=parts["kind"], imputer=parts["imputer"]).dropna(subset=["kind"])
    if d.empty:
        return pd.DataFrame(columns=cols)
    wide = d.pivot_table(
        index=["model", "explainer", "imputer", "image"], columns="kind", values="score", aggfunc="first"
    )
    if not set(KINDS) <= set(wide.columns):
        return pd.DataFrame(columns=cols)
    wide = wide.dropna(subset=list(KINDS)).reset_index()
    gains = {"mrg": wide["roms"] - wide["mif"], "lrg": wide["lif"] - wide["roms"], "srg": wide["lif"] - wide["mif"]}
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "model": wide["model"],
                    "explainer": wide["explainer"],
                    "curve": name + "__" + wide["imputer"],
                    "image": wide["image"],
                    "score": v,
                }
            )
            for name, v in gains.items()
        ],
        ignore_index=True,
    )[cols]


def srg_curves(settings: dict, assets: dict, device, kinds=KINDS) -> list:
    """[(SRG protocol, imputer)] per configured imputer, computing the curves `kinds`."""
    from fudbench.protocols.faithfulness.srg import SRG

    names = list(settings["imputers"])
    if len(set(names)) != len(names):
        raise ValueError(f"config key 'evaluators.srg.imputers': {names} names an imputer twice")
    protocol_settings = {
        k: settings[k]
        for k in (
            "segmentation",
            "n_segments",
            "compactness",
            "square_side",
            "n_steps",
            "n_imputations",
            "n_random",
            "reduction",
            "batch_size",
        )
    }
    return [
        (SRG(imputer_name=name, kinds=kinds, **protocol_settings), imputer)
        for name, imputer in zip(names, build_imputers(settings, names, assets, device))
    ]


def build(settings: dict, evaluation: dict, assets: dict, device):
    """With assets["srg_reference"] (R-OMS records of this model and shard, rule
    srg_reference) only MIF and LIF are computed here and R-OMS is replayed."""
    from fudbench.evaluators.base import Evaluator

    reference = (assets or {}).get("srg_reference")
    if not reference:
        return Evaluator("srg", srg_curves(settings, assets, device))
    import pandas as pd

    from fudbench.protocols.faithfulness.stored import StoredCurve

    stored = pd.read_parquet(reference)
    pairs = []
    for protocol, imputer in srg_curves(settings, assets, device, kinds=("mif", "lif")):
        pairs += [
            (protocol, imputer),
            (StoredCurve(curve_name("roms", protocol.imputer_name), stored, reference), None),
        ]
    return Evaluator("srg", pairs)


SPEC = EvaluatorSpec(
    "srg",
    __doc__.splitlines()[0],
    SRGSettings,
    curves,
    f"{__name__}:build",
    assets=lambda s: imputer_assets(s, s["imputers"]) | {"srg_reference"},
    optional_assets=frozenset({"srg_reference"}),  # without it, R-OMS is computed in the job
    catalogue_variants=catalogue_variants,
    derived=lambda records, per_image: relevance_gains(per_image),
    derived_curves=gain_curves,
    quick={"segmentation": "squares", "square_side": 4, "n_steps": 4, "n_imputations": 1, "n_random": 2},
    reduction=OWN_SETTING,
)
