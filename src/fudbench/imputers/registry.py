"""Imputer names -> builder ("module:attribute"), resolved lazily so that config
validation and the analysis jobs can list the names without importing torch
(this module imports nothing; the package's __init__ loads classes on use).

Each builder is called as builder(options, references, assets, device); see
fudbench.imputers.factory.build_imputer.

Two names say which mean they fill with, beside the short names kept for
configs and results written before them (ALIASES): `dataset_mean` = `mean`
(the per-channel mean of the reference images, i.e. of the data set) and
`image_mean` = `sample_average` (each image's own per-channel mean). A paper
that says "filled with the mean" usually means one of the two: name it.
"""

IMPUTERS = {
    "zero": "fudbench.imputers.factory:zero",
    "blur": "fudbench.imputers.factory:blur",
    "mean": "fudbench.imputers.factory:mean",
    "dataset_mean": "fudbench.imputers.factory:mean",
    "classifier_mean": "fudbench.imputers.factory:classifier_mean",
    "sample_average": "fudbench.imputers.factory:sample_average",
    "image_mean": "fudbench.imputers.factory:sample_average",
    "uniform": "fudbench.imputers.factory:uniform",
    "gaussian": "fudbench.imputers.factory:gaussian",
    "train_set": "fudbench.imputers.factory:train_set",
    "histogram": "fudbench.imputers.factory:histogram",
    "telea": "fudbench.imputers.factory:telea",
    "noisy_linear": "fudbench.imputers.factory:noisy_linear",
    "box_blur": "fudbench.imputers.factory:box_blur",
    "max_distance": "fudbench.imputers.factory:max_distance",
    "diffusion_plain": "fudbench.imputers.factory:diffusion_plain",
}
# Imputers (short names) that put the same values in for the same removed pixels, drawing no
# noise: a score under them sees only the map's ranking (CurveSpec.ranking_only), so a map and its
# rescaled copy tie. One list for every evaluator (fudbench.evaluators.imputing.deterministic_fill).
DETERMINISTIC = frozenset(
    {"zero", "blur", "mean", "classifier_mean", "sample_average", "telea", "box_blur", "max_distance"}
)
# descriptive name -> the short name it equals (same builder, options and seeds)
ALIASES = {"dataset_mean": "mean", "image_mean": "sample_average"}


def canonical(name: str) -> str:
    """The short name of an imputer spelled by its descriptive alias (itself otherwise)."""
    return ALIASES.get(name, name)
