"""guided-diffusion's 256x256_diffusion_uncond.pt -> UNet2DModel weights + pointer checkpoint."""
import _fudbench_path  # noqa: F401  (puts this checkout's src/ first on sys.path)
from fudbench.io import write_json
from fudbench.jobs import setup_job
from fudbench.models.guided_diffusion import ADM256, convert_checkpoint, schedule, verify_checkpoint
from fudbench.models.score import save_score_model_pointer

log = setup_job(snakemake)
gd, out = snakemake.params.guided_diffusion, snakemake.output
digest = verify_checkpoint(gd["checkpoint"], gd.get("sha256"), gd["url"])
if not gd.get("sha256"):
    log.warning("no sha256 in config: %s has sha256 %s; record it in "
                "models.score_model.guided_diffusion.sha256", gd["checkpoint"], digest)
order = gd.get("attention_order", "legacy")
config = convert_checkpoint(gd["checkpoint"], out.weights, ADM256, order, digest)
source = {"checkpoint": gd["checkpoint"], "sha256": digest, "url": gd["url"], "attention_order": order}
save_score_model_pointer(out.model, out.weights, config, schedule(), source)
write_json(out.manifest, {"source": source, "unet_config": config, "adm": ADM256.to_dict()})
log.info("converted %s (sha256 %s) to %s", gd["checkpoint"], digest, out.weights)
