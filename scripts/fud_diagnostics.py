"""FUD's sampler from the inside, for one model (Figs. 3, 5, 6 and Table 5).

- traces at the configured guidance switch for every ratio (Figs. 3, 5, 6);
- the same on a few ratios for each switch point of the sweep (Fig. 3, right);
- hard- vs soft-constraint samples at one kept fraction (Table 5).
Masks come from one explainer's attributions of shard 0.
"""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
import numpy as np
import pandas as pd
import torch

from fudbench.analysis.fud_diagnostics import diagnostics_frame, keep_masks, sample_seeds, trace_fud
from fudbench.data.shards import load_eval_shard
from fudbench.core.device import resolve_device
from fudbench.evaluators import build_evaluator
from fudbench.core.io import load_npz, write_npz, write_parquet
from fudbench.workflow.jobs import setup_job
from fudbench.models.classifiers import load_classifier
from fudbench.core.seeding import derive_seed

log = setup_job(snakemake)
p, inp, model_name = snakemake.params, snakemake.input, snakemake.wildcards.model
diag, fud, evaluation = p.diagnostics, p.fud, p.evaluation
device = resolve_device(p.job["device"])

model = load_classifier(inp.model, device)
data = load_eval_shard(inp.images, 0, p.shard_size)
attr = load_npz(inp.attributions, made_by="explain")
n = diag["n_images"]
if n > len(data["ids"]):  # the config check refuses this at parse time; never cap silently
    raise ValueError(
        f"config key 'analysis.diagnostics.n_images': {n} images requested, but shard 0 holds {len(data['ids'])}"
    )
ids = data["ids"][:n]
x = torch.from_numpy(data["images"][:n]).to(device)
y = torch.from_numpy(attr["targets"][:n]).to(device)
a = torch.from_numpy(attr["attributions"][:n]).to(device)
key = (p.job["seed"], "fud_diagnostics", model_name, diag["explainer"])
order_seeds = [derive_seed(*key, "order", int(i)) for i in ids]


def run(settings: dict, ratios):
    ev = build_evaluator("fud", settings, evaluation, {"score_model": inp.score_model}, device)
    imputer = ev.curves[0][1]
    masks = keep_masks(a, ratios, evaluation["reduction"], order_seeds)  # (N, R, 1, H, W)
    r = len(ratios)
    xs, ys = x.repeat_interleave(r, 0), y.repeat_interleave(r, 0)
    seeds = sample_seeds(key, ids, ratios)
    final, l2, e, scored = trace_fud(
        imputer, model, xs, ys, masks.flatten(0, 1).to(device), seeds, settings["batch_size"]
    )
    timesteps = imputer.timesteps
    frame = diagnostics_frame(model_name, settings["guidance_start"], ratios, ids, timesteps, l2, e, scored)
    return frame, final.view(n, r, *x.shape[1:])


frames = []
main, _ = run(fud, evaluation["ratios"])
frames.append(main.assign(run="main"))
for start in diag["sweep_guidance_start"]:
    if start == fud["guidance_start"]:
        frames.append(main[main["kept"].isin(diag["sweep_ratios"])].assign(run="sweep"))
        continue
    frame, _ = run({**fud, "guidance_start": start}, diag["sweep_ratios"])
    frames.append(frame.assign(run="sweep"))
log.info(
    "traced %d images x %d ratios, sweep over guidance_start %s",
    n,
    len(evaluation["ratios"]),
    diag["sweep_guidance_start"],
)

constraint = {}
for name in ("hard", "soft"):
    settings = {**fud, "constraint": name, "soft_sigma": diag["soft_sigma"]}
    _, samples = run(settings, [diag["constraint_kept"]])
    constraint[name] = samples[:, 0].cpu().numpy().astype(np.float32)

write_parquet(snakemake.output.traces, pd.concat(frames, ignore_index=True))
write_npz(
    snakemake.output.constraint,
    ids=ids,
    hard=constraint["hard"],
    soft=constraint["soft"],
    kept=np.float64(diag["constraint_kept"]),
    soft_sigma=np.float64(diag["soft_sigma"]),
)
