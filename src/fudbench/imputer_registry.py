"""Imputer names -> builder ("module:attribute"), resolved lazily so that config
validation and the analysis jobs can list the names without importing torch.

Each builder is called as builder(options, references, assets, device); see
fudbench.imputers.factory.build_imputer.
"""

IMPUTERS = {
    "zero": "fudbench.imputers.factory:zero",
    "blur": "fudbench.imputers.factory:blur",
    "mean": "fudbench.imputers.factory:mean",
    "classifier_mean": "fudbench.imputers.factory:classifier_mean",
    "sample_average": "fudbench.imputers.factory:sample_average",
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
