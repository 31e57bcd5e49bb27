"""Table 10: wall time of FUD per image at one DDIM step count (one job per count;
Snakemake's benchmark: file records the whole job beside it)."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import time

import pandas as pd
import torch

from fudbench.analysis.fud_diagnostics import keep_masks, sample_seeds
from fudbench.data.shards import load_eval_shard
from fudbench.device import describe_device, resolve_device
from fudbench.evaluators import build_evaluator
from fudbench.imputers.base import ImputeContext
from fudbench.io import load_npz, write_parquet
from fudbench.jobs import setup_job
from fudbench.models.classifiers import load_classifier
from fudbench.seeding import derive_seed

log = setup_job(snakemake)
p, inp = snakemake.params, snakemake.input
steps, timing = int(snakemake.wildcards.steps), p.timing
device = resolve_device(p.job["device"])
model = load_classifier(inp.model, device)
evaluator = build_evaluator("fud", {**p.fud, "steps": steps}, p.evaluation, {"score_model": inp.score_model}, device)
imputer = evaluator.curves[0][1]
data = load_eval_shard(inp.images, 0, p.shard_size)
attr = load_npz(inp.attributions, made_by="explain")
n = timing["n_images"]
if n > len(data["ids"]):  # the config check refuses this at parse time; never cap silently
    raise ValueError(f"config key 'analysis.timing.n_images': {n} images requested, but shard 0 holds "
                     f"{len(data['ids'])}")
ratios = p.evaluation["ratios"]
key = (p.job["seed"], "fud_timing", timing["model"])
x = torch.from_numpy(data["images"][:n]).to(device)
y = torch.from_numpy(attr["targets"][:n]).to(device)
masks = keep_masks(torch.from_numpy(attr["attributions"][:n]), ratios, p.evaluation["reduction"],
                   [derive_seed(*key, "order", int(i)) for i in data["ids"][:n]]).to(device)


def one_image(i: int, sampler=imputer) -> float:
    """All ratios of image i in one batch, timed end to end."""
    ctx = ImputeContext(classifier=model, target=y[i:i + 1].repeat(len(ratios)),
                        seeds=sample_seeds(key, data["ids"][i:i + 1], ratios))
    xb = x[i:i + 1].repeat(len(ratios), 1, 1, 1)
    t0 = time.perf_counter()
    sampler.fill(xb, masks[i], ctx)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


# Warm-up: first-call allocations and kernel selection are not FUD's cost. They
# depend on the shapes, not on the step count, so one step (with guidance) does.
one_image(0, imputer.with_steps(1) if hasattr(imputer, "with_steps") else imputer)
seconds = [one_image(i) for i in range(n)]
frame = pd.DataFrame({"steps": steps, "image": data["ids"][:n], "seconds": seconds, "n_ratios": len(ratios),
                      "device": describe_device(device)})
write_parquet(snakemake.output[0], frame)
log.info("%d DDIM steps: %.3f s per image (%d ratios each) on %s", steps, frame["seconds"].mean(), len(ratios),
         describe_device(device))
