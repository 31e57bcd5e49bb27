"""The field's explainers by name: `captum` (captum.attr classes), `cam`
(pytorch-grad-cam) and `lrp` (zennit): the torch-free name tables against the
installed libraries, each adapter against the library called directly, the
config's checks, seeds, a model whose evidence is known, and the automatic
CAM target layer on the workflow's and torchvision's architectures."""

import inspect

import numpy as np
import pytest
import torch

from fudbench.config.files import resolve_config
from fudbench.explainers import build_explainer
from fudbench.core.seeding import seeded
from fudbench.explainers.field_names import (
    CAMS,
    CAMS_EXCLUDED,
    CAPTUM,
    CAPTUM_RESERVED,
    COMPOSITES,
    NOISE_TUNNEL_KEYS,
    captum_excluded,
)
from fudbench.models.classifiers import build_classifier

pytestmark = pytest.mark.numerics  # the outcome may depend on the CPU's kernels (tests/numerics_support.py)

MEAN, STD = [0.5] * 3, [0.25] * 3


@pytest.fixture(scope="module")
def cnn():
    torch.manual_seed(0)
    return build_classifier({"arch": "small_cnn", "width": 4}, 4, 8, MEAN, STD).eval().requires_grad_(False)


@pytest.fixture(scope="module")
def batch(cnn):
    x = torch.rand(3, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    return cnn, x, cnn(x).argmax(1)


# --- the name tables against the installed libraries -------------------------------------------------------------


def test_captum_table_matches_the_installed_signatures():
    import captum.attr

    for name, spec in CAPTUM.items():
        cls = getattr(captum.attr, name)
        params = inspect.signature(cls.attribute).parameters
        assert set(spec.kwargs) <= set(params), name
        assert not set(spec.kwargs) & set(CAPTUM_RESERVED), name
        needed = {
            p for p, v in params.items() if v.default is inspect.Parameter.empty and v.kind is v.POSITIONAL_OR_KEYWORD
        } - {"self", "inputs"}
        assert needed <= set(spec.required) | ({"baselines"} if spec.baselines != "none" else set()), name
        assert ("baselines" in params) == (spec.baselines != "none"), name
        assert ("feature_mask" in params) == spec.features, name
        init = inspect.signature(cls.__init__).parameters
        assert set(spec.init) <= set(init), name
        assert all(v.default is not inspect.Parameter.empty for p, v in list(init.items())[2:]), name
    assert set(NOISE_TUNNEL_KEYS) <= set(inspect.signature(captum.attr.NoiseTunnel.attribute).parameters)


def test_every_captum_attribution_class_is_run_or_excluded_with_a_reason():
    import captum.attr

    for name in captum.attr.__all__:
        obj = getattr(captum.attr, name)
        if inspect.isclass(obj) and hasattr(obj, "attribute"):
            assert name in CAPTUM or captum_excluded(name), name
    assert not set(CAPTUM) & {n for n in captum.attr.__all__ if captum_excluded(n)}


def test_cam_table_matches_pytorch_grad_cam():
    import pytorch_grad_cam
    from pytorch_grad_cam.base_cam import BaseCAM

    exported = {
        n
        for n in dir(pytorch_grad_cam)
        if inspect.isclass(getattr(pytorch_grad_cam, n))
        and (issubclass(getattr(pytorch_grad_cam, n), BaseCAM) or n.endswith("CAM") or n == "SESS")
    }
    assert set(CAMS) <= exported and exported <= set(CAMS) | set(CAMS_EXCLUDED)
    for name, options in CAMS.items():
        cls = getattr(pytorch_grad_cam, name)
        assert issubclass(cls, BaseCAM), name
        assert set(options) <= set(inspect.signature(cls.__init__).parameters), name


def test_composite_table_matches_zennit():
    import zennit.composites

    registered = {c.__name__: c for c in zennit.composites.COMPOSITES.values()}
    assert set(COMPOSITES) == set(registered)
    for name, options in COMPOSITES.items():
        assert set(options) <= set(inspect.signature(registered[name].__init__).parameters), name


def test_field_names_and_settings_load_without_torch():
    import subprocess
    import sys

    code = (
        "import sys; import fudbench.explainers.settings, fudbench.explainers.field_names; "
        "assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- config checks -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry,match",
    [
        ({"method": "captum", "attr": "Nope"}, r"'explainers\.e\.attr': 'Nope' is not run; supported: .*DeepLift"),
        ({"method": "captum", "attr": "LRP"}, r"'explainers\.e\.attr': 'LRP' is not run \(captum's LRP needs a rule"),
        ({"method": "captum", "attr": "LayerGradCam"}, r"attributes to a layer or a neuron"),
        (
            {"method": "captum", "attr": "IntegratedGradients", "settings": {"n_stepz": 3}},
            r"'explainers\.e\.settings\.n_stepz': not a IntegratedGradients\.attribute\(\) setting; allowed: n_steps, "
            r"method, internal_batch_size",
        ),
        (
            {"method": "captum", "attr": "Saliency", "settings": {"target": 3}},
            r"settings\.target'.*\(the explained class\)",
        ),
        (
            {"method": "captum", "attr": "Occlusion"},
            r"'explainers\.e\.settings\.sliding_window_shapes': Occlusion needs it",
        ),
        (
            {"method": "captum", "attr": "DeepLift", "init": {"epz": 1}},
            r"'explainers\.e\.init\.epz'.*allowed: "
            r"multiply_by_inputs, eps",
        ),
        ({"method": "captum", "attr": "DeepLiftShap"}, r"set baseline: references"),
        ({"method": "captum", "attr": "Saliency", "feature_patch": 4}, r"Saliency takes no feature mask"),
        (
            {
                "method": "captum",
                "attr": "Occlusion",
                "settings": {"sliding_window_shapes": [3, 2, 2]},
                "noise_tunnel": {},
            },
            r"only gradient methods are wrapped",
        ),
        ({"method": "captum", "attr": "Saliency", "noise_tunnel": {"nt_type": "smooth"}}, r"nt_type': 'smooth'"),
        ({"method": "captum"}, r"'explainers\.e'.*'attr' is a required property"),
        ({"method": "cam", "cam": "RandomCAM"}, r"'explainers\.e\.cam': 'RandomCAM' is not run \(a random control"),
        ({"method": "cam", "cam": "GradCAM", "options": {"k": 2}}, r"'explainers\.e\.options\.k'.*allowed: none"),
        (
            {"method": "lrp", "composite": "Epsilon"},
            r"'explainers\.e\.composite': 'Epsilon'; supported: BetaSmooth, DeconvNet",
        ),
        ({"method": "lrp", "canonizer": "vgg"}, r"'explainers\.e\.canonizer': 'vgg' is not allowed"),
        (
            {"method": "lrp", "composite": "EpsilonPlus", "options": {"gamma": 0.25}},
            r"options\.gamma'.*allowed: "
            r"epsilon, stabilizer",
        ),
    ],
)
def test_config_refuses_bad_field_entries_naming_the_key(repo, entry, match):
    from fudbench.config.validate import ConfigError, validate_config

    cfg = resolve_config([repo / "config/smoke.yaml"])
    cfg["explainers"]["e"] = entry
    with pytest.raises(ConfigError, match=match):
        validate_config(cfg, repo / "config/schema.yaml")


def test_config_accepts_field_entries(repo):
    from fudbench.config.validate import validate_config

    cfg = resolve_config([repo / "config/smoke.yaml"])
    del cfg["models"]["classifiers"]["vit"]  # LRP is refused beside a ViT (tests/test_bad_inputs.py)
    cfg["analysis"]["timing"]["model"] = "cnn"
    cfg["explainers"].update(
        {
            "dl": {"method": "captum", "attr": "DeepLift", "baseline": "mean"},
            "occ": {"method": "captum", "attr": "Occlusion", "settings": {"sliding_window_shapes": [3, 2, 2]}},
            "sg": {"method": "captum", "attr": "Saliency", "noise_tunnel": {"nt_samples": 4, "stdevs": 0.1}},
            "gc": {"method": "cam", "target_layer": None},
            "lrp": {},
            "box": {"method": "lrp", "composite": "EpsilonGammaBox"},
        }
    )
    validate_config(cfg, repo / "config/schema.yaml")


def test_direct_construction_refuses_the_same_problems():
    with pytest.raises(ValueError, match=r"explainers\.captum\.settings\.n_stepz"):
        build_explainer("captum", {"attr": "IntegratedGradients", "settings": {"n_stepz": 3}})
    with pytest.raises(ValueError, match=r"unknown setting\(s\) \['layer'\]"):
        build_explainer("cam", {"layer": "x"})


# --- each adapter equals the library called directly -------------------------------------------------------------


def test_captum_deterministic_methods_equal_captum(batch):
    import captum.attr

    model, x, y = batch
    a = build_explainer("captum", {"attr": "DeepLift", "baseline": "mean"}).explain(model, x, y)
    xg = x.clone().requires_grad_(True)
    b = captum.attr.DeepLift(model).attribute(xg, baselines=x.mean((2, 3), keepdim=True).expand_as(x), target=y)
    torch.testing.assert_close(a, b.detach())
    a = build_explainer(
        "captum", {"attr": "Occlusion", "settings": {"sliding_window_shapes": [3, 2, 2], "strides": [3, 2, 2]}}
    ).explain(model, x, y)
    b = captum.attr.Occlusion(model).attribute(
        x, sliding_window_shapes=(3, 2, 2), strides=(3, 2, 2), baselines=torch.zeros_like(x), target=y
    )
    torch.testing.assert_close(a, b)
    a = build_explainer("captum", {"attr": "FeatureAblation", "feature_patch": 4}).explain(model, x, y)
    mask = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1]] * 4 + [[2, 2, 2, 2, 3, 3, 3, 3]] * 4).view(1, 1, 8, 8)
    b = captum.attr.FeatureAblation(model).attribute(x, baselines=torch.zeros_like(x), target=y, feature_mask=mask)
    torch.testing.assert_close(a, b)


def test_captum_random_methods_equal_captum_under_the_images_seed(batch):
    import captum.attr

    model, x, y = batch
    settings = {"attr": "GradientShap", "baseline": "references", "n_baselines": 4, "settings": {"n_samples": 3}}
    method = build_explainer("captum", settings)
    method.prepare(x)
    a = method.explain(model, x, y, seeds=[7, 8, 9])
    for i, seed in enumerate([7, 8, 9]):
        refs = x[torch.randint(3, (4,), generator=torch.Generator().manual_seed(seed))]
        torch.manual_seed(seed), np.random.seed(seed)
        b = captum.attr.GradientShap(model).attribute(
            x[i : i + 1].clone().requires_grad_(True), baselines=refs, n_samples=3, target=y[i : i + 1]
        )
        torch.testing.assert_close(a[i : i + 1], b.detach())
    single = torch.cat([method.explain(model, x[i : i + 1], y[i : i + 1], seeds=[s]) for i, s in enumerate([7, 8, 9])])
    torch.testing.assert_close(a, single)
    assert not torch.allclose(a, method.explain(model, x, y, seeds=[1, 2, 3]))


def test_noise_tunnel_is_seeded_per_image_and_leaves_the_callers_random_state(batch):
    import captum.attr

    model, x, y = batch
    method = build_explainer("captum", {"attr": "Saliency", "noise_tunnel": {"nt_samples": 4, "stdevs": 0.1}})
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = method.explain(model, x, y, seeds=[4, 5, 6])
    assert torch.rand(1) == before  # the caller's stream is untouched
    with seeded(5, x.device):
        b = captum.attr.NoiseTunnel(captum.attr.Saliency(model)).attribute(
            x[1:2].clone().requires_grad_(True), target=y[1:2], nt_samples=4, stdevs=0.1
        )
    torch.testing.assert_close(a[1:2], b)
    torch.testing.assert_close(a[1:2], method.explain(model, x[1:2], y[1:2], seeds=[5]))


def test_cam_equals_pytorch_grad_cam(batch):
    from pytorch_grad_cam import GradCAM, ScoreCAM
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget

    model, x, y = batch
    for name, cls in (("GradCAM", GradCAM), ("ScoreCAM", ScoreCAM)):
        a = build_explainer("cam", {"cam": name}).explain(model, x, y)
        cam = cls(model=model, target_layers=[model.net.features])
        b = cam(input_tensor=x.clone().requires_grad_(True), targets=[ClassifierOutputTarget(int(t)) for t in y])
        cam.activations_and_grads.release()
        assert a.shape == x.shape and torch.equal(a[:, 0], a[:, 2])
        torch.testing.assert_close(a[:, 0], torch.from_numpy(b))
    single = torch.cat([build_explainer("cam", {}).explain(model, x[i : i + 1], y[i : i + 1]) for i in range(3)])
    torch.testing.assert_close(build_explainer("cam", {}).explain(model, x, y), single)


def test_lrp_equals_zennit_on_the_network_in_normalised_space(batch):
    from zennit.attribution import Gradient
    from zennit.canonizers import SequentialMergeBatchNorm
    from zennit.composites import EpsilonGammaBox

    model, x, y = batch
    a = build_explainer("lrp", {"composite": "EpsilonGammaBox", "options": {"gamma": 0.5}}).explain(model, x, y)
    z = (x - 0.5) / 0.25
    composite = EpsilonGammaBox(
        low=torch.full_like(z, -2.0), high=torch.full_like(z, 2.0), gamma=0.5, canonizers=[SequentialMergeBatchNorm()]
    )
    with Gradient(model=model.net, composite=composite) as attributor:
        out, b = attributor(z.clone().requires_grad_(True), lambda o: (o * torch.eye(4)[y]).detach())
    torch.testing.assert_close(a, b)
    single = torch.cat([build_explainer("lrp", {}).explain(model, x[i : i + 1], y[i : i + 1]) for i in range(3)])
    torch.testing.assert_close(build_explainer("lrp", {}).explain(model, x, y), single, atol=1e-6, rtol=1e-4)
    # the weights are restored after the canonizer merged the batch norms
    torch.testing.assert_close(model(x), model.net(z))


# --- a model whose evidence is known -----------------------------------------------------------------------------


class _Region(torch.nn.Module):
    """Keeps one image region of a feature map (rows, cols 0..3 of 8), zero elsewhere."""

    def forward(self, h):
        mask = torch.zeros_like(h)
        mask[..., :4, :4] = 1
        return h * mask


class _Pool(torch.nn.Module):
    def forward(self, h):
        return h.sum(dim=(2, 3))


def _region_model():
    """Class 0 = the summed activation of the top-left quarter; class 1 = minus that."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    head = torch.nn.Linear(4, 2)
    with torch.no_grad():
        conv.weight.abs_(), conv.bias.zero_()
        head.weight.copy_(torch.tensor([[1.0] * 4, [-1.0] * 4])), head.bias.zero_()
    net = torch.nn.Sequential(conv, torch.nn.ReLU(), _Region(), _Pool(), head)
    from fudbench.models.classifiers import Classifier

    return Classifier(net, MEAN, STD).eval().requires_grad_(False)


@pytest.mark.parametrize(
    "name,settings",
    [
        ("cam", {"cam": "GradCAM", "target_layer": "2"}),
        ("cam", {"cam": "LayerCAM", "target_layer": "net.2"}),
        ("lrp", {"composite": "EpsilonPlusFlat"}),
        ("lrp", {"composite": "EpsilonGammaBox"}),
        ("captum", {"attr": "DeepLift"}),
    ],
)
def test_the_maps_mass_lies_in_the_region_the_model_reads(name, settings):
    model = _region_model()
    x = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(3)) * 0.5 + 0.5  # bright: positive logit
    a = build_explainer(name, settings).explain(model, x, torch.tensor([0, 0])).abs().sum(1)
    inside = a[:, :5, :5].flatten(1).sum(1) / a.flatten(1).sum(1)  # the region and the 3x3 conv's reach
    assert (inside > 0.99).all(), inside
    assert (a[:, :4, :4].flatten(1).sum(1) / a.flatten(1).sum(1) > 0.8).all()


# --- the Python API and the architectures ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method,settings", [("captum", {"attr": "DeepLift"}), ("cam", {"cam": "EigenCAM"}), ("lrp", {})]
)
def test_fudbench_explain_runs_each_method(batch, method, settings):
    import fudbench

    model, x, y = batch
    maps = fudbench.explain(model, x, y, method, **settings)
    assert maps.shape == x.shape and torch.isfinite(maps).all() and maps.abs().sum() > 0


def test_fudbench_explain_names_a_bad_setting(batch):
    import fudbench
    from fudbench.core.checks import InputError

    model, x, y = batch
    with pytest.raises(InputError, match=r"settings\['attr'\]|attr.*'Nope' is not run"):
        fudbench.explain(model, x, y, "captum", attr="Nope")


@pytest.mark.parametrize(
    "cfg,layer",
    [
        ({"arch": "small_cnn", "width": 4}, "net.features"),
        ({"arch": "small_vit", "patch_size": 4, "dim": 16, "depth": 2, "heads": 2}, "blocks.1.norm1"),
        ({"arch": "small_vit", "patch_size": 4, "dim": 16, "depth": 2, "heads": 2, "stem": "conv"}, "blocks.1.norm1"),
    ],
)
def test_auto_target_layer_on_the_workflows_classifiers(cfg, layer):
    from fudbench.explainers.cam import auto_target_layer

    torch.manual_seed(0)
    model = build_classifier(cfg, 4, 16, MEAN, STD).eval()
    x = torch.rand(2, 3, 16, 16)
    assert auto_target_layer(model, x)[0] == layer
    # element-wise Grad-CAM: a random network's channel weights may all cancel, but the
    # gradient must reach the layer (for ViTs, the patch tokens)
    a = build_explainer("cam", {"cam": "GradCAMElementWise"}).explain(model, x, torch.tensor([0, 1]))
    assert a.shape == x.shape and (a.flatten(1).amax(1) > 0).all()


def test_lrp_refuses_vits_before_any_work():
    torch.manual_seed(0)
    vit = build_classifier({"arch": "small_vit", "patch_size": 4, "dim": 16, "depth": 1, "heads": 2}, 4, 16, MEAN, STD)
    with pytest.raises(
        ValueError,
        match=r"lrp: SmallViT has a LayerNorm \('blocks\.0\.norm1'\); zennit has no LRP "
        r"rules for attention",
    ):
        build_explainer("lrp", {}).explain(vit.eval(), torch.rand(1, 3, 16, 16), torch.tensor([0]))


@pytest.mark.parametrize(
    "arch,layer", [("torchvision_resnet50", "net.layer4"), ("torchvision_vit_b_16", "encoder.layers.11.ln_1")]
)
def test_auto_target_layer_on_torchvision_models(arch, layer):
    from fudbench.explainers.cam import auto_target_layer

    torch.manual_seed(0)
    model = build_classifier({"arch": arch}, 1000, 224, MEAN, STD).eval().requires_grad_(False)
    if arch.endswith("vit_b_16"):  # torchvision zero-initialises the head: no gradient without weights
        torch.nn.init.normal_(model.net.heads.head.weight, std=0.02)
    x = torch.rand(1, 3, 224, 224)
    assert auto_target_layer(model, x)[0] == layer
    a = build_explainer("cam", {"cam": "GradCAMElementWise"}).explain(model, x, torch.tensor([3]))
    assert a.shape == x.shape and a.amax() > 0


def test_lrp_on_a_torchvision_resnet_uses_its_canonizer_and_conserves_the_logit():
    import torchvision

    from fudbench.explainers.lrp import canonizers
    from fudbench.models.classifiers import Classifier

    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None, num_classes=10)
    model = Classifier(net, MEAN, STD).eval().requires_grad_(False)
    assert type(canonizers(net, "auto")[0]).__name__ == "ResNetCanonizer"
    x = torch.rand(1, 3, 64, 64)
    a = build_explainer("lrp", {"composite": "EpsilonPlus"}).explain(model, x, torch.tensor([2]))
    logit = model(x)[0, 2]
    assert a.shape == x.shape
    assert abs(float(a.sum() - logit)) < 0.05 * abs(float(logit)) + 1e-3
