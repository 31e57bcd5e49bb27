"""Robustness: does the map stay put when the input moves a little (no check that the decision stays)?
Each evaluator explains perturbed copies of the image again (EvaluatorSpec.needs_explainer) and compares
their maps with the image's. Lower is better, and a map that ignores its input (the `random` control with
its fixed seeds, a constant map) is perfectly robust: read them against those trivial winners, not
against `random` as a floor."""
