"""fudbench: Faithfulness Under the Distribution and related attribution evaluations.

Library layout (see docs/architecture.md):
  data/        synthetic benchmark, manifests, shards
  models/      classifiers (normalisation inside), score models, training
  explainers/  attribution methods behind one interface + registry
  imputers/    how removed pixels are filled (zero, blur, diffusion/FUD)
  protocols/   which pixels are removed and how the response is recorded
  analysis/    curve scores, Kendall tau, energy OOD, bootstrap
  report/      LaTeX tables and figures
"""

__version__ = "0.1.0"
