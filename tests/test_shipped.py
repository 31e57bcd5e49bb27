import json

import pytest

from fudbench.core.fingerprint import file_sha256, fingerprint
from fudbench.models.shipped import verify_shipped_checkpoint

INPUTS = {"seed": 0, "data": {"image_size": 32}, "score_model": {"train": {"epochs": 40}}}


@pytest.fixture
def shipped(tmp_path):
    ckpt = tmp_path / "model.pt"
    ckpt.write_bytes(b"weights")
    (tmp_path / "model.json").write_text(
        json.dumps(
            {"sha256": file_sha256(ckpt), "training_fingerprint": fingerprint(INPUTS), "training_inputs": INPUTS}
        )
    )
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


# The default profile's classifiers and surrogates are shipped (issue 25): checked at parse time.


def test_default_profile_ships_its_classifiers_and_surrogates(repo):
    from fudbench.config.validate import load_config

    config = load_config(repo / "config/config.yaml", repo / "config/schema.yaml")
    for name, c in config["models"]["classifiers"].items():
        assert c["source"] == "shipped" and c["shipped_surrogate"], name


def _default(repo):
    from fudbench.config.validate import load_yaml

    return load_yaml(repo / "config/config.yaml")


def test_a_changed_training_setting_names_the_key_and_the_fix(repo):
    from fudbench.config.validate import ConfigError, validate_config

    config = _default(repo)
    config["models"]["classifiers"]["cnn"]["train"]["epochs"] = 7
    config["evaluators"]["ffid"]["beta"] = 0.2
    with pytest.raises(ConfigError) as err:
        validate_config(config, repo / "config/schema.yaml")
    message = str(err.value)
    assert "models.classifiers.cnn.shipped" in message and "classifier.train.epochs" in message
    assert "set models.classifiers.cnn.source: train" in message
    # the surrogate's fingerprint holds its classifier's and the fine-tuning settings
    assert "models.classifiers.vit.shipped_surrogate" in message and "ffid.beta" in message
    assert "models.classifiers.vit.shipped'" not in message  # the ViT's own settings did not change


def test_source_train_needs_no_shipped_files(repo):
    from fudbench.config.validate import validate_config

    config = _default(repo)
    for c in config["models"]["classifiers"].values():
        c.update(source="train", shipped="assets/absent.pt", shipped_surrogate="assets/absent.pt")
    validate_config(config, repo / "config/schema.yaml")


def test_shipped_is_for_the_small_classifiers_only(repo):
    from fudbench.config.validate import ConfigError, validate_config

    config = _default(repo)
    config["models"]["classifiers"]["cnn"].pop("shipped")
    with pytest.raises(ConfigError, match=r"models\.classifiers\.cnn\.shipped': required with source: shipped"):
        validate_config(config, repo / "config/schema.yaml")


def test_accuracy_may_differ_by_one_image_across_cpus():
    from fudbench.models.shipped import accuracy_matches

    assert accuracy_matches(0.9975, 1.0, 400)
    assert not accuracy_matches(0.995, 1.0, 400)


def test_shipped_manifest_round_trip(tmp_path):
    from fudbench.models.shipped import shipped_problems, write_manifest

    ckpt = tmp_path / "c.pt"
    ckpt.write_bytes(b"w")
    write_manifest(ckpt, INPUTS, metrics={"test_accuracy": 1.0})
    assert verify_shipped_checkpoint(ckpt, INPUTS, "c", "fix it")["metrics"]["test_accuracy"] == 1.0
    assert shipped_problems(ckpt, INPUTS, "c", "fix it") == []
    assert "differences at: seed" in shipped_problems(ckpt, {**INPUTS, "seed": 1}, "c", "fix it")[0]


def test_a_score_model_declared_trained_on_other_data_is_checked_on_everything_but_the_data(shipped):
    """The cue-naive fill of studies/round5: the shipped model never saw the run's data, on purpose."""
    from fudbench.core.fingerprint import score_model_training_inputs

    score = {"source": "shipped", "shipped": str(shipped), "train": {"epochs": 40}}
    run = {"seed": 0, "data": {"synthetic": {"image_size": 32, "cue": {"size": 4}}}, "models": {"score_model": score}}
    with pytest.raises(RuntimeError, match=r"data\.cue"):  # undeclared: refused, naming the data key
        verify_shipped_checkpoint(shipped, score_model_training_inputs(run))
    score["trained_on_other_data"] = True
    assert score_model_training_inputs(run)["data"] == INPUTS["data"]
    verify_shipped_checkpoint(shipped, score_model_training_inputs(run))
    score["train"] = {"epochs": 41}  # every other setting still must match
    with pytest.raises(RuntimeError, match=r"score_model\.train\.epochs"):
        verify_shipped_checkpoint(shipped, score_model_training_inputs(run))
