"""The loops of the robustness evaluators (fudbench.evaluators.robustness): perturbed copies of each
image, explained again, compared with the image's map."""
