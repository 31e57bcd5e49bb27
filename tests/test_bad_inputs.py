"""Bad inputs get clear errors that name the file or key and what to do."""

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from fudbench.core.device import resolve_device
from fudbench.core.io import write_npz
from fudbench.models.checkpoints import load_checkpoint
from fudbench.models.classifiers import build_classifier, load_classifier, save_classifier
from fudbench.workflow.pipeline import evaluate_shard
from fudbench.config.files import resolve_config


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_cuda_requested_without_gpu():
    with pytest.raises(RuntimeError, match=r"config key 'device'.*no CUDA GPU.*device: cpu"):
        resolve_device("cuda")
    assert resolve_device("auto").type == "cpu"


@pytest.fixture
def classifier_ckpt(tmp_path):
    cfg = {"arch": "small_cnn", "width": 4}
    path = tmp_path / "clf.pt"
    save_classifier(path, build_classifier(cfg, 4, 8, [0.5] * 3, [0.25] * 3), cfg, 4, 8, {})
    return path


def test_truncated_checkpoint_names_file_and_fix(classifier_ckpt):
    data = classifier_ckpt.read_bytes()
    classifier_ckpt.write_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match=r"clf\.pt could not be read.*corrupt or truncated.*rerun"):
        load_classifier(classifier_ckpt)


def test_missing_and_foreign_checkpoints(tmp_path, classifier_ckpt):
    with pytest.raises(FileNotFoundError, match=r"absent\.pt does not exist"):
        load_checkpoint(tmp_path / "absent.pt", kind="classifier")
    with pytest.raises(RuntimeError, match=r"holds 'classifier', expected a 'score_model'"):
        load_checkpoint(classifier_ckpt, kind="score_model")


def test_attributions_of_another_shard_are_refused(tmp_path, classifier_ckpt):
    images = (np.random.default_rng(0).random((4, 3, 8, 8)) * 255).astype(np.uint8)
    write_npz(tmp_path / "eval.npz", images=images, labels=np.zeros(4, np.int64), masks=np.zeros((4, 8, 8), np.uint8))
    write_npz(
        tmp_path / "attr.npz",
        attributions=np.zeros((2, 3, 8, 8), np.float32),
        targets=np.zeros(2, np.int64),
        ids=np.array([0, 1]),
    )
    with pytest.raises(RuntimeError, match=r"attr\.npz holds images \[0, 1\], expected shard 1.*delete it"):
        evaluate_shard(
            classifier_ckpt,
            tmp_path / "eval.npz",
            tmp_path / "attr.npz",
            1,
            2,
            "insdel",
            {"n_steps": 2, "blur_kernel": 3, "blur_sigma": 1.0, "batch_size": 4},
            {"ratios": [0.5, 0.7], "reduction": "abs_sum"},
            {},
            (0,),
            "cpu",
        )


# --- Config names the registries do not know (explainers, ratios, shard size: tests/test_config.py) ---


@pytest.mark.parametrize(
    "edit,match",
    [
        (
            lambda c: c["evaluators"].__setitem__("xyz", {}),
            r"config key 'evaluators.xyz': unknown evaluator 'xyz'; "
            r"registered: fud, insdel",
        ),
        (
            lambda c: c["models"]["classifiers"]["cnn"].__setitem__("arch", "resnet99"),
            r"config key 'models\.classifiers\.cnn\.arch': 'resnet99' is not allowed; allowed values: 'small_cnn'",
        ),
    ],
)
def test_unknown_evaluator_or_model_names_the_key_and_the_choices(repo, edit, match):
    from fudbench.config.validate import ConfigError, validate_config

    cfg = resolve_config([repo / "config/smoke.yaml"])
    edit(cfg)
    with pytest.raises(ConfigError, match=match):
        validate_config(cfg, repo / "config/schema.yaml")


# --- Degenerate attributions: a documented rule, not an error (masks.py docstring) ---


def test_constant_and_all_nan_maps_get_the_seeded_random_order(caplog):
    from fudbench.core.masks import degenerate_counts, pixel_order

    maps = torch.stack(
        [torch.zeros(4, 4), torch.full((4, 4), 7.5), torch.full((4, 4), float("nan")), torch.arange(16.0).view(4, 4)]
    )
    with caplog.at_level("WARNING", logger="fudbench.core.masks"):
        order = pixel_order(maps, seeds=[3, 3, 3, 3])
    # Whatever the constant (or NaN everywhere), the order is the same seeded permutation ...
    assert torch.equal(order[0], order[1]) and torch.equal(order[0], order[2])
    assert torch.equal(order[0], pixel_order(torch.zeros(1, 4, 4), seeds=[3])[0])
    assert not torch.equal(order[0], torch.arange(16)) and sorted(order[0].tolist()) == list(range(16))
    # ... while an informative map keeps its own ranking.
    assert order[3].tolist() == list(range(15, -1, -1))
    assert degenerate_counts(maps) == {"non_finite_values": 16, "non_finite_images": 1, "constant_images": 3}
    assert "16 non-finite attribution values in 1 image(s): ranked least relevant" in caplog.text
    assert "3 image(s) with a constant attribution map: seeded random pixel order" in caplog.text


def test_partly_nan_map_ranks_its_nan_pixels_last():
    from fudbench.core.masks import pixel_order

    scores = torch.arange(16.0).view(1, 4, 4)
    scores[0, 0, :2] = float("nan")
    scores[0, 3, 3] = float("-inf")
    order = pixel_order(scores, seeds=[0])[0].tolist()
    assert order[:13] == list(range(14, 1, -1))  # finite scores first, most relevant first
    assert set(order[13:]) == {0, 1, 15}


def test_evaluating_nan_and_constant_attributions_completes_and_reports(tmp_path, classifier_ckpt, caplog):
    """A NaN or constant map costs its own scores only: the evaluate job finishes
    with finite records and the counts in its log."""
    images = (np.random.default_rng(0).random((4, 3, 8, 8)) * 255).astype(np.uint8)
    write_npz(tmp_path / "eval.npz", images=images, labels=np.zeros(4, np.int64), masks=np.zeros((4, 8, 8), np.uint8))
    attr = np.random.default_rng(1).standard_normal((4, 3, 8, 8)).astype(np.float32)
    attr[0, :, :2] = np.nan  # some NaN pixels
    attr[1] = np.nan  # all NaN (counts as constant too)
    attr[2] = 0.25  # constant
    write_npz(tmp_path / "attr.npz", attributions=attr, targets=np.zeros(4, np.int64), ids=np.arange(4))
    with caplog.at_level("WARNING"):
        records, _ = evaluate_shard(
            classifier_ckpt,
            tmp_path / "eval.npz",
            tmp_path / "attr.npz",
            0,
            4,
            "insdel",
            {"n_steps": 2, "blur_kernel": 3, "blur_sigma": 1.0, "batch_size": 16},
            {"ratios": [0.5], "reduction": "abs_sum"},
            {},
            (0,),
            "cpu",
        )
    assert set(records["image"]) == {0, 1, 2, 3}
    assert np.isfinite(records["confidence"]).all()
    assert "non-finite attribution values in 2 image(s)" in caplog.text
    assert "2 image(s) with a constant attribution map" in caplog.text


# --- Results directory: refused before any job, nothing touched ---


def _as_read_only(path, code: str):
    """Run `code` (Python) in a subprocess that sees `path` read-only, in a way
    that binds root too: root ignores permission bits, so it gets a read-only
    bind mount in a private mount namespace (nothing leaks to the machine)."""
    import os
    import subprocess
    import sys

    cmd = [sys.executable, "-c", code]
    if os.geteuid() != 0:
        path.chmod(0o555)
        try:
            return subprocess.run(cmd, capture_output=True, text=True)
        finally:
            path.chmod(0o755)
    shell = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    res = subprocess.run(
        ["unshare", "--mount", "sh", "-c", shell, "-", str(path), *cmd], capture_output=True, text=True
    )
    if "mount:" in res.stderr or "unshare:" in res.stderr:
        pytest.skip(f"cannot make a read-only mount here: {res.stderr.strip()}")
    return res


def test_read_only_results_directory_is_refused(repo, tmp_path):
    results = tmp_path / "results" / "smoke"
    (results / "tables").mkdir(parents=True)
    (results / "tables" / "t.csv").write_text("a\n1\n")
    res = _as_read_only(
        results,
        f"import sys; sys.path.insert(0, {str(repo / 'src')!r})\n"
        "from fudbench.workflow.preflight import check_results_writable\n"
        f"check_results_writable({str(results)!r})",
    )
    assert res.returncode != 0
    assert re.search(
        r"PreflightError: results directory \S+/results/smoke is not writable .*make it writable.*"
        r"--directory.*run_name.*nothing was run or deleted",
        res.stderr,
    ), res.stderr
    assert (results / "tables" / "t.csv").read_text() == "a\n1\n"
    assert sorted(p.name for p in results.rglob("*")) == ["t.csv", "tables"]  # no probe left behind


def test_results_directory_checks_pass_or_name_the_blocking_file(tmp_path):
    from fudbench.workflow.preflight import PreflightError, check_results_writable

    check_results_writable(tmp_path / "results" / "new")  # missing but creatable: fine, nothing created
    assert not (tmp_path / "results").exists()
    (tmp_path / "results").write_text("not a directory")
    with pytest.raises(
        PreflightError, match=r"cannot be created: .*results is a file, not a directory; move or delete"
    ):
        check_results_writable(tmp_path / "results" / "smoke")


def test_too_little_free_space_is_refused_naming_the_need_and_the_override(repo, tmp_path, monkeypatch):
    """Issue 26 case 9: a full disk used to surface as ENOSPC after a job's compute."""
    import shutil
    from collections import namedtuple

    import fudbench.workflow.preflight as preflight
    from fudbench.workflow.preflight import PreflightError, check_free_space, estimated_run_mb

    smoke, paper = resolve_config([repo / "config/smoke.yaml"]), resolve_config([repo / "config/paper.yaml"])
    assert 256 < estimated_run_mb(smoke) < 1024 and estimated_run_mb(paper) > 20_000  # grows with the run
    results = tmp_path / "results" / "smoke"
    check_free_space(results, smoke, environ={})  # this machine has room for the smoke run
    free = shutil.disk_usage(tmp_path).free // 2**20
    with pytest.raises(
        PreflightError,
        match=rf"only \d+ MB free on the file system of results directory "
        rf"\S+/results/smoke, this run needs about {10 * free} MB "
        rf"\(FUD_MIN_FREE_MB={10 * free}\); free some space, or run elsewhere "
        r"with --directory DIR, or set FUD_MIN_FREE_MB=N .*0 turns this check off",
    ):
        check_free_space(results, smoke, environ={"FUD_MIN_FREE_MB": str(10 * free)})
    check_free_space(results, smoke, environ={"FUD_MIN_FREE_MB": "0"})  # off
    for bad in ("lots", "-5", "nan", "inf"):  # issue 39: -5 and nan turned the check off silently
        with pytest.raises(PreflightError, match=rf"FUD_MIN_FREE_MB='{bad}' is not a number of MB >= 0 \(0 turns"):
            check_free_space(results, smoke, environ={"FUD_MIN_FREE_MB": bad})
    # the estimate less what the results directory already holds
    monkeypatch.setattr(preflight.shutil, "disk_usage", lambda p: namedtuple("U", "total used free")(0, 0, 100 * 2**20))
    need = estimated_run_mb(smoke)
    with pytest.raises(
        PreflightError,
        match=rf"only 100 MB free .* needs about {need} MB \(estimated: about {need} "
        r"MB for the whole run, 0 MB of it already there\)",
    ):
        check_free_space(results, smoke, environ={})
    assert not results.exists()  # nothing created


# --- Workflow level: refused before any job; a failing job deletes nothing else ---


@pytest.mark.workflow
def test_workflow_refuses_read_only_results_before_any_job(repo, tmp_path):
    work = tmp_path / "work"
    results = work / "results" / "smoke"
    results.mkdir(parents=True)
    res = _as_read_only(
        results,
        "import runpy, sys\n"
        f"sys.argv = ['snakemake', '-s', {str(repo / 'Snakefile')!r}, '--configfile', "
        f"{str(repo / 'config/smoke.yaml')!r}, '--directory', {str(work)!r}, '--cores', '1']\n"
        "runpy.run_module('snakemake', run_name='__main__')",
    )
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    assert re.search(r"results/smoke is not writable.*make it writable", out), out[-3000:]
    assert "Finished job" not in out and not any(results.iterdir())


@pytest.mark.workflow
def test_workflow_refuses_too_little_free_space_before_any_job(repo, tmp_path, monkeypatch):
    from workflow_support import snakemake

    monkeypatch.setenv("FUD_MIN_FREE_MB", str(10**12))  # a petabyte: more than any disk here
    res = snakemake(repo, "--configfile", str(repo / "config/smoke.yaml"), "--directory", str(tmp_path), "--cores", "1")
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    assert re.search(
        r"PreflightError in .*\nonly \d+ MB free .*results/smoke, this run needs about 1000000000000 MB", out
    ), out[-3000:]
    assert "Finished job" not in out and not (tmp_path / "results").exists()


@pytest.mark.workflow
def test_failing_job_leaves_other_outputs_in_place(repo, smoke_run, tmp_path):
    """A corrupt intermediate file makes its consumers fail; every output of a
    job that did not start stays as it was (byte for byte)."""
    import hashlib
    import shutil

    from workflow_support import snakemake

    results, _ = smoke_run
    work = tmp_path / "work"
    shutil.copytree(results.parent.parent, work, symlinks=True)
    copy = work / "results" / "smoke"

    def snapshot():
        return {
            str(p.relative_to(copy)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in copy.rglob("*")
            if p.is_file()
            and p.relative_to(copy).parts[0] not in ("logs", "benchmarks")
            and p.name != "invocations.jsonl"
        }  # provenance: every real invocation appends its line

    (copy / "analysis" / "per_image.parquet").write_bytes(b"not a parquet file")  # newer: its consumers rerun
    before = snapshot()
    res = snakemake(
        repo,
        "--configfile",
        str(repo / "config/smoke.yaml"),
        "--directory",
        str(work),
        "--cores",
        "1",
        "--rerun-triggers",
        "mtime",
        "params",
        "input",
    )
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    started = re.findall(r"^    output: (.*)$", out, re.M)
    assert started, out[-3000:]
    rerun_outputs = {str(Path(f).relative_to("results/smoke")) for line in started for f in line.split(", ")}
    after = snapshot()
    changed = {f for f in before if after.get(f) != before[f]}
    assert changed and changed <= rerun_outputs, sorted(changed - rerun_outputs)
    assert after["analysis/per_image.parquet"] == before["analysis/per_image.parquet"]
    kept = [f for f in before if f.split("/")[0] in ("models", "records") and after.get(f) == before[f]]
    assert kept and len(kept) == sum(f.split("/")[0] in ("models", "records") for f in before)


# --- Round two (issue 19): caught at parse time or at the library boundary ---


def _smoke(repo):

    return resolve_config([repo / "config/smoke.yaml"])


def _set(path, value):
    def edit(cfg):
        node = cfg
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value

    return edit


@pytest.mark.parametrize(
    "edit,match",
    [
        # explainer settings, validated from fudbench.explainers.settings
        (
            _set(("explainers", "ig"), {"n_stepz": 8}),
            r"'explainers\.ig': unknown key\(s\) 'n_stepz'; allowed keys: "
            r"baseline, batch_size, method, n_steps",
        ),
        (_set(("explainers", "ig"), {"n_steps": "8"}), r"'explainers\.ig\.n_steps': '8' is not of type 'integer'"),
        (_set(("explainers", "ig"), {"n_steps": 0}), r"'explainers\.ig\.n_steps': 0 is less than the minimum of 1"),
        (
            _set(("explainers", "ig"), {"baseline": "blurred"}),
            r"'explainers\.ig\.baseline': 'blurred' is not allowed; "
            r"allowed values: 'zero', 'mean'",
        ),
        (
            _set(("explainers", "x_d20"), {"method": "degrade", "base": "ig", "fraction": 1.5}),
            r"'explainers\.x_d20\.fraction': 1\.5 is greater than the maximum of 1",
        ),
        (
            _set(("explainers", "x_d20"), {"method": "degrade", "base": "nope", "fraction": 0.2}),
            r"'explainers\.x_d20\.base': 'nope' is not an explainer a degraded copy can wrap",
        ),
        (
            _set(
                ("explainers", "x_d20"),
                {"method": "degrade", "base": "ig", "fraction": 0.2, "base_settings": {"n_stepz": 3}},
            ),
            r"'explainers\.x_d20\.base_settings': unknown key\(s\) 'n_stepz'",
        ),
        (
            _set(("explainers", "x_d20"), {"method": "degrade", "fraction": 0.2}),
            r"'explainers\.x_d20': 'base' is a required property",
        ),
        (
            _set(("explainers", "isa"), {"add_steps": 0, "remove_steps": 0}),
            r"'explainers\.isa': add_steps \+ remove_steps must be >= 1",
        ),
        # evaluator and imputer settings, validated from fudbench.evaluators.<name>
        (_set(("evaluators", "fud", "steps"), 0), r"'evaluators\.fud\.steps': 0 is less than the minimum of 1"),
        (
            _set(("evaluators", "srg", "imputers"), ["telea", "smudge"]),
            r"'evaluators\.srg\.imputers': unknown imputer\(s\) \['smudge'\]",
        ),
        # imputer options, validated from fudbench.imputers.settings (aliases too)
        (
            _set(("evaluators", "road"), {"imputer": "telea", "imputer_options": {"telea": {"radius": -1}}}),
            r"'evaluators\.road\.imputer_options\.telea\.radius': -1 is less than or equal to the minimum of 0",
        ),
        (
            _set(
                ("evaluators", "road"),
                {"imputer": "fog", "imputer_options": {"fog": {"method": "gaussian", "stdd": 2}}},
            ),
            r"'evaluators\.road\.imputer_options\.fog': Additional properties are not allowed \('stdd' was "
            r"unexpected\) \(options of gaussian\)",
        ),
        # NaN and inf anywhere a number is read
        (_set(("evaluation", "ratios"), [float("nan"), 0.5]), r"'evaluation\.ratios\.0': nan is not a finite number"),
        (_set(("evaluators", "infid", "sigma"), float("inf")), r"'evaluators\.infid\.sigma': inf is not a finite"),
        # cross-references of the analysis, plots and meta sections
        (
            _set(("analysis", "diagnostics", "explainer"), "gradcam"),
            r"'analysis\.diagnostics\.explainer': \['gradcam'\] not in explainers",
        ),
        (
            _set(("analysis", "timing", "model"), "resnet"),
            r"'analysis\.timing\.model': \['resnet'\] not in "
            r"models\.classifiers",
        ),
        (
            _set(("analysis", "meta_metrics"), ["fud", "nonsense"]),
            r"'analysis\.meta_metrics': \['nonsense'\] are not curves of the configured evaluators",
        ),
        (
            _set(("plots", "qualitative_explainers"), ["ig", "gradcam"]),
            r"'plots\.qualitative_explainers': \['gradcam'\] not in explainers",
        ),
        # run_name: a plain folder name under results/
        (
            _set(("run_name",), ".."),
            r"'run_name': '\.\.' is not a valid name: it starts with a dot; use a plain folder "
            r"name under results/",
        ),
        (_set(("run_name",), "a/b"), r"'run_name': 'a/b' is not a valid name: it contains a path separator"),
    ],
)
def test_round_two_config_errors_name_the_key(repo, edit, match):
    from fudbench.config.validate import ConfigError, validate_config

    cfg = _smoke(repo)
    edit(cfg)
    with pytest.raises(ConfigError, match=match):
        validate_config(cfg, repo / "config/schema.yaml")


def _rename(section: tuple, old: str, new):
    def edit(cfg):
        node = cfg
        for k in section:
            node = node[k]
        node[new] = node.pop(old)

    return edit


@pytest.mark.parametrize(
    "edit,match",
    [
        # issue 39, case 1: an evaluator entry's name was not checked: x/../insdel wrote insdel's records
        (
            _rename(("evaluators",), "insdel", "x/../insdel"),
            r"config key 'evaluators\.x/\.\./insdel': 'x/\.\./insdel' is not a valid name: it contains a path separator; "
            r"use lower-case ASCII letters, digits and _",
        ),
        (
            _rename(("evaluators",), "insdel", ".."),
            r"'evaluators\.\.\.': '\.\.' is not a valid name: it starts with a dot",
        ),
        (_rename(("evaluators",), "insdel", "ins del"), r"'evaluators\.ins del': .* it contains whitespace"),
        (_rename(("evaluators",), "insdel", "Insdel"), r"'evaluators\.Insdel': .* it contains an upper-case letter"),
        # the schema's `pattern` is a search: `$` matched before a final newline, so "ig\n" passed
        (
            _rename(("explainers",), "ig", "ig\n"),
            r"config key 'explainers\.'ig\\n'': 'ig\\n' is not a valid name: it "
            r"contains a control character",
        ),
        (_rename(("explainers",), "ig", " "), r"'explainers\.' '': ' ' is not a valid name: it is only whitespace"),
        (
            _rename(("explainers",), "ig", "igé"),
            r"'explainers\.igé': 'igé' is not a valid name: it contains a non-ASCII",
        ),
        (
            _rename(("explainers",), "ig", "i" * 65),
            r"'explainers\.i{37}\.\.\.': the name is 65 characters long; at most "
            r"64",
        ),
        (_rename(("models", "classifiers"), "cnn", "c\\nn"), r"'models\.classifiers\.c\\nn': .* a path separator"),
        (
            _set(("run_name",), "smoke\n"),
            r"'run_name': 'smoke\\n' is not a valid name: it contains a control character",
        ),
        # found by the probe: names whose files are another's
        (
            _rename(("models", "classifiers"), "cnn", "vit_surrogate"),
            r"config key 'models\.classifiers\.vit_surrogate': "
            r"'vit_surrogate' cannot be used: results/<run>/models/vit_surrogate\.pt is the F-Fidelity surrogate file",
        ),
        (
            _rename(("models", "classifiers"), "cnn", "score_model"),
            r"'models\.classifiers\.score_model': 'score_model' "
            r"cannot be used: .*the score model's checkpoint",
        ),
        (_rename(("explainers",), "ig", "ig__x"), r"'explainers\.ig__x': 'ig__x' cannot be used: it contains '__'"),
        (_set(("run_name",), "r" * 65), r"'run_name': the name is 65 characters long; at most 64"),
        (_set(("run_name",), 7), r"'run_name': 7 is not a name"),
    ],
)
def test_every_name_that_becomes_a_path_follows_one_rule(repo, edit, match):
    """fudbench.config.names: run_name and the entry names of explainers, evaluators and
    classifiers, checked by one rule before anything else, each error naming the key."""
    from fudbench.config.validate import ConfigError, validate_config

    cfg = _smoke(repo)
    edit(cfg)
    with pytest.raises(ConfigError, match=match):
        validate_config(cfg, repo / "config/schema.yaml")


@pytest.mark.parametrize(
    "edit,match",
    [
        # LRP on a ViT was refused only in its explain job (fudbench.explainers.lrp)
        (
            _set(("explainers", "lrp"), {}),
            r"config key 'explainers\.lrp': LRP has no rules for attention or LayerNorm, "
            r"and every explainer runs on every classifier: models\.classifiers \['vit'\] "
            r"are ViTs",
        ),
        (
            _set(("explainers", "lrp_d10"), {"method": "degrade", "base": "lrp", "fraction": 0.1}),
            r"config key 'explainers\.lrp_d10': LRP has no rules",
        ),
        # analysis.cue without a planted cue was silently ignored
        (
            _set(("analysis", "cue"), {"truth": "auroc"}),
            r"config key 'analysis\.cue': set, but data\.synthetic\.cue is "
            r"not, so the planted-cue rules do not run",
        ),
    ],
)
def test_settings_a_run_would_ignore_or_fail_on_are_refused_at_parse_time(repo, edit, match):
    """Issue 39 (smaller items)."""
    from fudbench.config.validate import ConfigError, validate_config

    cfg = _smoke(repo)
    edit(cfg)
    with pytest.raises(ConfigError, match=match):
        validate_config(cfg, repo / "config/schema.yaml")


def test_every_explainer_constructor_defaults_equal_its_declared_settings():
    import inspect

    from fudbench.explainers import EXPLAINERS
    from fudbench.explainers.settings import SETTINGS
    from fudbench.core.registry import resolve
    from fudbench.core.settings import defaults

    assert set(SETTINGS) == set(EXPLAINERS)
    for method, cls in SETTINGS.items():
        params = {
            n: p.default
            for n, p in inspect.signature(resolve(EXPLAINERS, method, "e").__init__).parameters.items()
            if n not in ("self", "args", "kwargs", "method")
        }
        declared = defaults(cls)
        assert set(params) == {f for f in cls.__dataclass_fields__}, method
        for name, value in declared.items():
            value = list(value) if isinstance(value, (list, tuple)) else value
            given = list(params[name]) if isinstance(params[name], (list, tuple)) else params[name]
            assert given == value or (given is None and value == {}), (method, name)  # None: no base settings


def test_results_path_that_is_a_file_is_named_before_the_dag_is_built(tmp_path):
    from fudbench.workflow.preflight import PreflightError, check_results_path

    (tmp_path / "results").mkdir()
    (tmp_path / "results/smoke").write_text("not a folder")
    with pytest.raises(PreflightError, match=r"results/smoke is a file, not a directory; move or delete"):
        check_results_path(tmp_path / "results/smoke")
    check_results_path(tmp_path / "results/other")  # missing below a directory: fine


def test_truncated_attributions_are_deleted_naming_the_rule_that_remakes_them(tmp_path, classifier_ckpt):
    from fudbench.core.io import CorruptFileError

    images = (np.random.default_rng(0).random((2, 3, 8, 8)) * 255).astype(np.uint8)
    write_npz(tmp_path / "eval.npz", images=images, labels=np.zeros(2, np.int64), masks=np.zeros((2, 8, 8), np.uint8))
    write_npz(
        tmp_path / "attr.npz",
        attributions=np.zeros((2, 3, 8, 8), np.float32),
        targets=np.zeros(2, np.int64),
        ids=np.array([0, 1]),
    )
    data = (tmp_path / "attr.npz").read_bytes()
    (tmp_path / "attr.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(
        CorruptFileError,
        match=r"attr\.npz is corrupt \(BadZipFile.*deleted it, so the next run of "
        r"the workflow remakes it \(rule explain\)",
    ):
        evaluate_shard(
            classifier_ckpt,
            tmp_path / "eval.npz",
            tmp_path / "attr.npz",
            0,
            2,
            "insdel",
            {},
            {"ratios": [0.5, 0.7], "reduction": "abs_sum"},
            {},
            (0,),
            "cpu",
        )
    assert not (tmp_path / "attr.npz").exists()


def test_truncated_records_are_deleted_naming_the_rule(tmp_path):
    import pandas as pd

    from fudbench.core.io import CorruptFileError, read_parquet, write_parquet

    write_parquet(tmp_path / "r.parquet", pd.DataFrame({"a": range(100)}))
    data = (tmp_path / "r.parquet").read_bytes()
    (tmp_path / "r.parquet").write_bytes(data[:20])
    with pytest.raises(CorruptFileError, match=r"r\.parquet is corrupt.*\(rule evaluate\)"):
        read_parquet(tmp_path / "r.parquet", made_by="evaluate")
    assert not (tmp_path / "r.parquet").exists()
    with pytest.raises(FileNotFoundError):  # a missing file is not "corrupt": nothing is deleted or renamed
        read_parquet(tmp_path / "r.parquet", made_by="evaluate")


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_atomic_writes_get_the_permissions_of_an_ordinary_write(tmp_path, umask):
    import os

    from fudbench.core.io import write_text

    old = os.umask(umask)
    try:
        write_text(tmp_path / "atomic.txt", "x")
        (tmp_path / "plain.txt").write_text("x")
    finally:
        os.umask(old)
    mode = lambda p: (tmp_path / p).stat().st_mode & 0o777  # noqa: E731
    assert mode("atomic.txt") == mode("plain.txt") == 0o666 & ~umask


@pytest.fixture
def tiny_batch(tiny_cnn):
    x = torch.rand(3, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    return tiny_cnn, x, torch.tensor([0, 1, 2])


@pytest.mark.parametrize(
    "call,match",
    [
        # IDSDS with 4x4 maps for 8x8 images; ROAD with one map for three images
        ("idsds_small_maps", r"IDSDS\.run: attribution must have the images' batch size and H x W.*got \(3, 3, 4, 4\)"),
        ("road_one_map", r"ROAD\.run: attribution must have the images' batch size.*got \(1, 3, 8, 8\)"),
        (
            "ig_one_target",
            r"IntegratedGradients\.explain: target must be a 1-D tensor with one class index per "
            r"image \(3\), got \(1,\)",
        ),
        (
            "uint8_images",
            r"TopKCurve\.run: x must be a float tensor with values in \[0, 1\], got torch\.uint8; "
            r"for 8-bit images pass x\.float\(\) / 255",
        ),
        (
            "normalised_images",
            r"evaluator insdel: x must hold images in \[0, 1\], got values in \[-3, 4\]; pass images "
            r"before normalisation",
        ),
        ("nan_image", r"Infidelity\.run: x has non-finite values \(NaN or inf\) in image\(s\) at positions \[1\]"),
        ("float_targets", r"Saliency\.explain: target must hold integer class indices, got torch\.float32"),
    ],
)
def test_library_calls_check_their_inputs_naming_the_argument(tiny_batch, call, match):
    from fudbench.core.checks import InputError
    from fudbench.evaluators import build_evaluator
    from fudbench.explainers.integrated_gradients import IntegratedGradients
    from fudbench.explainers.saliency import Saliency
    from fudbench.imputers import ZeroImputer
    from fudbench.protocols import TopKCurve
    from fudbench.protocols.faithfulness.idsds import IDSDS
    from fudbench.protocols.faithfulness.infidelity import Infidelity
    from fudbench.protocols.faithfulness.road import ROAD

    model, x, y = tiny_batch
    a = torch.rand_like(x)
    ids = [0, 1, 2]
    calls = {
        "idsds_small_maps": lambda: IDSDS().run(model, x, y, torch.rand(3, 3, 4, 4), ZeroImputer(), ids, (0,)),
        "road_one_map": lambda: ROAD([0.5]).run(model, x, y, a[:1], ZeroImputer(), ids, (0,)),
        "ig_one_target": lambda: IntegratedGradients(n_steps=2).explain(model, x, y[:1]),
        "uint8_images": lambda: TopKCurve("c", [0.5]).run(
            model, (x * 255).to(torch.uint8), y, a, ZeroImputer(), ids, (0,)
        ),
        "normalised_images": lambda: build_evaluator(
            "insdel", {"n_steps": 2}, {"ratios": [0.5], "reduction": "abs_sum"}, {}, "cpu"
        ).run(
            model, x.flatten().index_put((torch.tensor([0, 1]),), torch.tensor([-3.0, 4.0])).view_as(x), y, a, ids, (0,)
        ),
        "nan_image": lambda: Infidelity(n_perturb=2).run(
            model, x.index_fill(0, torch.tensor([1]), float("nan")), y, a, None, ids, (0,)
        ),
        "float_targets": lambda: Saliency().explain(model, x, y.float()),
    }
    with pytest.raises(InputError, match=match):
        calls[call]()
