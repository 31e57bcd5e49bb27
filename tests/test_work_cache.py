"""The work cache (fudbench.workflow.work_cache) never brings damaged bytes back (issue 26, case 1).

Entries used to be hard links of the evaluate job's outputs: truncating or
editing a records file in place damaged its cache entry too, and every rerun
restored the same corrupt bytes. Entries are copies now, with the sha256 of
each file checked on restore; a bad entry is dropped and its work recomputed.
The job-level test (an evaluate job recomputes the explainer whose entry is
corrupt) is tests/test_pipeline.py::test_work_cache_recomputes_an_explainer_whose_entry_is_corrupt.
"""

from __future__ import annotations

import logging
import os

import pytest

from fudbench.workflow.work_cache import DIGESTS, WorkCache

SUFFIXES = (".parquet", ".npz")


@pytest.fixture
def outputs(tmp_path):
    """An evaluate job's two outputs of one explainer, as the job wrote them."""
    out = {".parquet": tmp_path / "out" / "records.parquet", ".npz": tmp_path / "out" / "samples.npz"}
    out[".parquet"].parent.mkdir()
    out[".parquet"].write_bytes(b"records " * 1000)
    out[".npz"].write_bytes(b"samples " * 1000)
    return out


def _put(tmp_path, outputs):
    cache = WorkCache(tmp_path / "cache", enabled=True)
    cache.put("ig", "k1", {s: str(p) for s, p in outputs.items()})
    return cache


def test_an_output_damaged_in_place_does_not_reach_the_cache(tmp_path, outputs):
    original = {s: p.read_bytes() for s, p in outputs.items()}
    cache = _put(tmp_path, outputs)
    hit = cache.get("ig", "k1", SUFFIXES)
    assert hit is not None
    for s, p in outputs.items():  # no shared inode: an in-place edit of one never edits the other
        assert os.stat(p).st_ino != os.stat(hit[s]).st_ino and os.stat(p).st_nlink == 1
    # Damage in place (same inode), as `truncate -s 100` or an editor would.
    with open(outputs[".parquet"], "r+b") as fh:
        fh.truncate(100)
    with open(outputs[".npz"], "r+b") as fh:
        fh.write(b"XXXX")
    assert cache.restore(cache.get("ig", "k1", SUFFIXES), {s: str(p) for s, p in outputs.items()}) is True
    assert {s: p.read_bytes() for s, p in outputs.items()} == original


@pytest.mark.parametrize("damage", ["truncate", "overwrite", "digest"])
def test_a_corrupt_cache_entry_is_dropped_not_restored(tmp_path, outputs, caplog, damage):
    cache = _put(tmp_path, outputs)
    entry = tmp_path / "cache" / "ig" / "k1"
    if damage == "truncate":
        os.truncate(f"{entry}.parquet", 100)
    elif damage == "overwrite":
        with open(f"{entry}.npz", "r+b") as fh:
            fh.seek(10)
            fh.write(b"bitrot")
    else:
        (tmp_path / "cache" / "ig" / f"k1{DIGESTS}").write_text("{not json")
    for p in outputs.values():  # the job's outputs are gone (e.g. Snakemake removed them before rerunning)
        p.unlink()
    hit = cache.get("ig", "k1", SUFFIXES)
    assert hit is not None
    with caplog.at_level(logging.WARNING, logger="fudbench.workflow.work_cache"):
        restored = cache.restore(hit, {s: str(p) for s, p in outputs.items()})
    assert restored is False
    assert not any(p.exists() for p in outputs.values()), "a bad entry must not be copied to the outputs"
    assert not list((tmp_path / "out").glob(".*.part"))
    assert not list((tmp_path / "cache" / "ig").iterdir()), "the bad entry is dropped"
    assert f"work cache entry {entry} " in caplog.text and "dropped" in caplog.text
    assert cache.get("ig", "k1", SUFFIXES) is None  # the next lookup misses: the work is recomputed


def test_an_entry_without_its_digest_is_dropped(tmp_path, outputs, caplog):
    """A half-written entry, or one an older version linked in without digests."""
    _put(tmp_path, outputs)
    (tmp_path / "cache" / "ig" / f"k1{DIGESTS}").unlink()
    cache = WorkCache(tmp_path / "cache", enabled=True)
    with caplog.at_level(logging.WARNING, logger="fudbench.workflow.work_cache"):
        assert cache.get("ig", "k1", SUFFIXES) is None
    assert "no digest file" in caplog.text
    assert not list((tmp_path / "cache" / "ig").iterdir())


def test_put_replaces_older_keys_and_a_restore_is_a_fresh_file(tmp_path, outputs):
    cache = _put(tmp_path, outputs)
    cache.put("ig", "k2", {s: str(p) for s, p in outputs.items()})
    assert sorted(p.name for p in (tmp_path / "cache" / "ig").iterdir()) == ["k2.npz", "k2.parquet", f"k2{DIGESTS}"]
    target = {s: tmp_path / "restored" / f"x{s}" for s in SUFFIXES}
    assert cache.restore(cache.get("ig", "k2", SUFFIXES), {s: str(p) for s, p in target.items()})
    for s in SUFFIXES:
        assert target[s].read_bytes() == outputs[s].read_bytes()
        assert os.stat(target[s]).st_nlink == 1
