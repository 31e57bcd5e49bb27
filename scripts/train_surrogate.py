"""Fine-tune F-Fidelity's surrogate of one classifier (random removal of up to beta of the pixels)."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
from fudbench.data.splits import load_split
from fudbench.core.device import resolve_device
from fudbench.core.io import write_json
from fudbench.workflow.jobs import setup_job
from fudbench.models.checkpoints import load_checkpoint
from fudbench.models.classifiers import load_classifier, save_classifier
from fudbench.models.surrogate import finetune_surrogate, surrogate_report
from fudbench.core.seeding import derive_seed

log = setup_job(snakemake)
p, w = snakemake.params, snakemake.wildcards
device = resolve_device(p.job["device"])
ckpt = load_checkpoint(snakemake.input.classifier, kind="classifier")
original = load_classifier(snakemake.input.classifier, device)
train_x, train_y, _ = load_split(snakemake.input.train)
val_x, val_y, _ = load_split(snakemake.input.val)
beta, ft = p.ffid["beta"], p.ffid["finetune"]

surrogate, info = finetune_surrogate(
    original,
    train_x,
    train_y,
    beta=beta,
    epochs=ft["epochs"],
    lr=ft["lr"],
    batch_size=ft["batch_size"],
    weight_decay=ft["weight_decay"],
    seed=derive_seed(p.job["seed"], "surrogate", w.model),
    device=device,
)
report = surrogate_report(original, surrogate, val_x, val_y, beta, derive_seed(p.job["seed"], "surrogate_check"))
metrics = {"model": w.model, "finetune": ft, **info, "validation": report}
log.info("surrogate of %s: validation %s", w.model, report)
save_classifier(snakemake.output.model, surrogate.cpu(), ckpt["cfg"], ckpt["n_classes"], ckpt["image_size"], metrics)
write_json(snakemake.output.metrics, metrics)
