import pytest

from fudbench.core.io import atomic_path, read_json, write_json


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.json"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("partial")
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_replaces(tmp_path):
    target = tmp_path / "out.json"
    write_json(target, {"a": 1})
    write_json(target, {"a": 2})
    assert read_json(target) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
