"""The perturbation loops of the faithfulness evaluators (fudbench.evaluators.faithfulness)."""
