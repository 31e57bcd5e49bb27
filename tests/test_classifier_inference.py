"""The classifier as the evaluation side runs it on a CPU (fudbench.models.inference): BatchNorms folded
into their convolutions, channels_last weights; the same function up to float rounding."""
import pytest
import torch
from torch import nn

from fudbench.models.classifiers import build_classifier, load_classifier, save_classifier
from fudbench.models.features import FeatureTap, features_of
from fudbench.models.inference import fold_batchnorm, for_evaluation

CNN = {"arch": "small_cnn", "width": 8}
VIT = {"arch": "small_vit", "patch_size": 4, "dim": 16, "depth": 1, "heads": 2, "stem": "conv"}


def _trained_like(cfg):
    """A classifier with non-trivial BatchNorm statistics and affine parameters, in eval mode."""
    torch.manual_seed(0)
    model = build_classifier(cfg, 5, 16, [0.5] * 3, [0.25] * 3)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    return model.eval().requires_grad_(False)


@pytest.mark.parametrize("cfg", [CNN, VIT], ids=["cnn", "vit"])
def test_evaluation_model_is_the_same_function_up_to_rounding(cfg):
    model = _trained_like(cfg)
    x = torch.rand(6, 3, 16, 16)
    with torch.no_grad():
        want = model(x)
    n_bn = sum(isinstance(m, nn.BatchNorm2d) for m in model.modules())
    assert n_bn > 0
    assert for_evaluation(model, "cpu") is model
    assert not any(isinstance(m, nn.BatchNorm2d) for m in model.modules())  # every one followed a conv
    assert all(m.weight.is_contiguous(memory_format=torch.channels_last)
               for m in model.modules() if isinstance(m, nn.Conv2d))
    assert not any(p.requires_grad for p in model.parameters())
    with torch.no_grad():
        got = model(x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # the gradient an evaluation takes (FUD's guidance) is the same up to rounding too
    xg = x.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(model(xg)[:, 1].sum(), xg)
    xr = x.clone().requires_grad_(True)
    (want_grad,) = torch.autograd.grad(_trained_like(cfg)(xr)[:, 1].sum(), xr)
    torch.testing.assert_close(grad, want_grad, rtol=1e-4, atol=1e-6)
    # the OOD detectors' penultimate features are still taken in the same forward
    with FeatureTap(model), torch.no_grad():
        assert features_of(model(x)).shape == (6, model.net.head.in_features)


def test_only_eval_mode_conv_batchnorm_pairs_in_a_sequential_are_folded():
    seq = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.BatchNorm2d(4),  # BN after a ReLU
                        nn.Conv2d(4, 4, 1), nn.ReLU(), nn.BatchNorm2d(4))  # conv then ReLU: kept
    seq.eval()
    assert fold_batchnorm(seq) == 1
    assert [type(m).__name__ for m in seq] == ["Conv2d", "Identity", "ReLU", "BatchNorm2d", "Conv2d", "ReLU",
                                               "BatchNorm2d"]
    training = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))  # training mode: batch statistics
    assert fold_batchnorm(training) == 0


def test_a_gpu_or_a_model_in_training_is_left_as_it_is():
    model = _trained_like(CNN)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    for_evaluation(model, "cuda")  # no GPU needed: only the device's type is read
    assert any(isinstance(m, nn.BatchNorm2d) for m in model.modules())
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    model.train()
    for_evaluation(model, "cpu")
    assert any(isinstance(m, nn.BatchNorm2d) for m in model.modules())


def test_load_classifier_for_evaluation(tmp_path):
    model = _trained_like(CNN)
    path = tmp_path / "cnn.pt"
    save_classifier(path, model, CNN, 5, 16, {})
    plain, evaluation = load_classifier(path), load_classifier(path, evaluation=True)
    assert any(isinstance(m, nn.BatchNorm2d) for m in plain.modules())
    assert not any(isinstance(m, nn.BatchNorm2d) for m in evaluation.modules())
    x = torch.rand(4, 3, 16, 16)
    with torch.no_grad():
        torch.testing.assert_close(evaluation(x), plain(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cfg", [CNN, VIT], ids=["cnn", "vit"])
def test_evaluation_logits_do_not_depend_on_the_input_layout(cfg):
    """With channels_last weights every convolution runs in one layout, so an image gives the same bits
    whether it arrives NCHW or channels_last (a protocol's unmasked sample and its clean image: with the
    model as trained, 78 of the 104 unmasked ViT deletion samples of a default run had energies 5e-7
    away from their clean image's, and the OOD tables broke those ties by rounding)."""
    model = for_evaluation(_trained_like(cfg), "cpu")
    x = torch.rand(6, 3, 16, 16)
    with torch.no_grad():
        assert torch.equal(model(x), model(x.contiguous(memory_format=torch.channels_last)))
        assert torch.equal(model(x), model(x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)))
