"""guided-diffusion's 256x256_diffusion_uncond.pt -> UNet2DModel weights + pointer checkpoint."""

import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
from fudbench.core.io import write_json
from fudbench.workflow.jobs import setup_job
from fudbench.models.guided_diffusion import ADM256, ADMConfig, convert_checkpoint, schedule, verify_checkpoint
from fudbench.models.score import save_score_model_pointer

log = setup_job(snakemake)
gd, out = snakemake.params.guided_diffusion, snakemake.output
digest = verify_checkpoint(gd["checkpoint"], gd.get("sha256"), gd["url"])
if not gd.get("sha256"):
    log.warning(
        "no sha256 in config: %s has sha256 %s; record it in models.score_model.guided_diffusion.sha256",
        gd["checkpoint"],
        digest,
    )
order = gd.get("attention_order", "legacy")
# a reduced architecture only for stand-in checkpoints (fudbench.assets.stand_ins); the released model otherwise
adm = ADMConfig.from_dict({**ADM256.to_dict(), **gd["architecture"]}) if gd.get("architecture") else ADM256
if adm != ADM256:
    log.warning(
        "converting a stand-in checkpoint of a reduced ADM (%s), not the released 256x256 model", gd["architecture"]
    )
config = convert_checkpoint(gd["checkpoint"], out.weights, adm, order, digest)
source = {"checkpoint": gd["checkpoint"], "sha256": digest, "url": gd["url"], "attention_order": order}
save_score_model_pointer(out.model, out.weights, config, schedule(), source)
write_json(out.manifest, {"source": source, "unet_config": config, "adm": adm.to_dict()})
log.info("converted %s (sha256 %s) to %s", gd["checkpoint"], digest, out.weights)
