"""The benchmarks run end to end at toy size, and count what they claim to count."""

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import fud_throughput  # noqa: E402


def test_fud_throughput_tiny_rows_and_flop_accounting(tmp_path):
    from torch.utils.flop_counter import FlopCounterMode

    from fudbench.models.guided_diffusion import build_adm_unet, diffusers_config

    csv = tmp_path / "t.csv"
    rows = fud_throughput.main(
        [
            "--tiny",
            "--device",
            "cpu",
            "--steps",
            "2",
            "4",
            "--batch-sizes",
            "1",
            "2",
            "--repeats",
            "1",
            "--csv",
            str(csv),
        ]
    )
    assert [(r["steps"], r["batch"]) for r in rows] == [(2, 1), (2, 2), (4, 1), (4, 2)]
    # the meta-device count equals a count on a real forward of the same U-Net
    # (attention through SDPA's math kernel: FlopCounterMode cannot see the fused CPU kernel)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    unet = build_adm_unet(diffusers_config(fud_throughput.TINY_ADM)).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        unet(torch.zeros(1, 3, 32, 32), torch.zeros(1, dtype=torch.long))
    f_unet = counter.get_total_flops()
    _, f_guidance = fud_throughput.model_flops(fud_throughput.TINY_ADM, "resnet50", 32)
    for r in rows:  # 1000-step schedule, guidance for t < 50: only t = 0 is guided at 2 and 4 steps
        assert r["tflop_per_sample"] * 1e12 == pytest.approx(r["steps"] * f_unet + f_guidance)
        assert r["seconds_per_sample"] > 0 and not r["oom"]
        assert r["tflops"] == pytest.approx(r["tflop_per_sample"] / r["seconds_per_sample"])
        assert math.isnan(r["pct_peak"])  # no peak for a CPU
    assert len(pd.read_csv(csv)) == 4


def test_adm256_costs_2_24_tflop_per_forward():
    f_unet, f_guidance = fud_throughput.model_flops(fud_throughput.ADM256, "resnet50", 224)
    assert f_unet / 1e12 == pytest.approx(2.24, abs=0.005)
    # ResNet-50: 4.1 GMAC = 8.2 GFLOP forward; the backward to the input (frozen weights) costs about as much
    assert f_guidance / 1e9 == pytest.approx(2 * 8.2, rel=0.05)


@pytest.mark.parametrize(
    "name,peak",
    [
        ("NVIDIA H100 80GB HBM3", 989.0),
        ("NVIDIA H100 PCIe", 756.0),
        ("NVIDIA H200", 989.0),
        ("NVIDIA A100-SXM4-80GB", 312.0),
        ("NVIDIA L40S", 362.0),
        ("Tesla T4", None),
    ],
)
def test_peak_table_keyed_by_device_name(monkeypatch, name, peak):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    assert fud_throughput.peak_tflops(torch.device("cuda")) == (name, peak)
    assert fud_throughput.peak_tflops(torch.device("cpu")) == ("CPU", None)


def test_explainer_cost_imagenet_tiny():
    import explainer_cost_imagenet as eci

    rows = eci.main(["--tiny", "--device", "cpu", "--images", "2", "--models", "resnet50", "--methods", "sm"])
    (row,) = rows
    f_fwd, f_bwd = eci.classifier_flops("resnet50", 32)
    assert (row["method"], row["forward"], row["backward"]) == ("sm", 1.0, 1.0)  # saliency: one pass each way
    assert row["tflop_per_image"] * 1e12 == pytest.approx(f_fwd + f_bwd)
    assert 0.8 * f_fwd < f_bwd < 1.3 * f_fwd  # backward to the input only (frozen weights) ~ 1 forward
    assert eci.imagenet_settings("isa", {"step_size": 100}, 64, tiny=False) == {"step_size": 5000}
    assert eci.imagenet_settings("ig", {"batch_size": 1024}, 64, tiny=True) == {"batch_size": 64}
    # one image, as the GPU suite runs it: EG still has a reference other than the image (H100, 2026-11-28)
    (eg,) = eci.main(["--tiny", "--device", "cpu", "--images", "1", "--models", "resnet50", "--methods", "eg"])
    assert eg["forward"] >= 1 and eg["backward"] >= 1


@pytest.fixture
def stand_in_run(tmp_path, tiny_unet):
    """A results directory with what fud_steps reads: one 8x8 classifier, a score
    model, 3 images and attributions of two explainers."""
    import yaml

    from fudbench.core.io import write_npz
    from fudbench.models.classifiers import build_classifier, save_classifier
    from fudbench.models.score import save_score_model

    res = tmp_path / "results" / "toy"
    torch.manual_seed(0)
    cnn_cfg = {"arch": "small_cnn", "width": 4}
    save_classifier(
        res / "models" / "cnn.pt", build_classifier(cnn_cfg, 4, 8, [0.5] * 3, [0.25] * 3).eval(), cnn_cfg, 4, 8, {}
    )
    unet, _ = tiny_unet
    score_cfg = {
        "block_out_channels": [8, 16],
        "attention": [False, True],
        "layers_per_block": 1,
        "num_train_timesteps": 100,
        "beta_schedule": "linear",
    }
    save_score_model(res / "models" / "score_model.pt", unet, score_cfg, 8, {})
    rng = np.random.default_rng(0)
    write_npz(
        res / "data" / "eval.npz",
        images=rng.integers(0, 256, (3, 3, 8, 8), dtype=np.uint8),
        labels=np.zeros(3, np.int64),
        masks=np.zeros((3, 8, 8), np.uint8),
    )
    for e in ("ig", "sm"):
        write_npz(
            res / "attributions" / "cnn" / e / "shard0.npz",
            attributions=rng.standard_normal((3, 3, 8, 8)).astype(np.float32),
            targets=np.array([0, 1, 2]),
            ids=np.arange(3),
            labels=np.zeros(3, np.int64),
        )
    # an overlay, as the benchmarks read it (fudbench.config.cli.script_config): these sections replace the default's
    cfg = {
        "run_name": "toy",
        "seed": 0,
        "models": {"classifiers": {"_replace": True, "cnn": cnn_cfg}},
        "evaluators": {
            "_replace": True,
            "fud": {
                "steps": 5,
                "guidance_scale": 4.0,
                "guidance_start": 0.5,
                "known": "clean",
                "clip_x0": True,
                "batch_size": 3,
            },
        },
        "evaluation": {"ratios": [0.1, 0.5, 0.9], "reduction": "abs_sum"},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    return tmp_path


def test_fud_steps_on_stand_ins(stand_in_run, monkeypatch):
    import fud_steps

    def fake_quality(samples, originals, metrics):
        """PSNR as its definition; SSIM stubbed (piq's import alone costs ~8 s)."""
        mse = ((samples - originals) ** 2).flatten(1).mean(1).double().numpy()
        return {"PSNR": 10 * np.log10(1 / (mse + 1e-8)), "SSIM": np.full(len(mse), 0.5)}

    monkeypatch.setattr(fud_steps, "quality_metrics", fake_quality)
    csv = stand_in_run / "steps.csv"
    table = fud_steps.main(
        [
            "--config",
            str(stand_in_run / "config.yaml"),
            "--results",
            str(stand_in_run / "results" / "toy"),
            "--explainers",
            "ig",
            "sm",
            "--steps",
            "4",
            "2",
            "--limit",
            "2",
            "--ratios",
            "0.7",
            "0.3",
            "--csv",
            str(csv),
        ]
    )
    assert list(zip(table["explainer"], table["steps"])) == [("ig", 2), ("ig", 4), ("sm", 2), ("sm", 4)]
    assert (table["n_samples"] == 4).all()
    ref = table[table["steps"] == 4]
    assert (ref[["d_auroc", "d_PSNR", "d_tau", "d_fud", "mad_ref"]] == 0).all().all()
    other = table[table["steps"] == 2]
    assert (other["mad_ref"] > 0).all()  # fewer steps: other samples
    np.testing.assert_allclose(other["d_PSNR"].to_numpy(), other["PSNR"].to_numpy() - ref["PSNR"].to_numpy())
    assert table["auroc"].between(0, 1).all() and table["tau"].between(-1, 1).all()
    pd.testing.assert_frame_equal(pd.read_csv(csv), table, check_dtype=False)


def test_fud_steps_names_missing_inputs(stand_in_run):
    import fud_steps

    with pytest.raises(SystemExit, match="attributions/cnn/la/shard0.npz"):
        fud_steps.main(
            [
                "--config",
                str(stand_in_run / "config.yaml"),
                "--results",
                str(stand_in_run / "results" / "toy"),
                "--explainers",
                "la",
            ]
        )


def test_paired_noise_bench_reevaluates_with_explainer_keyed_noise(stand_in_run, capsys):
    """Unpaired re-evaluation changes a stochastic evaluator's scores (Sensitivity-N's
    subsets) but not a deterministic one's (insertion / deletion)."""
    import paired_noise
    import yaml

    from fudbench.analysis.curves import per_image_scores
    from fudbench.workflow.pipeline import evaluate_explainers

    res = stand_in_run / "results" / "toy"
    cfg = yaml.safe_load((stand_in_run / "config.yaml").read_text())
    cfg["data"] = {"n_eval": 3, "shard_size": 3}
    cfg["explainers"] = {"ig": {}, "ig_d50": {"method": "degrade", "base": "ig", "fraction": 0.5}, "sm": {}}
    cfg["evaluators"] = {"sensn": {"n_subsets": 4, "batch_size": 64}, "insdel": {"n_steps": 4}}
    frames = []
    for ev in cfg["evaluators"]:
        for e in ("ig", "sm"):
            out = (res / f"records/cnn/{e}/{ev}.parquet", res / f"samples/cnn/{e}/{ev}.npz")
            evaluate_explainers(
                "cnn",
                ev,
                {e: (res / f"attributions/cnn/{e}/shard0.npz", *out)},
                model_path=res / "models/cnn.pt",
                images_path=res / "data/eval.npz",
                shard=0,
                shard_size=3,
                settings=cfg["evaluators"][ev],
                evaluation=cfg["evaluation"],
                assets={},
                seed=0,
                device="cpu",
            )
            frames.append(pd.read_parquet(out[0]))
    paired = per_image_scores(pd.concat(frames, ignore_index=True)).set_index(["explainer", "curve", "image"])
    unpaired = paired_noise.unpaired_scores(res, cfg, ["sensn", "insdel"], ["cnn"], ["ig", "sm"])
    unpaired = unpaired.set_index(["explainer", "curve", "image"])["score"]
    for curve in ("insertion", "deletion"):
        assert np.array_equal(unpaired.xs(curve, level="curve"), paired["score"].xs(curve, level="curve"))
    assert not np.allclose(
        unpaired.xs("sensitivity_n", level="curve"), paired["score"].xs("sensitivity_n", level="curve")
    )
