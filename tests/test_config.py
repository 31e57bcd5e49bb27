import copy

import pytest

from fudbench.config import ConfigError, load_config, load_yaml, validate_config


@pytest.fixture
def default(repo):
    return load_yaml(repo / "config/config.yaml")


def _check(cfg, repo):
    return validate_config(cfg, repo / "config/schema.yaml")


@pytest.mark.parametrize("name", ["config.yaml", "smoke.yaml"])
def test_shipped_configs_are_valid(repo, name):
    load_config(repo / "config" / name)


def test_enum_error_names_key_and_allowed_values(default, repo):
    default["evaluators"]["fud"]["known"] = "dirty"
    with pytest.raises(ConfigError, match=r"evaluators\.fud\.known.*'dirty'.*allowed values: 'clean', 'renoise'"):
        _check(default, repo)


def test_unknown_key_is_an_error(default, repo):
    default["evaluators"]["fud"]["stepz"] = 10
    with pytest.raises(ConfigError, match=r"evaluators\.fud.*unknown key.*'stepz'.*allowed keys"):
        _check(default, repo)


def test_unknown_explainer_lists_registered(default, repo):
    default["explainers"]["gradcam"] = {}
    with pytest.raises(ConfigError, match=r"explainers\.gradcam.*unknown explainer.*registered: agi, attexplore, big, degrade, eg, fig, gig, ig, isa, la, mfaba, oracle, random, sm"):
        _check(default, repo)


@pytest.mark.parametrize("ratios,match", [([0.5, 0.3], "strictly increasing"), ([0.0, 0.5], "ratios"),
                                          ([0.5, 1.0], "ratios")])
def test_bad_ratios(default, repo, ratios, match):
    default["evaluation"]["ratios"] = ratios
    with pytest.raises(ConfigError, match=match):
        _check(default, repo)


def test_shard_size_zero_and_n_eval_too_large(default, repo):
    bad = copy.deepcopy(default)
    bad["data"]["shard_size"] = 0
    with pytest.raises(ConfigError, match=r"data\.shard_size"):
        _check(bad, repo)
    default["data"]["n_eval"] = 10_000
    with pytest.raises(ConfigError, match=r"data\.n_eval.*exceeds"):
        _check(default, repo)


def test_pooled_explainers_must_be_configured_explainers(default, repo):
    default["analysis"]["pooled_explainers"] = ["ig", "gradcam"]
    with pytest.raises(ConfigError, match=r"analysis\.pooled_explainers.*\['gradcam'\] not in explainers"):
        _check(default, repo)
    default["analysis"]["pooled_explainers"] = None  # every explainer
    _check(default, repo)
