"""The command line (no Snakemake started here; tests/test_report_command.py runs it):
which run a command addresses, paths resolved where they were typed, numbers checked, targeted
runs that remake what the ledger and the presence check found, and the unclear errors."""

from __future__ import annotations

import argparse
import errno
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "config" / "smoke.yaml"

from fudbench.config import files as cf  # noqa: E402  (attributes, so that each test fails on its own on 6c8cba0)


def _yaml(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _report_target(argv):
    return argv[argv.index("--report") + 1]


# ------------------------------------------------------------------ item 1: the run a command addresses


def test_report_with_configfile_option_reports_that_run_not_the_default(monkeypatch):
    """`./fud report --configfile config/smoke.yaml` wrote results/synthetic/report.html (the run
    name came only from a first positional argument)."""
    monkeypatch.setenv("FUD_CALLER_CWD", str(REPO))
    argv = cf.report_argv(["--configfile", "config/smoke.yaml"])
    assert _report_target(argv) == "results/smoke/report.html"
    assert argv == ["--configfile", str(SMOKE), "--report", "results/smoke/report.html"]
    assert (
        _report_target(cf.report_argv(["--configfile=config/smoke.yaml", "--cores", "1"]))
        == "results/smoke/report.html"
    )


def test_report_merges_a_positional_file_then_configfile_files_in_order(tmp_path, monkeypatch):
    """`./fud report A --configfile B` passed two --configfile options (Snakemake kept B only) and
    named the run after A; now A then B, one option, run_name of the merge."""
    monkeypatch.setenv("FUD_CALLER_CWD", str(tmp_path))
    _yaml(tmp_path / "a.yaml", "run_name: first\ndata: {n_eval: 8}\n")
    _yaml(tmp_path / "b.yaml", "run_name: second\n")
    _yaml(tmp_path / "c.yaml", "data: {n_eval: 4}\n")  # an overlay without run_name
    argv = cf.report_argv(["a.yaml", "--configfile", "b.yaml"])
    assert argv.count("--configfile") == 1
    assert argv[argv.index("--configfile") + 1 : argv.index("--configfile") + 3] == [
        str(tmp_path / "a.yaml"),
        str(tmp_path / "b.yaml"),
    ]
    assert _report_target(argv) == "results/second/report.html"
    assert _report_target(cf.report_argv(["b.yaml", "--configfile", "a.yaml"])) == "results/first/report.html"
    # several overlays: the last run_name given wins, an overlay without one keeps it
    assert _report_target(cf.report_argv(["--configfile", "a.yaml", "c.yaml"])) == "results/first/report.html"
    assert (
        _report_target(cf.report_argv(["--configfile", "a.yaml", "--configfile", "c.yaml", "b.yaml"]))
        == "results/second/report.html"
    )
    # --config over the files, as Snakemake applies it
    assert (
        _report_target(cf.report_argv(["a.yaml", "--config", "run_name=third", "--cores", "1"]))
        == "results/third/report.html"
    )


def test_report_and_run_address_a_run_by_one_rule(tmp_path, monkeypatch):
    """The run a report addresses is cf.run_config's run_name, the config the Snakefile builds
    (command_line_config, then with_default), and the one the tools and benchmarks take
    (cf.script_config): for the same files, the same results folder."""
    monkeypatch.setenv("FUD_CALLER_CWD", str(tmp_path))
    a = _yaml(tmp_path / "a.yaml", "run_name: alpha\nexplainers: {sm: null}\n")
    b = _yaml(tmp_path / "b.yaml", "data: {n_eval: 4}\n")
    for files in ([], [SMOKE], [a], [a, b], [SMOKE, a], [b]):
        run = cf.addressed_run([str(f) for f in files])
        assert run == f"results/{cf.run_config([str(f) for f in files])['run_name']}"
        assert (
            _report_target(cf.report_argv(["--configfile", *map(str, files)] if files else [])) == f"{run}/report.html"
        )
        assert cf.script_config(files)[1] == REPO / run
    assert cf.addressed_run([str(SMOKE)]) == "results/smoke" and cf.addressed_run([]) == "results/synthetic"


def test_report_takes_no_report_option_and_passes_the_command_that_finishes_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("FUD_CALLER_CWD", str(REPO))
    monkeypatch.delenv(cf.FINISH_ENV, raising=False)
    with pytest.raises(cf.ConfigFileError, match="takes no --report"):
        cf.report_argv(["--configfile", "config/smoke.yaml", "--report", "x.html"])
    cf.report_argv(["--configfile", "config/smoke.yaml", "--directory", str(tmp_path), "--report-stylesheet", "s.css"])
    assert os.environ[cf.FINISH_ENV] == f"./fud run --configfile {SMOKE} --directory {tmp_path}"


def test_snakemake_path_options_are_resolved_where_they_were_typed(tmp_path, monkeypatch):
    """./fud changes to the repository: a relative --directory (or -d, --report, --snakefile ...)
    named a folder of the repository."""
    monkeypatch.setenv("FUD_CALLER_CWD", str(tmp_path))
    assert cf.snakemake_argv(["--directory", "work", "-n"]) == ["--directory", str(tmp_path / "work"), "-n"]
    assert cf.snakemake_argv(["-d", "w 2", "--report=r.html"]) == [
        "-d",
        str(tmp_path / "w 2"),
        f"--report={tmp_path / 'r.html'}",
    ]
    assert cf.snakemake_argv(["-d", "/abs/dir", "--", "-d", "x"]) == ["-d", "/abs/dir", "--", "-d", "x"]
    # a profile is a name unless the caller's directory has that folder
    assert cf.snakemake_argv(["--profile", "slurm"]) == ["--profile", "slurm"]
    (tmp_path / "slurm").mkdir()
    assert cf.snakemake_argv(["--profile", "slurm"]) == ["--profile", str(tmp_path / "slurm")]


# ------------------------------------------------------------------ item 4: paths and numbers of scripts


def test_fud_python_runs_in_the_directory_it_was_called_from(tmp_path):
    """`./fud python my_script.py out.csv` read and wrote relative to the repository."""
    (tmp_path / "a dir").mkdir()
    script = tmp_path / "a dir" / "where.py"
    script.write_text("import os, sys\nopen(sys.argv[1], 'w').write(os.getcwd())\n")
    res = subprocess.run(
        [str(REPO / "fud"), "python", "where.py", "out.txt"],
        cwd=tmp_path / "a dir",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert (tmp_path / "a dir" / "out.txt").read_text() == str(tmp_path / "a dir")
    assert not (REPO / "out.txt").exists()


def test_script_paths_and_numbers_are_checked_where_typed(tmp_path, monkeypatch):
    from fudbench.config.cli import positive_float, positive_int, user_file

    monkeypatch.setenv("FUD_CALLER_CWD", str(tmp_path))
    assert user_file("out/x.csv") == tmp_path / "out" / "x.csv"
    assert user_file("/abs") == Path("/abs")
    for bad in ("-1", "0", "nan", "inf", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            positive_float(bad)
    assert positive_float("2.5") == 2.5
    for bad in ("0", "-3", "1.5", "nan"):
        with pytest.raises(argparse.ArgumentTypeError):
            positive_int(bad)


def test_gpu_suite_refuses_bad_numbers_and_writes_a_relative_out_where_typed(tmp_path, capsys):
    """bench/gpu_suite.sh --time-scale -1 was accepted, nan gave a traceback; a relative --out
    wrote into the repository (./fud changed directory first)."""
    sys.path.insert(0, str(REPO / "bench"))
    import gpu_suite

    for value, says in (("-1", "is not > 0"), ("nan", "is not a finite number")):
        with pytest.raises(SystemExit) as exc:
            gpu_suite.main(["--time-scale", value, "--tiny"])
        assert exc.value.code == 2 and says in capsys.readouterr().err
    name = f"gpu_suite_rel_{os.getpid()}"
    try:
        res = subprocess.run(
            ["bash", str(REPO / "bench/gpu_suite.sh"), "--out", name, "--tiny", "--steps", "env"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
        assert (tmp_path / name / "summary.csv").is_file()
        assert not (REPO / name).exists()
    finally:
        if (REPO / name).exists():  # the old behaviour: do not leave it in the checkout
            import shutil

            shutil.rmtree(REPO / name)


def test_a_benchmark_config_is_an_overlay_of_the_default_like_the_workflows(tmp_path, monkeypatch):
    """bench/*.py and tools/*.py read their --config with the workflow's rule: an overlay without
    run_name addresses the default's run, several files merge in order, paths are the caller's."""
    monkeypatch.setenv("FUD_CALLER_CWD", str(tmp_path))
    _yaml(tmp_path / "o.yaml", "explainers: {sm: null}\n")
    config, results = cf.script_config(["o.yaml"])
    assert "sm" not in config["explainers"] and "ig" in config["explainers"]
    assert results == REPO / "results" / "synthetic"
    config, results = cf.script_config(["o.yaml", str(SMOKE)], directory="work")
    assert results == tmp_path / "work" / "results" / "smoke"
    with pytest.raises(cf.ConfigFileError, match=r"config file 'nothere\.yaml' \(= .*nothere\.yaml\) does not exist"):
        cf.script_config(["nothere.yaml"])


# ------------------------------------------------------------------ item 5: targeted runs


class _Workflow:
    """What also_in_targeted_runs uses of Snakemake's Workflow: _prepare_dag, dag_settings."""

    is_main_process = True

    def __init__(self, targets=()):
        from snakemake.settings.types import DAGSettings

        self.dag_settings = DAGSettings(targets=frozenset(targets))
        self.prepared = []

    def _prepare_dag(self, **kwargs):
        self.prepared.append(set(self.dag_settings.targets))


class _Rule:
    def __init__(self, workflow, output):
        self.workflow, self.output, self.name = workflow, output, output

    def is_producer(self, path):
        return path == self.output


def test_a_targeted_run_gets_the_missing_files_as_targets(tmp_path, monkeypatch, capsys):
    """With targets, `rule all` (whose inputs the ledger's and the presence check's files were)
    is not built: the note said "remade", then "Nothing to be done". Now a run that names
    targets gets them added to its targets when it builds its DAG; without targets nothing
    changes (rule all requests them)."""
    from fudbench.core.damage import note_deleted, remake_damaged

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FUD_DAMAGE_LEDGER", str(tmp_path / "results/run/.damaged"))
    note_deleted(tmp_path / "results/run/data/eval.npz")
    flow = _Workflow(targets={"results/run/tables/t.csv"})
    rules = [_Rule(flow, "results/run/data/eval.npz"), _Rule(flow, "results/run/tables/t.csv")]
    assert remake_damaged("results/run", rules) == ["results/run/data/eval.npz"]
    flow._prepare_dag(forceall=False)
    assert flow.prepared == [{"results/run/tables/t.csv", "results/run/data/eval.npz"}]
    assert (
        "this run names its targets, so the 1 missing file(s) noted above are added to them and remade: "
        "results/run/data/eval.npz" in capsys.readouterr().err
    )
    # no targets: Snakemake builds rule all, which requests them; the targets stay empty
    plain = _Workflow()
    assert remake_damaged("results/run", [_Rule(plain, "results/run/data/eval.npz")])
    plain._prepare_dag()
    assert plain.prepared == [set()]
    # a job's process (not the main one) adds nothing
    job = _Workflow(targets={"x"})
    job.is_main_process = False
    remake_damaged("results/run", [_Rule(job, "results/run/data/eval.npz")])
    job._prepare_dag()
    assert job.prepared == [{"x"}]


# ------------------------------------------------------------------ item 6: errors that name the cause


@pytest.mark.parametrize("helper", ["config", "tools", "report", "bench", "scripts", "tests", "examples"])
def test_a_plugin_helper_named_like_a_folder_of_the_repository_loads(tmp_path, monkeypatch, helper):
    """With the repository's root on sys.path (the main Snakemake process, `python -m`), its
    config/, tools/ ... folders are namespace packages; a plug-in's `from config import SCALE`
    failed with "cannot import name 'SCALE' from 'config' (unknown location)"."""
    from fudbench.core import plugins

    folder = tmp_path / f"plug {helper}"
    folder.mkdir()
    (folder / f"{helper}.py").write_text("SCALE = 7\n")
    (folder / "mine.py").write_text(f"from {helper} import SCALE\n\ndef f():\n    return SCALE\n")
    monkeypatch.chdir(REPO)
    monkeypatch.syspath_prepend(str(REPO))
    monkeypatch.delitem(sys.modules, helper, raising=False)
    assert plugins.load_object(f"{folder}/mine.py:f")() == 7
    assert str(folder / f"{helper}.py") in plugins.plugin_sources(f"{folder}/mine.py:f")


def test_a_plugin_helper_that_an_installed_module_shadows_is_named_with_the_fix(tmp_path):
    from fudbench.core import plugins

    (tmp_path / "yaml.py").write_text("SCALE = 2\n")
    (tmp_path / "mine.py").write_text("from yaml import SCALE\n\ndef f():\n    return SCALE\n")
    with pytest.raises(plugins.PluginError) as exc:
        plugins.load_object(f"{tmp_path}/mine.py:f")
    msg = str(exc.value)
    assert f"the plug-in's folder has a helper module 'yaml' ({tmp_path / 'yaml.py'})" in msg
    assert "site-packages" in msg and "rename the helper" in msg


def test_a_full_disk_is_named_with_the_file_not_torchs_iostream_error(tmp_path, monkeypatch):
    """The atomic writers go to a temporary file: here one that is /dev/full (every write fails
    with ENOSPC). numpy's and pandas' OSError and torch's "unexpected pos" / "iostream error"
    become DiskFullError naming the file, the free space and the fix; the partial file is gone."""
    import torch

    from fudbench.core import io

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    real_mkstemp = io.tempfile.mkstemp

    def full_mkstemp(*args, **kwargs):
        fd, name = real_mkstemp(*args, **kwargs)
        os.close(fd)
        os.unlink(name)
        os.symlink("/dev/full", name)
        return os.open(name, os.O_WRONLY), name

    monkeypatch.setattr(io.tempfile, "mkstemp", full_mkstemp)
    with pytest.raises(io.DiskFullError) as exc:
        io.write_npz(tmp_path / "a.npz", x=np.zeros(100_000))
    assert exc.value.errno == errno.ENOSPC
    assert f"No space left on device: writing {tmp_path / 'a.npz'} failed" in str(exc.value)
    assert "free some space" in str(exc.value)
    # torch says nothing about the cause: a full disk only where the file system is (nearly) full
    monkeypatch.setattr(io, "_free_mb", lambda folder: 3.0)
    with pytest.raises(io.DiskFullError, match=r"No space left on device: writing .*m\.pt failed \(3 MB free"):
        io.torch_save(tmp_path / "m.pt", {"w": torch.zeros(1000)})
    monkeypatch.setattr(io, "_free_mb", lambda folder: 10_000.0)
    with pytest.raises(RuntimeError) as other:
        io.torch_save(tmp_path / "m.pt", {"w": torch.zeros(1000)})
    assert not isinstance(other.value, io.DiskFullError)
    assert [p.name for p in tmp_path.iterdir()] == []  # no partial file, no link left


def test_a_meta_device_model_is_named_as_such_not_as_an_image_size_problem():
    import torch

    from fudbench.models.classifiers import output_classes

    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 4, device="meta"))
    with pytest.raises(RuntimeError) as exc:
        output_classes(net, torch.rand(2, 3, 8, 8), torch.tensor([0, 1]), "mine")
    msg = str(exc.value)
    assert "on the 'meta' device" in msg and "1.weight" in msg and "to_empty" in msg
    assert "image size" not in msg


def test_an_unfinished_run_is_refused_with_the_missing_files_and_the_command():
    from fudbench.workflow.snakemake_main import check_report_files, unfinished_message

    msg = unfinished_message([f"results/smoke/tables/t{i}.csv" for i in range(25)], "./fud run --configfile a.yaml")
    assert msg.startswith("the run is not finished: 25 file(s) that the report shows do not exist yet:")
    assert "results/smoke/tables/t19.csv\n  ... (5 more)" in msg
    assert "finish it with `./fud run --configfile a.yaml`" in msg
    assert check_report_files()
    import snakemake.report

    assert snakemake.report.auto_report._fud_checked
