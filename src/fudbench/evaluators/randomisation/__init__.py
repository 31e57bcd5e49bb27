"""Randomisation: a sanity check that the map depends on what it claims to explain. Each evaluator
explains again (EvaluatorSpec.needs_explainer) under a randomised model or for another class and scores
the similarity to the original map: lower is better, and a map that ignores the model or the class (an
edge detector, a constant map, the `random` control with its fixed seeds) scores 1, i.e. fails the check.
Read as pass/fail per explainer, against that ceiling, not against `random` as a floor."""
