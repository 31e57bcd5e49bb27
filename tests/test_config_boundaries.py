"""Config boundaries of issue 60: integral floats where an integer is meant, seeds typed before any key,
YAML duplicate keys, and values that would silently change what runs (bootstrap 0, an empty
meta_metrics, a list that repeats an item). Each test failed on 13c472e (the unfixed code)."""

from __future__ import annotations

import pytest

from fudbench.config.files import ConfigFileError, load_config_file, resolve_config, snakemake_argv
from fudbench.config.validate import ConfigError, load_config, load_yaml, validate_config


def _smoke(repo):
    return resolve_config([repo / "config/smoke.yaml"])


def _set(cfg, path, value):
    node = cfg
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return cfg


def _refused(repo, path, value):
    cfg = _set(_smoke(repo), path, value)
    with pytest.raises(ConfigError) as info:
        validate_config(cfg, repo / "config/schema.yaml")
    return str(info.value)


@pytest.mark.parametrize(
    "path,value,written",
    [
        (("data", "n_eval"), 6.0, "6"),  # died in make_dataset: "slice indices must be integers"
        (("seed",), 1.0, "1"),  # drew other noise than seed: 1 (seed keys are text)
        (("data", "shard_size"), 3.0, "3"),
        (("analysis", "bootstrap"), 50.0, "50"),
        (("evaluators", "insdel", "n_steps"), 8.0, "8"),  # an evaluator's settings dataclass
        (("explainers", "ig", "n_steps"), 4.0, "4"),  # an explainer's
        (("explainers", "ig_d50", "base_settings"), {"n_steps": 4.0}, "4"),  # a wrapper's base settings
        (("evaluators", "srg", "imputer_options"), {"blur": {"kernel_size": 5.0}}, "5"),  # an imputer's options
        (("plots", "dpi"), 60.0, "60"),
    ],
)
def test_an_integral_float_where_an_integer_is_meant_is_refused_naming_the_key(repo, path, value, written):
    message = _refused(repo, path, value)
    number = written + ".0"
    assert f"{number} is a float; write {written}" in message, message
    key = ".".join(path[:-1] if isinstance(value, dict) else path)
    assert f"config key '{key}" in message


def test_a_fractional_float_where_an_integer_is_meant_says_so(repo):
    assert "config key 'data.n_eval': 6.5 is not an integer" in _refused(repo, ("data", "n_eval"), 6.5)


def test_the_library_refuses_a_float_seed_before_it_becomes_a_key():
    """derive_seed keys are text: 1.0 and 1 were two seeds."""
    from fudbench.core.seeding import derive_seed

    with pytest.raises(TypeError, match=r"the seed 1\.0 is not an integer"):
        derive_seed(1.0, "evaluate", "cnn")
    assert derive_seed(1, "evaluate", "cnn") == derive_seed(1, "evaluate", "cnn")


def test_the_api_refuses_an_integral_float_setting():
    import torch

    import fudbench

    x, y = torch.rand(2, 3, 8, 8), torch.zeros(2, dtype=torch.long)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 2))
    with pytest.raises(Exception, match=r"n_steps.*8\.0 is a float; write 8"):
        fudbench.evaluate(model, x, y, torch.rand(2, 3, 8, 8), metrics={"insdel": {"n_steps": 8.0}})


DUPLICATE = """\
run_name: dup
data:
  n_eval: 6
  shard_size: 3
  n_eval: 7
"""


def test_a_duplicate_yaml_key_names_the_key_and_both_lines(repo, tmp_path):
    """YAML keeps the last value silently: n_eval 7 ran."""
    path = tmp_path / "dup.yaml"
    path.write_text(DUPLICATE)
    expected = r"config key 'data\.n_eval' is given twice, on line 3 and on line 5"
    with pytest.raises(ConfigFileError, match=rf"--configfile argument '\S*dup\.yaml': {expected}"):
        load_config_file(path)
    with pytest.raises(ConfigFileError, match=expected):  # ./fud run --configfile dup.yaml, checked first
        snakemake_argv(["--configfile", str(path)])
    with pytest.raises(ConfigFileError, match=expected):  # an overlay merged over the default
        resolve_config([path])
    with pytest.raises((ConfigError, ConfigFileError), match=expected):  # load_config / load_yaml
        load_config(path)
    with pytest.raises(ConfigError, match=rf"dup\.yaml: {expected}"):
        load_yaml(path)


def test_yaml_merge_keys_and_anchors_are_not_duplicates(tmp_path):
    path = tmp_path / "anchors.yaml"
    path.write_text("a: &base {p: 1, q: 2}\nb:\n  <<: *base\n  p: 3\nc: [*base, *base]\n")
    assert load_config_file(path) == {"a": {"p": 1, "q": 2}, "b": {"p": 3, "q": 2}, "c": [{"p": 1, "q": 2}] * 2}


@pytest.mark.parametrize(
    "path,value,match",
    [
        # every interval was NaN
        (
            ("analysis", "bootstrap"),
            0,
            r"'analysis\.bootstrap': 0 is less than the minimum of 2 .*fewer than 2 give no",
        ),
        (("analysis", "bootstrap"), 1, r"'analysis\.bootstrap': 1 is less than the minimum of 2"),
        # the agreement job was dropped silently
        (("analysis", "meta_metrics"), [], r"'analysis\.meta_metrics': \[\] should be non-empty .*would select none"),
        (("analysis", "meta_metrics"), ["fud", "insertion", "fud"], r"'analysis\.meta_metrics': 'fud' listed more"),
        (
            ("plots", "qualitative_explainers"),
            ["ig", "ig_d50", "ig"],
            r"'plots\.qualitative_explainers': 'ig' listed more than once \(.*draw its rows twice",
        ),
    ],
)
def test_values_that_would_silently_change_what_runs_are_refused_saying_why(repo, path, value, match):
    cfg = _set(_smoke(repo), path, value)
    with pytest.raises(ConfigError, match=match):
        validate_config(cfg, repo / "config/schema.yaml")


def test_the_shipped_configs_pass_the_stricter_checks(repo):
    for name in ("config.yaml", "smoke.yaml", "meta.yaml", "photos.yaml", "your_own.yaml"):
        load_config(repo / "config" / name)
