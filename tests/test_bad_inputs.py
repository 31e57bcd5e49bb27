"""Bad inputs get clear errors that name the file or key and what to do."""
import numpy as np
import pytest
import torch

from fudbench.device import resolve_device
from fudbench.io import write_npz
from fudbench.models.checkpoints import load_checkpoint
from fudbench.models.classifiers import build_classifier, load_classifier, save_classifier
from fudbench.pipeline import evaluate_shard


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
    write_npz(tmp_path / "attr.npz", attributions=np.zeros((2, 3, 8, 8), np.float32), targets=np.zeros(2, np.int64),
              ids=np.array([0, 1]))
    with pytest.raises(RuntimeError, match=r"attr\.npz holds images \[0, 1\], expected shard 1.*delete it"):
        evaluate_shard(classifier_ckpt, tmp_path / "eval.npz", tmp_path / "attr.npz", 1, 2, "insdel",
                       {"n_steps": 2, "blur_kernel": 3, "blur_sigma": 1.0, "batch_size": 4},
                       {"ratios": [0.5, 0.7], "reduction": "abs_sum"}, {}, (0,), "cpu")
