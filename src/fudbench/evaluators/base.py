"""What an evaluator is: a torch-free spec, and the runtime it builds.

An `EvaluatorSpec` (one per module of this package) says, without importing
torch: its name, its settings dataclass (defaults and constraints, the one
declaration the config is validated from), the assets a configured entry
needs, and the curves it writes (`CurveSpec`: label, score direction,
per-image score, whether it keeps intermediate samples, which tables show
it). Its `build` ("module:function", imported only when called) returns an
`Evaluator`: a list of (protocol, imputer) curves run on one batch of images.

Config entries may alias a method, as explainers do:
`road_telea: {method: road, imputer: telea}` runs ROAD a second time; its
curves are named `<curve>@road_telea` (label `<label> [road_telea]`) so that
they do not collide with the plain entry's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Optional, Union

from fudbench.core.settings import settings_schema, with_defaults

ALIAS_SEPARATOR = "@"
# EvaluatorSpec.reduction: the config's evaluation.reduction, or a `reduction` setting of the evaluator's own
FOLLOWS_EVALUATION, OWN_SETTING = "evaluation.reduction", "setting"
# Value ranges of per-image scores: an area under a probability curve, a correlation or difference of areas.
PROBABILITY_AREA, CORRELATION = (0.0, 1.0), (-1.0, 1.0)
NON_NEGATIVE = (0.0, float("inf"))
# EvaluatorSpec.reduction of the metrics that read the map's magnitudes only (complexity, MPRT)
MAGNITUDES = "abs_sum: |map| summed over channels (magnitudes only, as Quantus' abs=True)"

# Table groups of intermediate samples: the main evaluators' (Tables 2, 3, 8)
# and the appendix protocols' (Tables 9, 11, with FUD as the reference row).
MAIN_SAMPLES, APPENDIX_SAMPLES = "main", "appendix"

# What kind of property a metric measures (Quantus's grouping). It decides how the report reads a score:
# faithfulness against the random map, localisation against the mask itself as its ceiling, robustness and
# complexity against the trivial maps that win them, randomisation as a pass/fail sanity check.
FAITHFULNESS, LOCALISATION, ROBUSTNESS, RANDOMISATION, COMPLEXITY = (
    "faithfulness",
    "localisation",
    "robustness",
    "randomisation",
    "complexity",
)
CATEGORIES = (FAITHFULNESS, LOCALISATION, ROBUSTNESS, RANDOMISATION, COMPLEXITY)


@dataclass(frozen=True)
class CurveSpec:
    name: str  # the records' `curve` value
    label: str  # its name in the tables
    higher_is_better: bool
    score: Optional[Callable] = None  # records of one image -> its score (None: no per-image score)
    table: Optional[str] = None  # the score table showing it (table7_scores, srg_scores ...)
    keeps_samples: bool = False  # writes its intermediate samples (N, steps, C, H, W)
    samples_label: Optional[str] = None  # row label in the OOD / quality tables of those samples
    samples_tables: tuple[str, ...] = ()  # MAIN_SAMPLES and/or APPENDIX_SAMPLES
    step_value: Optional[str] = None  # per-step column a micro (per-step) comparison ranks
    tau: bool = False  # Kendall tau of its removal sequence (Table 4)
    # its score is an area under the curve over the evaluation ratios (kept rho or removed 1 - rho): it needs
    # at least two distinct ratios (checked up front by fudbench.evaluate; the config asks for two anyway)
    auc_over_ratios: bool = False
    # the values its per-image score can take (the sanity checks hold the tables to it)
    value_range: tuple[float, float] = CORRELATION
    # the score sees only the pixel ranking of the map and fills deterministically: a map and its p = 0
    # degraded copy (the same ranking, rescaled) score the same (sanity.run_consistency checks it)
    ranking_only: bool = False
    # its score does not depend on the map: a baseline the other curves are read against (SRG's random-order
    # R-OMS); the direction checks expect it equal across maps
    reference: bool = False
    # one phrase for table captions: what the score is and its direction (score tables built from the config)
    caption: Optional[str] = None

    def aliased(self, entry: str) -> "CurveSpec":
        """This curve as written by the config entry `entry` aliasing its method."""
        return dataclasses.replace(
            self,
            name=f"{self.name}{ALIAS_SEPARATOR}{entry}",
            label=f"{self.label} [{entry}]",
            samples_label=None if self.samples_label is None else f"{self.samples_label} [{entry}]",
        )


@dataclass(frozen=True)
class EvaluatorSpec:
    name: str
    description: str
    settings: type  # dataclass: defaults and constraints
    curves: Callable[[dict], list]  # settings -> [CurveSpec] it writes
    build: str  # "module:function"(settings, evaluation, assets, device)
    assets: Callable[[dict], set] = field(default=lambda settings: set())  # asset keys it reads
    # curve spellings the analysis should know although no default setting produces them
    # (e.g. SRG curves of every registered imputer): settings variants to list curves for
    catalogue_variants: Callable[[], list] = field(default=lambda: [{}])
    # scores computed from several curves of an image: (records, per_image) -> rows in per_image's format,
    # and the CurveSpecs (labels, directions, tables) of those rows
    derived: Optional[Callable] = None
    derived_curves: Callable[[dict], list] = field(default=lambda settings: [])
    # of its assets, the ones its build works without (fudbench.evaluate does not ask for them)
    optional_assets: frozenset = frozenset()
    # How it turns a (C, H, W) map into the per-pixel values it ranks or sums: FOLLOWS_EVALUATION
    # (the config's evaluation.reduction, shared by the top-k metrics so that they rank the same pixels),
    # OWN_SETTING (a `reduction` setting of its own, e.g. SRG's signed sum before superpixel means),
    # or a phrase saying what the method fixes (e.g. "signed sum over channels (Ancona et al.)")
    reduction: str = FOLLOWS_EVALUATION
    # settings over the defaults that make it run in about a second on a tiny model (a few steps,
    # draws, subsets): the registry's generic tests (tests/test_evaluator_registry.py) run every
    # evaluator with them, so a new evaluator is tested without a hand-written test list
    quick: dict = field(default_factory=dict)
    # It reads the images' ground-truth object masks (a localisation metric): True, or settings -> bool.
    # Then the evaluate job hands it the masks of the shard's images (the eval npz, as the `oracle`
    # explainer gets them), fudbench.evaluate asks for `masks=`, and a config whose data has none
    # (ImageNet, a folder without data.folder.masks) is refused when it is parsed, naming the entry.
    needs_masks: Union[bool, Callable[[dict], bool]] = False
    # Its cost for fudbench.workflow.cost's estimate before a run: (settings, evaluation) -> a dict of
    # fudbench.workflow.cost.Passes' fields (classifier `forwards` per image and explainer, `shared` per image,
    # `unet_steps`, `weight`, `note`). None: the estimate lists the entry as unknown. The registered
    # evaluators' counts are in fudbench.workflow.cost.BUILTIN_PASSES.
    cost: Optional[Callable[[dict, dict], object]] = None
    # The kind of property it measures (CATEGORIES), or settings -> one (the quantus entry: its metric's).
    category: Union[str, Callable[[dict], str]] = FAITHFULNESS
    # It calls the explainer again on inputs it makes (robustness, randomisation): True, or settings -> bool.
    # Then the evaluate job builds the entry's explainer from its config entry and hands it over.
    needs_explainer: Union[bool, Callable[[dict], bool]] = False

    def category_of(self, resolved: dict) -> str:
        """The category of an entry with these (resolved) settings."""
        return self.category(resolved) if callable(self.category) else self.category

    def explainer_needed(self, resolved: dict) -> bool:
        """Whether an entry with these (resolved) settings calls the explainer again."""
        return bool(self.needs_explainer(resolved) if callable(self.needs_explainer) else self.needs_explainer)

    def masks_needed(self, resolved: dict) -> bool:
        """Whether an entry with these (resolved) settings reads ground-truth masks."""
        return bool(self.needs_masks(resolved) if callable(self.needs_masks) else self.needs_masks)

    def resolve(self, settings: Optional[dict]) -> dict:
        """The entry's settings over the defaults (`method` dropped)."""
        resolved = with_defaults(self.settings, settings)
        resolved.pop("method", None)
        return resolved

    def schema(self) -> dict:
        return settings_schema(self.settings, extra={"method": {"type": "string"}}, description=self.description)

    def check(self, settings: dict, key: str) -> list[str]:
        """Problems the schema cannot express (Settings.problems), each naming the config key."""
        return self.settings(**self.resolve(settings)).problems(key)


@dataclass
class Evaluator:
    """An evaluator ready to run: (protocol, imputer) pairs, one per curve family."""

    name: str
    curves: list  # [(protocol, imputer)]
    alias: Optional[str] = None  # config entry name when it aliases a method: curves get @alias
    reads_masks: bool = False  # its spec declares needs_masks (build_evaluator sets it)
    reads_explainer: bool = False  # its spec declares needs_explainer (build_evaluator sets it)

    @property
    def needs_masks(self) -> bool:
        """Its spec declares that it reads the images' ground-truth masks, or one of its protocols does
        (Protocol.needs_masks: those protocols get them)."""
        return self.reads_masks or any(getattr(protocol, "needs_masks", False) for protocol, _ in self.curves)

    @property
    def needs_explainer(self) -> bool:
        """Its spec declares that it explains again, or one of its protocols does (Protocol.needs_explainer)."""
        return self.reads_explainer or any(getattr(p, "needs_explainer", False) for p, _ in self.curves)

    def run(self, model, x, y, attribution, image_ids, seed_key: tuple, masks=None, explainer=None):
        """Returns (records DataFrame with a 'curve' column, {curve: samples}).
        masks: (N, H, W) ground-truth object masks of the images, in the images'
        order (non-zero = object), for the protocols that declare needs_masks; the
        others do not get them (as explainers without uses_masks).
        explainer: the maps' explainer (fudbench.explainers.again.ExplainAgain), for the protocols that
        declare needs_explainer; the caller checks first that it reproduces the maps (evaluate_maps)."""
        import pandas as pd

        from fudbench.core.checks import check_inputs, check_masks

        who = f"evaluator {self.alias or self.name}"
        check_inputs(who, x, y, attribution, image_ids)
        if self.needs_masks:
            if masks is None:
                raise ValueError(
                    f"{who} reads the images' ground-truth object masks, and none were given: in the "
                    f"workflow give data with masks (data.source: synthetic, or data.folder.masks); "
                    f"from Python pass fudbench.evaluate(..., masks=...)"
                )
            masks = check_masks(masks, x, who)
        if self.needs_explainer and explainer is None:
            raise ValueError(
                f"{who} explains again (robustness, randomisation) and was given no explainer: in the "
                f"workflow the evaluate job builds it from the explainer's entry; from Python pass "
                f"fudbench.evaluate(..., explainer=<registered name, {{name: settings}} or an Explainer>)"
            )
        frames, samples = [], {}
        for protocol, imputer in self.curves:
            kwargs = {"masks": masks} if getattr(protocol, "needs_masks", False) else {}
            if getattr(protocol, "needs_explainer", False):
                kwargs["explainer"] = explainer
            res = protocol.run(model, x, y, attribution, imputer, image_ids, (*seed_key, protocol.curve), **kwargs)
            frames.append(res.records)
            if res.samples is not None:
                samples[protocol.curve] = res.samples
                samples[f"removed_{protocol.curve}"] = removed_per_step(res.records, protocol.curve)
        records = pd.concat(frames, ignore_index=True)
        if self.alias:
            suffix = f"{ALIAS_SEPARATOR}{self.alias}"
            records["curve"] = records["curve"] + suffix
            samples = {
                (f"removed_{k[len('removed_') :]}{suffix}" if k.startswith("removed_") else f"{k}{suffix}"): v
                for k, v in samples.items()
            }
        return records, samples


def removed_per_step(records, curve: str):
    """The removed fraction at each step of a curve that keeps samples: (steps,)
    when every image removes the same fractions, else (N, steps) in the
    records' image order, NaN past an image's last step (regions of different
    sizes, a different number of steps per image)."""
    import numpy as np

    rows = records[records["curve"] == curve]
    table = rows.pivot(index="image", columns="step", values="removed").reindex(rows["image"].unique())
    removed = table.to_numpy(float)
    same = len(removed) and np.array_equal(removed, np.broadcast_to(removed[:1], removed.shape), equal_nan=True)
    return removed[0] if same else removed


def removal_fractions(ratios) -> list[float]:
    """Kept fractions rho -> the removal fractions 1 - rho, increasing."""
    return sorted(round(1 - r, 10) for r in ratios)
