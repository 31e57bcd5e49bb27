"""fudbench: Faithfulness Under the Distribution and related attribution evaluations.

Library layout (see docs/architecture.md):
  data/        synthetic benchmark, manifests, shards
  models/      classifiers (normalisation inside), score models, training
  explainers/  attribution methods behind one interface + registry
  imputers/    how removed pixels are filled (zero, blur, diffusion/FUD)
  protocols/   which pixels are removed and how the response is recorded
  analysis/    curve scores, Kendall tau, energy OOD, bootstrap
  report/      LaTeX tables and figures
  api.py       fudbench.explain / fudbench.evaluate: your own model and images from Python
"""

__version__ = "0.1.0"


def __getattr__(name):
    """fudbench.explain and fudbench.evaluate (fudbench.api), imported on first use:
    importing fudbench itself stays torch-free (the Snakefile does at parse time)."""
    if name in ("explain", "evaluate"):
        from fudbench import api

        return getattr(api, name)
    raise AttributeError(f"module 'fudbench' has no attribute {name!r}")
