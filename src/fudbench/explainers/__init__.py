"""Attribution methods behind one interface (fudbench.explainers.base.Explainer).

EXPLAINERS maps the names used in config to their classes; each class is built
with the config entry's settings as keyword arguments.
"""
from fudbench.registry import resolve

EXPLAINERS = {
    "sm": "fudbench.explainers.saliency:Saliency",
    "ig": "fudbench.explainers.integrated_gradients:IntegratedGradients",
}


def build_explainer(name: str, settings: dict):
    return resolve(EXPLAINERS, name, "explainer")(**settings)
