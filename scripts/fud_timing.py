"""Table 10: wall time of FUD per sample at each DDIM step count of analysis.timing.steps.

As the paper's Table 10 (batch 1): each timed fill is one sample, one image at
one keep ratio (the middle one of evaluation.ratios; a fill's cost does not
depend on which pixels are kept). Until issue 47's second round each fill held
all nine ratios of an image in one batch, nine times the work per row and not
the paper's statistic; the 550 steps of the default's ten counts at batch 9
were about 25 CPU s, at batch 1 about 5.

One job for every step count (issue 47): the ten jobs of one count each paid
the process start-up, the imports (torch, diffusers), the U-Net's and the
classifier's loads and a warm-up pass, about two thirds of their time on an
AVX2-only CPU, for about half a minute of sampling in all. Here they are paid
once: the sampler is built once and each step count runs the same U-Net
(`with_steps`, sharing a compiled forward where compilation is on), after one
untimed 1-step warm-up pass (first-call allocations and kernel selection depend
on the shapes, not on the step count). Each (step count, image) is timed once,
end to end: one row per (steps, image) with its seconds; Table 10 reports their
mean, std, min and max over the images (scripts/table10_timing.py).
"""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import time

import pandas as pd
import torch

from fudbench.analysis.fud_diagnostics import keep_masks, sample_seeds
from fudbench.data.shards import load_eval_shard
from fudbench.core.device import describe_device, resolve_device
from fudbench.evaluators import build_evaluator
from fudbench.imputers.base import ImputeContext
from fudbench.core.io import load_npz, write_parquet
from fudbench.workflow.jobs import setup_job
from fudbench.models.classifiers import load_classifier
from fudbench.core.seeding import derive_seed

log = setup_job(snakemake)
p, inp = snakemake.params, snakemake.input
timing = p.timing
steps_list = [int(s) for s in timing["steps"]]
device = resolve_device(p.job["device"])
model = load_classifier(inp.model, device)
assets = {"score_model": inp.score_model}


def sampler_for(steps: int, base=None):
    """FUD's sampler at `steps` DDIM steps: the base sampler's `with_steps` where it has one (the same
    U-Net, loaded once), else a sampler built for that count."""
    if base is not None and hasattr(base, "with_steps"):
        return base.with_steps(steps)
    return build_evaluator("fud", {**p.fud, "steps": steps}, p.evaluation, assets, device).curves[0][1]


base = sampler_for(steps_list[0])
data = load_eval_shard(inp.images, 0, p.shard_size)
attr = load_npz(inp.attributions, made_by="explain")
n = timing["n_images"]
if n > len(data["ids"]):  # the config check refuses this at parse time; never cap silently
    raise ValueError(
        f"config key 'analysis.timing.n_images': {n} images requested, but shard 0 holds {len(data['ids'])}"
    )
ratios = [p.evaluation["ratios"][len(p.evaluation["ratios"]) // 2]]  # one sample per fill: batch 1
key = (p.job["seed"], "fud_timing", timing["model"])
x = torch.from_numpy(data["images"][:n]).to(device)
y = torch.from_numpy(attr["targets"][:n]).to(device)
masks = keep_masks(
    torch.from_numpy(attr["attributions"][:n]),
    ratios,
    p.evaluation["reduction"],
    [derive_seed(*key, "order", int(i)) for i in data["ids"][:n]],
).to(device)


def one_image(i: int, sampler) -> float:
    """One sample of image i (batch 1), timed end to end."""
    ctx = ImputeContext(
        classifier=model,
        target=y[i : i + 1].repeat(len(ratios)),
        seeds=sample_seeds(key, data["ids"][i : i + 1], ratios),
    )
    xb = x[i : i + 1].repeat(len(ratios), 1, 1, 1)
    t0 = time.perf_counter()
    sampler.fill(xb, masks[i], ctx)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


# Warm-up, once: one step (with guidance) through the shared U-Net. A sampler without
# with_steps is rebuilt per count and warmed up with its own first image instead.
shared = hasattr(base, "with_steps")
one_image(0, base.with_steps(1) if shared else base)
rows = []
for steps in steps_list:
    sampler = sampler_for(steps, base)
    if not shared and steps != steps_list[0]:
        one_image(0, sampler)  # its own U-Net: warmed up like the first
    seconds = [one_image(i, sampler) for i in range(n)]
    rows.append(
        pd.DataFrame(
            {
                "steps": steps,
                "image": data["ids"][:n],
                "seconds": seconds,
                "n_ratios": len(ratios),
                "ratio": ratios[0],
                "device": describe_device(device),
            }
        )
    )
    log.info(
        "%d DDIM steps: %.3f s per sample (batch 1, keep ratio %g, mean of %d images) on %s",
        steps,
        sum(seconds) / n,
        ratios[0],
        n,
        describe_device(device),
    )
write_parquet(snakemake.output[0], pd.concat(rows, ignore_index=True))
