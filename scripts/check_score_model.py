"""Score-model quality gate: unconditional samples vs real test images.

A U-Net of another resolution than the images (guided-diffusion's 256 px for
224 px classifiers) samples at its own size; the samples are then resized to
the classifiers' size, as FUD's resolution bridge does."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import json

import numpy as np

from fudbench.data.splits import load_split
from fudbench.core.device import resolve_device
from fudbench.imputers.resolution import resize_images
from fudbench.core.io import write_json, write_npz
from fudbench.workflow.jobs import setup_job
from fudbench.models.classifiers import load_classifier
from fudbench.imputers.diffusion.quality import score_model_report, unconditional_samples
from fudbench.models.score import load_score_model

log = setup_job(snakemake)
p = snakemake.params
device = resolve_device(p.job["device"])
unet, schedule = load_score_model(snakemake.input.score_model, device)
real, _, _ = load_split(snakemake.input.test)
class_names = json.load(open(snakemake.input.classes))
size = unet.config.sample_size
samples = unconditional_samples(
    unet,
    schedule,
    p.gates["n_samples"],
    size,
    p.gates["sample_steps"],
    p.job["seed"],
    device,
    batch_size=64 if size <= 64 else 16,
    amp_dtype=p.precision["amp_dtype"],
    channels_last=bool(p.precision["channels_last"]),
)
if size != real.shape[-1]:
    samples = resize_images(samples, real.shape[-1]).clamp(0, 1)  # antialiasing can overshoot [0, 1]
classifiers = {m: load_classifier(path, device) for m, path in zip(p.models, snakemake.input.classifiers)}
report = score_model_report(samples, real, classifiers, class_names)
report["sample_steps"] = p.gates["sample_steps"]
report["sampled_at"] = size
for m, r in report["classifiers"].items():
    print(
        f"[gate] score model under {m}: energy AUROC samples vs real = {r['auroc']:.3f} "
        f"(0.5 = indistinguishable), FPR95 {r['fpr95']:.3f}",
        flush=True,
    )
write_json(snakemake.output.report, report)
write_npz(snakemake.output.samples, samples=(samples.numpy() * 255).round().astype(np.uint8))
