"""Attribution methods behind one interface (fudbench.explainers.base.Explainer).

EXPLAINERS maps method names to their classes; each class is built with the
config entry's settings as keyword arguments. A config entry is named after
its method, or carries `method: <name>` to run one method under several names
(e.g. `ig_noise20: {method: degrade, base: ig, fraction: 0.2}` or
`ig_r50: {method: randomise_model, base: ig, fraction: 0.5}`).

WRAPPERS are the methods that run another registered method, their `base`
(with its `base_settings`); the config validates those as the base's own entry.
MASK_METHODS need the ground-truth object masks (synthetic benchmark only).

Floor 2: imports fudbench.core, fudbench.data and fudbench.models.
"""

from fudbench.core.registry import resolve

EXPLAINERS = {
    "agi": "fudbench.explainers.agi:AGI",
    "attexplore": "fudbench.explainers.attexplore:AttExplore",
    "big": "fudbench.explainers.boundary_ig:BoundaryIG",
    "eg": "fudbench.explainers.expected_gradients:ExpectedGradients",
    "fig": "fudbench.explainers.fast_ig:FastIG",
    "gig": "fudbench.explainers.guided_ig:GuidedIG",
    "ig": "fudbench.explainers.integrated_gradients:IntegratedGradients",
    "isa": "fudbench.explainers.isa:ISA",
    "la": "fudbench.explainers.local_attribution:LocalAttribution",
    "mfaba": "fudbench.explainers.mfaba:MFABA",
    "sm": "fudbench.explainers.saliency:Saliency",
    "random": "fudbench.explainers.controlled:RandomExplainer",
    "oracle": "fudbench.explainers.controlled:OracleExplainer",
    "background": "fudbench.explainers.controlled:BackgroundExplainer",
    "degrade": "fudbench.explainers.controlled:Degrade",
    "randomise_model": "fudbench.explainers.controlled:RandomiseModel",
    "random_smooth": "fudbench.explainers.controlled:RandomSmooth",
    "reorder": "fudbench.explainers.controlled:Reorder",
    "translate": "fudbench.explainers.controlled:Translate",
    "block_shuffle": "fudbench.explainers.controlled:BlockShuffle",
    "displace": "fudbench.explainers.controlled:Displace",
    "graded_cue": "fudbench.explainers.graded:GradedCue",
    "graded_cue_opposing": "fudbench.explainers.graded:GradedCueOpposing",
    "captum": "fudbench.explainers.captum_attr:CaptumAttribution",
    "cam": "fudbench.explainers.cam:CAM",
    "lrp": "fudbench.explainers.lrp:LRP",
}

WRAPPERS = (
    "degrade",
    "randomise_model",
    "reorder",
    "translate",
    "block_shuffle",
    "displace",
    "graded_cue",
    "graded_cue_opposing",
)
MASK_METHODS = ("oracle", "background")


def method_of(name: str, settings: dict) -> str:
    """The registered method behind a config entry."""
    return settings.get("method", name)


def build_explainer(name: str, settings: dict, base=None):
    """The explainer of a config entry, its settings over the declared defaults
    (fudbench.explainers.settings); unknown settings raise naming the allowed ones.
    A method given by import path is a plug-in (fudbench.explainers.plugin);
    `base` anchors its relative file path."""
    from fudbench.explainers.settings import SETTINGS
    from fudbench.core.settings import with_defaults

    method = method_of(name, settings)
    cls = resolve(EXPLAINERS, method, "explainer", base)
    if method not in EXPLAINERS:
        from fudbench.explainers.plugin import plugin_explainer

        return plugin_explainer(name, cls, {k: v for k, v in settings.items() if k != "method"}, method, base)
    try:
        kwargs = with_defaults(SETTINGS[method], {k: v for k, v in settings.items() if k != "method"})
    except ValueError as exc:
        raise ValueError(f"explainer {name!r} ({method}): {exc}") from None
    return cls(**kwargs)
