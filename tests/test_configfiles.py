"""Config files from the command line (fudbench.config.files; docs/reliability.md,
"Command line"): several --configfile files merge in order, a partial config
overlays config/config.yaml, and a target mistaken for a config file is named."""

from __future__ import annotations

import pytest
import yaml

from fudbench.config.files import (
    ConfigFileError,
    collect_configfiles,
    command_line_config,
    expand_variants,
    finish_config,
    load_config_file,
    merge_configs,
    report_argv,
    resolve_config,
    snakemake_argv,
    with_default,
)


def test_merge_configs_is_a_deep_merge_in_order():
    a = {
        "run_name": "a",
        "data": {"n_eval": 16, "shard_size": 16, "synthetic": {"shapes": ["circle", "cross"]}},
        "explainers": {"ig": {"n_steps": 50}},
    }
    b = {"data": {"n_eval": 8, "synthetic": {"shapes": ["square"]}}, "explainers": {"sm": {}}}
    c = {"run_name": "c", "data": {"shard_size": 4}}
    merged = merge_configs(a, b, c)
    assert merged == {
        "run_name": "c",
        "data": {"n_eval": 8, "shard_size": 4, "synthetic": {"shapes": ["square"]}},  # lists replaced
        "explainers": {"ig": {"n_steps": 50}, "sm": {}},
    }  # mappings merged
    assert list(merged["explainers"]) == ["ig", "sm"]  # keys keep their first position
    assert a["data"]["n_eval"] == 16 and a["explainers"] == {"ig": {"n_steps": 50}}  # inputs untouched
    merged["data"]["synthetic"]["shapes"].append("x")
    assert b["data"]["synthetic"]["shapes"] == ["square"]  # no shared lists either


def test_null_removes_a_mapping_and_keeps_a_plain_null():
    """An overlay drops an entry of the default with `name: null`; a null over a
    plain value (amp_dtype: null = fp32) or a new key stays a null."""
    base = {"explainers": {"ig": {"n_steps": 50}, "sm": {}}, "evaluators": {"fud": {"amp_dtype": "auto"}}}
    over = {"explainers": {"sm": None, "new": None}, "evaluators": {"fud": {"amp_dtype": None}}}
    merged = merge_configs(base, over)
    assert merged["explainers"] == {"ig": {"n_steps": 50}, "new": None}
    assert merged["evaluators"]["fud"] == {"amp_dtype": None}
    # what Snakemake's own merge of `--configfile a b` leaves (None values) is dropped in entry sections
    finished = finish_config({"explainers": {"ig": {}, "sm": None}, "models": {"classifiers": {"cnn": None}}})
    assert finished == {"explainers": {"ig": {}}, "models": {"classifiers": {}}}


def test_command_line_files_merge_by_our_rule_so_a_later_file_restores_a_dropped_entry(tmp_path):
    """Snakemake's own merge leaves `ig` null when one file drops it and a later
    one gives it back as `{}`; command_line_config (what the Snakefile uses) restores it, and
    --config's values go over the files."""
    from snakemake.utils import update_config

    from fudbench.config.files import command_line_config, load_config_file

    drop, restore = tmp_path / "a.yaml", tmp_path / "b.yaml"
    drop.write_text("explainers: {ig: null, sm: {}}\nseed: 1\n")
    restore.write_text("explainers: {ig: {}}\n")
    theirs: dict = {}
    for f in (drop, restore):
        update_config(theirs, load_config_file(f))
    assert theirs["explainers"]["ig"] is None  # the quirk this works around
    ours = command_line_config([drop, restore], {"seed": 5})
    assert finish_config(ours) == {"explainers": {"sm": {}, "ig": {}}, "seed": 5}
    assert with_default(ours)["explainers"]["ig"] == {}  # given again after a removal: afresh, not the default's


def _yaml(path, text):
    path.write_text(text)
    return path


def test_a_null_in_a_later_file_or_in_config_removes_the_default_entry_too(repo, tmp_path):
    """Issue 39, case 2: default <- smoke <- overlay. A `null` in the third layer removes
    the entry; before, the two files were merged first (the null deleted smoke's entry)
    and the default under them brought its own back, at the default's cost."""
    smoke = repo / "config/smoke.yaml"
    nofud = _yaml(tmp_path / "nofud.yaml", "evaluators: {fud: null, sensn: null}\n")
    config = resolve_config([smoke, nofud])
    assert "fud" not in config["evaluators"] and "sensn" not in config["evaluators"]
    assert set(config["evaluators"]) == set(resolve_config([smoke])["evaluators"]) - {"fud", "sensn"}
    # smoke.yaml + cue.yaml: the cue run's `diagnostics: null` / `timing: null` stay removed
    cue = resolve_config([smoke, repo / "studies/planted_cue/cue.yaml"])["analysis"]
    assert "diagnostics" not in cue and "timing" not in cue
    # --config's null too (Snakemake gives it to command_line_config as `overrides`)
    given = command_line_config([smoke], {"evaluators": {"fud": None}, "analysis": {"timing": None}})
    config = with_default(given)
    assert "fud" not in config["evaluators"] and "timing" not in config["analysis"]
    assert config["evaluators"]["sensn"] == resolve_config([smoke])["evaluators"]["sensn"]


@pytest.mark.parametrize(
    "layers",
    [
        [{"evaluators": {"fud": {"steps": 5}}}, {"evaluators": {"fud": None}}],
        [{"evaluators": {"fud": None}}, {"evaluators": {"fud": {"steps": 3}}}],  # removed, then afresh
        [{"evaluators": {"fud": {"steps": 5}}}, {"evaluators": {"fud": None}}, {"evaluators": {"fud": {"steps": 3}}}],
        [{"analysis": {"diagnostics": None}}, {"analysis": {"diagnostics": {"n_images": 2}}}],
        [
            {"models": {"classifiers": {"_replace": True, "c": {"arch": "small_cnn"}}}},
            {"models": {"classifiers": {"_replace": False, "d": {"arch": "small_cnn"}}}},
        ],
        [{"models": {"classifiers": None}}, {"models": {"classifiers": {"c": {"arch": "small_cnn"}}}}],
        [{"evaluators": {"fud": {"steps": 5}}}, {"evaluators": {"_replace": True, "insdel": {"n_steps": 3}}}],
        [{"evaluation": {"quality": {"images_per_shard": None}}}, {"analysis": {"meta_metrics": None}}],
    ],
)
def test_merging_the_files_first_equals_one_merge_with_the_default_under_them(repo, layers):
    """The one merge rule: however the layers are grouped (the command line's files and
    --config first, then the default under them, as the Snakefile does), the result is
    that of merging default, file 1, file 2, ... in one pass."""
    default = yaml.safe_load((repo / "config/config.yaml").read_text())
    grouped = with_default(merge_configs(*layers, keep_removals=True))
    assert grouped == finish_config(merge_configs(default, *layers))
    split = merge_configs(merge_configs(*layers[:-1], keep_removals=True), layers[-1], keep_removals=True)
    assert with_default(split) == grouped


def test_replace_marks_are_booleans_and_not_top_level(tmp_path):
    """Issue 39: `_replace: "no"` counted as true; a top-level `_replace` was ignored."""
    with pytest.raises(
        ConfigFileError,
        match=r"config key 'models\.classifiers\._replace': 'no' is not true or "
        r"false",
    ):
        load_config_file(_yaml(tmp_path / "a.yaml", "models: {classifiers: {_replace: 'no', c: {}}}\n"))
    with pytest.raises(
        ConfigFileError,
        match=r"b\.yaml.*a top-level '_replace' is not supported; to use a file "
        r"without the default config, give every top-level key",
    ):
        load_config_file(_yaml(tmp_path / "b.yaml", "_replace: true\nseed: 3\n"))
    with pytest.raises(ConfigFileError, match=r"--config: config key 'explainers\._replace': 1 is not true"):
        command_line_config([], {"explainers": {"_replace": 1}})
    load_config_file(_yaml(tmp_path / "c.yaml", "models: {classifiers: {_replace: false}}\n"))  # a boolean: fine


def test_replace_mark_replaces_a_section_instead_of_merging():
    """`_replace: true` in an overlay: the section below is replaced (the paper
    profile's ImageNet models share no key with the default's small ones), also
    when the overlay is first merged on its own; the mark never reaches the config."""
    from fudbench.config.files import REPLACE

    base = {"models": {"classifiers": {"cnn": {"width": 32}, "vit": {"dim": 64, "depth": 4}}}}
    over = {"models": {"classifiers": {REPLACE: True, "vit": {"arch": "torchvision_vit_b_16"}}}}
    for merged in (merge_configs(base, over), merge_configs(base, merge_configs(over))):
        assert finish_config(merged)["models"]["classifiers"] == {"vit": {"arch": "torchvision_vit_b_16"}}
    alone = finish_config(merge_configs(over))
    assert alone == {"models": {"classifiers": {"vit": {"arch": "torchvision_vit_b_16"}}}}


def test_variant_of_repeats_an_entry_with_the_keys_given_changed():
    section = {
        "fud": {"steps": 25, "known": "clean"},
        "fud_renoise": {"variant_of": "fud", "known": "renoise_ddim"},
        "road2": {"variant_of": "road", "imputer": "telea"},
        "road": {"method": "road", "orders": ["morf"]},
    }
    out = expand_variants(section, "evaluators")
    assert out["fud_renoise"] == {"steps": 25, "known": "renoise_ddim", "method": "fud"}
    assert out["road2"] == {"method": "road", "orders": ["morf"], "imputer": "telea"}  # listed before its base
    assert out["fud"] == section["fud"] and list(out) == list(section)
    classifiers = expand_variants(
        {"cnn": {"width": 32, "source": "shipped"}, "cnn_seed1": {"variant_of": "cnn", "source": "train"}},
        "models.classifiers",
        method=False,
    )
    assert classifiers["cnn_seed1"] == {"width": 32, "source": "train"}
    with pytest.raises(ConfigFileError, match=r"evaluators\.x\.variant_of': no entry 'nope'"):
        expand_variants({"fud": {}, "x": {"variant_of": "nope"}}, "evaluators")
    with pytest.raises(ConfigFileError, match="is itself a variant"):
        expand_variants({"fud": {}, "a": {"variant_of": "fud"}, "b": {"variant_of": "a"}}, "evaluators")


def test_partial_config_overlays_the_default_and_a_complete_one_stands_alone(repo, tmp_path):
    default = yaml.safe_load((repo / "config/config.yaml").read_text())
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("run_name: x\ndata: {n_eval: 8}\n")
    config = resolve_config([overlay])
    assert config["run_name"] == "x" and config["data"]["n_eval"] == 8
    assert config["data"]["shard_size"] == default["data"]["shard_size"]
    assert config == merge_configs(default, {"run_name": "x", "data": {"n_eval": 8}})
    # a complete config (every required top-level key) is used as it is: the
    # default's explainers are not merged into it
    complete = tmp_path / "complete.yaml"
    smoke = resolve_config([repo / "config/smoke.yaml"])
    complete.write_text(yaml.safe_dump({**smoke, "explainers": {"ig": {}}}))
    assert resolve_config([complete]) == {**smoke, "explainers": {"ig": {}}}
    assert resolve_config([complete, overlay]) == merge_configs(
        yaml.safe_load(complete.read_text()), yaml.safe_load(overlay.read_text())
    )
    assert resolve_config([]) == default
    assert with_default({"seed": 3}) == {**default, "seed": 3}  # --config alone overlays the default


def test_repeated_configfile_options_are_collected_into_one():
    argv = [
        "-n",
        "--configfile",
        "a.yaml",
        "--cores",
        "2",
        "--configfile",
        "b.yaml",
        "c.yaml",
        "t1",
        "--configfiles=d.yaml",
        "--",
        "--configfile",
        "x",
    ]
    out, files = collect_configfiles(argv)
    assert files == ["a.yaml", "b.yaml", "c.yaml", "t1", "d.yaml"]  # t1 is taken, as argparse would take it
    assert out == [
        "-n",
        "--configfile",
        "a.yaml",
        "b.yaml",
        "c.yaml",
        "t1",
        "d.yaml",
        "--cores",
        "2",
        "--",
        "--configfile",
        "x",
    ]
    assert collect_configfiles(["all", "-n"]) == (["all", "-n"], [])


def test_a_target_after_configfile_is_named_with_how_to_write_targets(repo, tmp_path):
    csv, png = tmp_path / "x.csv", tmp_path / "fig.png"
    csv.write_text("model,score\ncnn,0.5\n")
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    json = tmp_path / "quality.json"  # a target that is a mapping
    json.write_text('{"classifiers": {"cnn": {"test_accuracy": 0.99}}, "gates": {}}')
    run_info = tmp_path / "run_info.json"
    run_info.write_text('{"commit": "d2d2544", "cores": 2, "cpu_model": "AMD EPYC", "device": "cpu"}')
    smoke = str(repo / "config/smoke.yaml")
    hint = r"put targets before --configfile \(\./fud run TARGET --configfile FILE\) or after --"
    for argv, why in [
        (["--configfile", smoke, "results/synthetic/tables/x.csv"], "does not exist"),
        (["--configfile", smoke, str(csv)], "is not a config file: its top level is str, not a mapping"),
        (["--configfile", smoke, "--configfile", str(png)], r"is not a YAML or JSON file \(UnicodeDecodeError"),
        (["--configfile", smoke, str(tmp_path)], "is a directory"),
        (
            ["--configfile", smoke, str(json)],
            r"is not a config file: 2 of its 2 keys \(classifiers, gates\) are "
            r"not config keys",
        ),
        # issue 39: results/<run>/run_info.json shares one key (device) with the config
        (
            ["--configfile", smoke, str(run_info)],
            r"is not a config file: 3 of its 4 keys \(commit, cores, cpu_model\) "
            r"are not config keys",
        ),
    ]:
        with pytest.raises(ConfigFileError, match=rf"--configfile argument '{argv[-1]}'( \(= [^)]*\))? {why}.*{hint}"):
            snakemake_argv(argv)
    assert snakemake_argv(["results/smoke/tables/x.csv", "--configfile", smoke]) == [
        "results/smoke/tables/x.csv",
        "--configfile",
        smoke,
    ]


def test_a_relative_configfile_is_the_callers_not_the_repositorys(repo, tmp_path, monkeypatch):
    """Issue 39, case 4: ./fud changes to the repository; a relative --configfile is read
    from the directory it was run in (FUD_CALLER_CWD), and a missing one is named as such."""
    mine = tmp_path / "config" / "smoke.yaml"  # same relative path as the repository's
    mine.parent.mkdir()
    mine.write_text("run_name: mine\n")
    monkeypatch.setenv("FUD_CALLER_CWD", str(tmp_path))
    assert snakemake_argv(["-n", "--configfile", "config/smoke.yaml"]) == ["-n", "--configfile", str(mine)]
    assert report_argv(["config/smoke.yaml"])[:4] == ["--configfile", str(mine), "--report", "results/mine/report.html"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("FUD_CALLER_CWD", str(elsewhere))
    with pytest.raises(
        ConfigFileError,
        match=rf"--configfile argument 'config/smoke\.yaml' \(= {elsewhere}/config/"
        rf"smoke\.yaml\) does not exist; relative paths start from the "
        rf"directory \./fud was run in, not the repository \(which has "
        rf"{repo}/config/smoke\.yaml",
    ):
        snakemake_argv(["--configfile", "config/smoke.yaml"])


def test_report_takes_run_name_from_the_resolved_config(repo, tmp_path):
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("data: {n_eval: 8}\n")  # no run_name: the default's
    assert report_argv([str(overlay), "--cores", "1"]) == [
        "--configfile",
        str(overlay),
        "--report",
        "results/synthetic/report.html",
        "--cores",
        "1",
    ]
    assert report_argv([str(repo / "config/smoke.yaml")])[-1] == "results/smoke/report.html"
    assert report_argv([]) == ["--report", "results/synthetic/report.html"]
