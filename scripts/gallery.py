"""Keep a few images' intermediate samples (shard 0) for qualitative figures."""
from fudbench.io import write_npz
from fudbench.jobs import setup_job
from fudbench.pipeline import gallery_subset

setup_job(snakemake)
write_npz(snakemake.output[0], **gallery_subset(snakemake.input.images, snakemake.input.attributions,
                                                snakemake.input.samples, snakemake.params.n_images))
