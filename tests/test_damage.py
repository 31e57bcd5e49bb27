"""A damaged intermediate is remade, with what reads it (issue 26, case 2; fudbench.core.damage).

A reader that finds an intermediate corrupt deletes it and notes it in the
run's ledger, results/<run>/.damaged; at parse time the Snakefile requests the
noted files that are still missing, so Snakemake remakes them and reruns
their readers. Before, the next run said "Nothing to be done" while the
intermediates were gone and the tables were the old ones.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from fudbench.core.damage import LEDGER_ENV, ledger_entries, note_deleted, remake_damaged
from fudbench.core.io import CorruptFileError, read_parquet, write_parquet


def test_a_reader_notes_the_corrupt_file_it_deleted_in_the_ledger(tmp_path, monkeypatch):
    ledger = tmp_path / "results" / "run" / ".damaged"
    monkeypatch.setenv(LEDGER_ENV, str(ledger))
    path = tmp_path / "results" / "run" / "records" / "r.parquet"
    write_parquet(path, pd.DataFrame({"a": range(100)}))
    os.truncate(path, 100)
    with pytest.raises(
        CorruptFileError,
        match=r"r\.parquet is corrupt.*deleted it, so the next run of the workflow "
        rf"remakes it \(rule evaluate\).*\(noted in {re.escape(str(ledger))}\)",
    ):
        read_parquet(path, made_by="evaluate")
    assert not path.exists()
    assert ledger_entries(ledger) == [str(path)]


def test_a_job_finds_every_corrupt_input_in_one_run(tmp_path, monkeypatch):
    """The aggregation reads every records file before failing: two damaged
    files cost one detect-and-remake round, not one each."""
    from fudbench.core.io import read_every

    ledger = tmp_path / ".damaged"
    monkeypatch.setenv(LEDGER_ENV, str(ledger))
    paths = [tmp_path / f"r{i}.parquet" for i in range(3)]
    for p in paths:
        write_parquet(p, pd.DataFrame({"a": range(100)}))
    os.truncate(paths[0], 100)
    os.truncate(paths[2], 50)
    with pytest.raises(
        CorruptFileError,
        match=r"(?s)2 input files are corrupt:.*r0\.parquet is corrupt.*"
        r"r2\.parquet is corrupt",
    ):
        read_every(paths, lambda p: read_parquet(p, made_by="evaluate"))
    assert [p.exists() for p in paths] == [False, True, False]
    assert ledger_entries(ledger) == [str(paths[0]), str(paths[2])]
    assert len(read_every(paths[1:2], read_parquet)) == 1


def test_a_truncated_eval_npz_is_named_deleted_and_noted_so_the_rerun_remakes_it(tmp_path, monkeypatch):
    """Issue 39, case 5: data/eval.npz (read by every explain and evaluate job, without a
    `made_by`) crashed with a bare BadZipFile naming no path, was not noted, and every
    rerun failed the same way. A job's reader of any file of its run's results folder now
    treats it as an intermediate; a file outside it (the researcher's) is named, not deleted."""
    import numpy as np

    from fudbench.data.shards import load_eval_shard
    from fudbench.core.io import load_npz, write_npz

    run = tmp_path / "results" / "run"
    ledger = run / ".damaged"
    monkeypatch.setenv(LEDGER_ENV, str(ledger))
    eval_npz = run / "data" / "eval.npz"
    arrays = {
        "images": np.zeros((4, 3, 8, 8), np.uint8),
        "labels": np.zeros(4, np.int64),
        "masks": np.zeros((4, 8, 8), np.uint8),
    }
    write_npz(eval_npz, **arrays)
    os.truncate(eval_npz, eval_npz.stat().st_size // 2)
    with pytest.raises(
        CorruptFileError,
        match=rf"{re.escape(str(eval_npz))} is corrupt \(BadZipFile.*deleted it, so "
        r"the next run of the workflow remakes it \(the rule that makes it\)",
    ):
        load_eval_shard(eval_npz, 0, 2)
    assert not eval_npz.exists() and ledger_entries(ledger) == [str(eval_npz)]

    mine = tmp_path / "mine.npz"  # not under results/<run>: named, kept
    write_npz(mine, **arrays)
    os.truncate(mine, 40)
    with pytest.raises(CorruptFileError, match=rf"{re.escape(str(mine))} cannot be read .*corrupt or truncated"):
        load_npz(mine)
    assert mine.exists() and ledger_entries(ledger) == [str(eval_npz)]


def test_outside_a_workflow_nothing_is_noted(tmp_path, monkeypatch):
    monkeypatch.delenv(LEDGER_ENV, raising=False)
    assert note_deleted(tmp_path / "x.npz") is None
    assert not list(tmp_path.iterdir())


class _Rule:
    """Stands in for a Snakemake rule: is_producer of paths under one prefix."""

    def __init__(self, prefix):
        self.prefix = prefix

    def is_producer(self, path):
        return path.startswith(self.prefix)


def test_parse_time_requests_the_missing_noted_files_a_rule_makes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(LEDGER_ENV, "")  # remake_damaged sets it: restored after the test
    results = "results/run"
    Path(results, "attributions").mkdir(parents=True)
    Path(results, "attributions", "remade.npz").write_bytes(b"ok")  # remade since: not requested again
    noted = [
        f"{results}/attributions/gone.npz",
        f"{results}/attributions/gone.npz",  # noted twice: once
        f"{results}/attributions/remade.npz",
        f"{results}/attributions_of_a_removed_explainer/x.npz",  # no rule makes it any more
        "/elsewhere/results/run/records/r.parquet",
    ]  # outside the working directory
    Path(results, ".damaged").write_text("".join(os.path.abspath(p) + "\n" for p in noted) + "\n")
    wanted = remake_damaged(results, [_Rule(f"{results}/attributions/")])
    assert wanted == [f"{results}/attributions/gone.npz"]
    assert os.environ[LEDGER_ENV] == os.path.abspath(f"{results}/.damaged")  # jobs of this run note here
    assert "note: 1 file(s) that a job found corrupt and deleted" in capsys.readouterr().err
    Path(results, ".damaged").unlink()
    assert remake_damaged(results, [_Rule("")]) == []  # no ledger: nothing requested, nothing printed
    assert capsys.readouterr().err == ""


@pytest.mark.workflow
def test_damaged_records_and_attributions_are_remade_and_the_tables_equal_an_undamaged_run(repo, smoke_run, tmp_path):
    """`truncate` one records file and one attributions file of a completed
    smoke run. Run 1 finds the attributions corrupt, deletes them and fails
    (Snakemake removes the failed readers' other outputs); run 2 remakes
    exactly the damaged chain and completes; the tables, records and samples
    equal the undamaged run's, and no file is missing. The records file's work
    cache entry (case 1) is not damaged with it (with hard links, the evaluate
    job that remakes the records restored the truncated bytes, forever)."""
    import importlib.util

    from fudbench.report import TIMING_COLUMNS
    from test_reruns import planned_jobs
    from workflow_support import snakemake

    reference, _ = smoke_run
    work = tmp_path / "work"
    # cp -a keeps hard links between copied files (shutil.copytree would split them and hide case 1)
    subprocess.run(["cp", "-a", str(reference.parent.parent), str(work)], check=True)
    results = work / "results" / "smoke"
    records = results / "records" / "cnn" / "ig" / "insdel" / "shard0.parquet"
    attributions = results / "attributions" / "cnn" / "ig_d50" / "shard0.npz"
    os.truncate(records, 100)
    os.truncate(attributions, 200)
    # Case 1: the records' work cache entry is a copy, not a link: the truncation did not reach it.
    entry = next((results / "cache" / "evaluate" / "cnn" / "insdel" / "shard0" / "ig").glob("*.parquet"))
    assert os.stat(entry).st_ino != os.stat(records).st_ino and os.stat(records).st_nlink == 1
    pd.testing.assert_frame_equal(pd.read_parquet(entry), pd.read_parquet(reference / records.relative_to(results)))

    def run(*extra):
        res = snakemake(
            repo, "--configfile", str(repo / "config/smoke.yaml"), "--directory", str(work), "--cores", "2", *extra
        )
        return res.returncode, res.stdout + res.stderr

    rc, out = run()  # 1: a reader finds the attributions corrupt, deletes them, notes them, fails
    assert rc != 0, out[-4000:]
    rel = str(attributions.relative_to(work))
    assert re.search(
        rf"{re.escape(rel)} is corrupt .*deleted it, so the next run of the workflow remakes it "
        r"\(rule explain\): run the same command again \(noted in .*results/smoke/\.damaged\)",
        out,
    ), out[-4000:]
    assert not attributions.exists()
    assert ledger_entries(results / ".damaged") == [str(attributions)]

    rc, out = run()  # 2: remakes the attributions and what reads them
    assert rc == 0, out[-6000:]
    assert "Nothing to be done" not in out
    assert (
        f"note: 1 file(s) that a job found corrupt and deleted (listed in results/smoke/.damaged) are "
        f"remade, with every job that reads them: {rel}" in out
    )
    jobs = planned_jobs(out)
    explains = [(j.wildcards["model"], j.wildcards["explainer"]) for j in jobs if j.rule == "explain"]
    assert explains == [("cnn", "ig_d50")], explains
    assert not [j for j in jobs if j.rule.startswith("train_") or j.rule == "make_dataset"]
    assert not [j for j in jobs if j.rule == "evaluate" and j.wildcards["model"] != "cnn"]  # vit: not damaged

    # Nothing lost, nothing stale: every file of the undamaged run is there, with the same numbers.
    def files(root):
        return {
            str(p.relative_to(root))
            for p in root.rglob("*")
            if p.is_file()
            and not p.name.startswith(".")
            and p.relative_to(root).parts[0] not in ("logs", "benchmarks", "cache")
        }

    assert files(reference) <= files(results), sorted(files(reference) - files(results))
    spec = importlib.util.spec_from_file_location("compare_results", repo / "bench/compare_results.py")
    compare_results = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare_results)
    assert compare_results.compare(results, reference, tables=True) == 0  # records, samples, tables
    tables = sorted(p.name for p in (reference / "tables").glob("*.csv"))
    assert tables
    differ = [
        t
        for t in tables
        if t not in TIMING_COLUMNS and (results / "tables" / t).read_bytes() != (reference / "tables" / t).read_bytes()
    ]
    assert not differ, f"tables differ from the undamaged run byte for byte: {differ}"

    rc, out = run("-n")  # and nothing is left to do
    assert rc == 0 and "Nothing to be done" in out, out[-4000:]


class _StubRule:
    """A stand-in for a Snakemake rule: what remake_missing uses of one."""

    def __init__(self, outputs, inputs):
        import re as _re

        self.output, self.input, self.name = list(outputs), list(inputs), outputs[0]
        self._patterns = [
            _re.compile(_re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", _re.escape(o)) + "$") for o in self.output
        ]

    def has_wildcards(self):
        return any("{" in o for o in self.output)

    def _match(self, path):
        return next((m for p in self._patterns if (m := p.match(path))), None)

    def is_producer(self, path):
        return self._match(path) is not None

    def get_wildcards(self, path):
        return self._match(path).groupdict()


def test_a_file_deleted_by_hand_is_requested_again_with_what_read_it(tmp_path, monkeypatch, capsys):
    """Issue 39: an intermediate deleted by hand was not remade ("Nothing to be done"; the
    tables stayed built from the deleted file). remake_missing (the Snakefile adds its paths
    to `rule all`, as the ledger's) walks back from the finished tables through the inputs
    of finished jobs and returns the missing ones a rule makes; nothing on a fresh run."""
    from fudbench.core.damage import remake_missing

    monkeypatch.chdir(tmp_path)
    r = "results/run"
    rules = [
        _StubRule([f"{r}/data/eval.npz"], []),
        _StubRule([f"{r}/attributions/{{model}}/{{explainer}}/shard{{shard}}.npz"], [f"{r}/data/eval.npz"]),
        _StubRule(
            [f"{r}/records/{{model}}/{{explainer}}/shard{{shard}}.parquet"],
            [f"{r}/data/eval.npz", f"{r}/attributions/{{model}}/{{explainer}}/shard{{shard}}.npz", "assets/outside.pt"],
        ),
        _StubRule([f"{r}/tables/scores.csv"], [f"{r}/records/cnn/{e}/shard0.parquet" for e in ("ig", "sm")]),
    ]
    files = [f"{r}/data/eval.npz", f"{r}/tables/scores.csv"] + [
        f"{r}/{kind}/cnn/{e}/shard0.{ext}"
        for e in ("ig", "sm")
        for kind, ext in (("attributions", "npz"), ("records", "parquet"))
    ]
    assert remake_missing(r, rules) == []  # fresh run: nothing made, nothing requested
    for f in files:
        Path(f).parent.mkdir(parents=True, exist_ok=True)
        Path(f).write_text("x")
    assert remake_missing(r, rules) == []  # complete: nothing missing ("assets/..." is not the run's)
    os.remove(f"{r}/attributions/cnn/sm/shard0.npz")  # two levels below the table
    os.remove(f"{r}/records/cnn/ig/shard0.parquet")
    assert sorted(remake_missing(r, rules)) == [
        f"{r}/attributions/cnn/sm/shard0.npz",
        f"{r}/records/cnn/ig/shard0.parquet",
    ]
    assert (
        "2 input file(s) of finished jobs are missing (deleted by hand, or new inputs after a config change"
        in capsys.readouterr().err
    )
    os.remove(f"{r}/data/eval.npz")
    assert f"{r}/data/eval.npz" in remake_missing(r, rules)
