"""Train the diffusion score model (DDPM, epsilon prediction, EMA weights)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
from fudbench.data.splits import load_split
from fudbench.core.device import resolve_device
from fudbench.core.fingerprint import file_sha256, fingerprint
from fudbench.core.io import write_json
from fudbench.workflow.jobs import setup_job
from fudbench.models.score import build_unet, ddpm_scheduler, save_score_model, schedule_config
from fudbench.models.training import train_score_model
from fudbench.core.seeding import derive_seed, seed_everything

log = setup_job(snakemake)
p = snakemake.params
cfg = p.score_model
train_x, _, _ = load_split(snakemake.input.train)
# Seed before building: the initial weights come from torch's global RNG,
# whose default seed differs between processes.
seed_everything(derive_seed(p.job["seed"], "init", "score_model"))
unet = build_unet(cfg, train_x.shape[-1])
n_params = sum(t.numel() for t in unet.parameters())
log.info("UNet2DModel with %.2fM parameters", n_params / 1e6)
info = train_score_model(
    unet,
    ddpm_scheduler(schedule_config(cfg)),
    train_x,
    cfg["train"],
    derive_seed(p.job["seed"], "train", "score_model"),
    resolve_device(p.job["device"]),
    ema_decay=cfg["ema_decay"],
)
info["parameters"] = n_params
save_score_model(snakemake.output.model, unet.cpu(), cfg, train_x.shape[-1], info)
write_json(
    snakemake.output.manifest,
    {
        "sha256": file_sha256(snakemake.output.model),
        "training_fingerprint": fingerprint(p.training_inputs),
        "training_inputs": p.training_inputs,
        "metrics": info,
    },
)
