"""One list of noise-free fills for every evaluator (fudbench.imputers.registry.
DETERMINISTIC, asked through fudbench.evaluators.imputing.deterministic_fill): a
curve under such a fill sees only the map's ranking (CurveSpec.ranking_only),
whichever evaluator names the fill and under whichever alias."""

import pytest

from fudbench.evaluators import entry_curves
from fudbench.evaluators.imputing import deterministic_fill


@pytest.mark.parametrize(
    "settings,fill,expected",
    [
        ({}, "zero", True),
        ({}, "image_mean", True),
        ({}, "dataset_mean", True),
        ({}, "telea", True),
        ({}, "noisy_linear", False),
        ({}, "gaussian", False),
        ({}, "train_set", False),
        ({}, "diffusion_plain", False),
        ({"imputer_options": {"flat": {"method": "classifier_mean"}}}, "flat", True),  # an alias: its method decides
        ({"imputer_options": {"noise": {"method": "uniform"}}}, "noise", False),
        ({}, "plugins/my_fills.py:GreyFill", False),  # a plug-in: not known to be noise-free
    ],
)
def test_deterministic_fill(settings, fill, expected):
    assert deterministic_fill(settings, fill) is expected


def test_every_evaluator_asks_the_same_list():
    """IROF, Distill and Gevaert used to keep a list each: a fill is ranking-only in all
    of them or in none (Gevaert's `constant` is its alias of classifier_mean)."""

    def ranking_only(name, settings):
        return {c.name: c.ranking_only for c in entry_curves(name, settings)}

    assert ranking_only("irof", {"fill": "telea"}) == {"irof": True}
    assert ranking_only("irof", {"fill": "gaussian"}) == {"irof": False}
    assert ranking_only("distill", {"fills": ["blur", "uniform", "telea"]}) == {
        "distill__blur": True,
        "distill__uniform": False,
        "distill__telea": True,
    }
    gevaert = ranking_only("gevaert", {"fills": ["constant", "noise", "telea"], "insertion": False})
    assert gevaert == {"gevaert_del__constant": True, "gevaert_del__noise": False, "gevaert_del__telea": True}
