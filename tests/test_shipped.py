import json

import pytest

from fudbench.fingerprint import file_sha256, fingerprint
from fudbench.models.shipped import verify_shipped_checkpoint

INPUTS = {"seed": 0, "data": {"image_size": 32}, "score_model": {"train": {"epochs": 40}}}


@pytest.fixture
def shipped(tmp_path):
    ckpt = tmp_path / "model.pt"
    ckpt.write_bytes(b"weights")
    (tmp_path / "model.json").write_text(json.dumps(
        {"sha256": file_sha256(ckpt), "training_fingerprint": fingerprint(INPUTS), "training_inputs": INPUTS}))
    return ckpt


def test_verified(shipped):
    assert verify_shipped_checkpoint(shipped, INPUTS)["sha256"] == file_sha256(shipped)


def test_checksum_mismatch(shipped):
    shipped.write_bytes(b"tampered")
    with pytest.raises(RuntimeError, match="checksum mismatch.*model.pt"):
        verify_shipped_checkpoint(shipped, INPUTS)


def test_config_changed_names_the_key(shipped):
    changed = {**INPUTS, "score_model": {"train": {"epochs": 41}}}
    with pytest.raises(RuntimeError, match=r"score_model\.train\.epochs.*source: train"):
        verify_shipped_checkpoint(shipped, changed)


def test_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="source: train"):
        verify_shipped_checkpoint(tmp_path / "absent.pt", INPUTS)
