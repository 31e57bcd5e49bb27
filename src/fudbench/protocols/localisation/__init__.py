"""The loops of the localisation evaluators (fudbench.evaluators.localisation)."""
