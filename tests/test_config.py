import copy
import re

import pytest

from fudbench.config.validate import ConfigError, load_config, load_yaml, validate_config
from fudbench.config.files import resolve_config
from fudbench.explainers import EXPLAINERS


@pytest.fixture
def default(repo):
    return load_yaml(repo / "config/config.yaml")


def _check(cfg, repo):
    return validate_config(cfg, repo / "config/schema.yaml")


@pytest.mark.parametrize("name", ["config.yaml", "smoke.yaml", "meta.yaml"])
def test_shipped_configs_are_valid(repo, name):
    load_config(repo / "config" / name)


def test_meta_profile_variants_differ_from_fud_in_their_option_only(repo):
    """config/meta.yaml's FUD variants take `fud`'s settings by `variant_of`:
    each must differ from it in the option it names (and symmetric) only."""
    evaluators = load_config(repo / "config/meta.yaml")["evaluators"]
    paper = evaluators["fud"]
    variants = {n: s for n, s in evaluators.items() if (s or {}).get("method") == "fud"}
    assert len(variants) >= 3
    for name, settings in variants.items():
        changed = {k for k in set(paper) | set(settings) if settings.get(k) != paper.get(k)}
        assert changed - {"method", "symmetric"} and len(changed - {"method", "symmetric", "patch_size"}) == 1, name


@pytest.mark.parametrize(
    "key,value,match",
    [
        ("meta_target_half_width", 0, r"analysis\.meta_target_half_width"),
        ("ood_reference", {"knn_k": 0}, r"analysis\.ood_reference\.knn_k.*minimum of 1"),
        ("ood_reference", {"imagez": 10}, r"analysis\.ood_reference.*imagez"),
    ],
)
def test_bad_meta_and_ood_settings(default, repo, key, value, match):
    default["analysis"][key] = value
    with pytest.raises(ConfigError, match=match):
        _check(default, repo)


def test_enum_error_names_key_and_allowed_values(default, repo):
    default["evaluators"]["fud"]["known"] = "dirty"
    with pytest.raises(
        ConfigError,
        match=r"evaluators\.fud\.known.*'dirty'.*allowed values: 'clean', 'renoise_ddim', "
        r"'renoise_fresh', 'renoise'",
    ):
        _check(default, repo)


def test_unknown_key_is_an_error(default, repo):
    default["evaluators"]["fud"]["stepz"] = 10
    with pytest.raises(ConfigError, match=r"evaluators\.fud.*unknown key.*'stepz'.*allowed keys"):
        _check(default, repo)


def test_unknown_explainer_lists_registered(default, repo):
    default["explainers"]["gradcam"] = {}
    with pytest.raises(
        ConfigError,
        # every registered explainer, in order (the family explainers of the studies too)
        match=r"explainers\.gradcam.*unknown explainer.*registered: " + re.escape(", ".join(sorted(EXPLAINERS))) + "$",
    ):
        _check(default, repo)


@pytest.mark.parametrize(
    "ratios,match", [([0.5, 0.3], "strictly increasing"), ([0.0, 0.5], "ratios"), ([0.5, 1.0], "ratios")]
)
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


@pytest.mark.parametrize("section", ["diagnostics", "timing"])
def test_diagnostics_and_timing_asking_for_more_images_than_shard_0_holds(default, repo, section):
    """Issue 26 case 6: n_images beyond shard 0 used to be capped silently by min(n, len(shard)),
    so Table 10 / Figs. 3, 5, 6 rested on fewer images than the config said."""
    default["data"]["shard_size"] = 4
    default["analysis"][section]["n_images"] = 50
    with pytest.raises(
        ConfigError,
        match=rf"config key 'analysis\.{section}\.n_images': 50 images requested, but "
        r"its rules read shard 0, which holds 4 \(data\.shard_size = 4, "
        r"data\.n_eval = 8\); lower analysis\.\w+\.n_images to 4",
    ):
        _check(default, repo)
    default["analysis"][section]["n_images"] = 4  # exactly the shard: fine
    default["analysis"]["diagnostics"]["n_images"] = min(default["analysis"]["diagnostics"]["n_images"], 4)
    _check(default, repo)


def test_a_config_without_fud_is_supported(repo):
    """Issue 26 case 8: without the evaluator `fud`, FUD's diagnostics and timing
    (Figs. 3, 5, 6, Tables 5 and 10) are left out of the DAG, and their analysis
    sections are not checked against the explainers and models."""
    from fudbench.config.validate import fud_diagnostics_on

    cfg = resolve_config([repo / "config/smoke.yaml"])
    assert fud_diagnostics_on(cfg)
    del cfg["evaluators"]["fud"]
    cfg["analysis"]["diagnostics"]["explainer"] = "gone"
    cfg["analysis"]["timing"]["model"] = "gone"
    assert not fud_diagnostics_on(cfg)
    _check(cfg, repo)
    cfg["evaluators"]["fud"] = {}  # with FUD they are checked again
    with pytest.raises(ConfigError, match=r"analysis\.diagnostics\.explainer': \['gone'\] not in explainers"):
        _check(cfg, repo)


@pytest.mark.parametrize("profile", ["meta", "smoke", "paper"])
def test_each_profile_is_an_overlay_of_the_default(repo, profile):
    """config/<profile>.yaml says only what differs from config/config.yaml:
    none of its keys repeats the default's value, and the evaluators it does
    not name are the default's, so a new evaluator is configured once."""
    from fudbench.config.files import REPLACE, is_overlay, load_config_file

    default, over = load_yaml(repo / "config/config.yaml"), load_config_file(repo / f"config/{profile}.yaml")
    assert is_overlay(over)

    def repeated(over, base, path=""):
        for key, value in over.items():
            if isinstance(value, dict) and value.get(REPLACE):
                continue  # a replaced section says everything
            if isinstance(value, dict) and isinstance(base.get(key), dict):
                yield from repeated(value, base[key], f"{path}{key}.")
            elif key in base and base[key] == value:
                yield f"{path}{key}"

    assert list(repeated(over, default)) == []
    resolved = load_config(repo / f"config/{profile}.yaml")
    for name in set(default["evaluators"]) - set(over["evaluators"]):
        assert resolved["evaluators"][name] == default["evaluators"][name]


def test_meta_profile_models(repo):
    resolved = load_config(repo / "config/meta.yaml")
    assert list(resolved["models"]["classifiers"]) == ["cnn", "vit", "cnn_seed1", "vit_seed1"]
