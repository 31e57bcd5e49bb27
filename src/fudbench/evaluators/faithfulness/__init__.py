"""Faithfulness: does the map rank the pixels by how much the model's output depends on them?
Each evaluator removes or keeps pixels in the map's order (with a fill: FUD's diffusion model, a
baseline, ROAD's linear imputation, ...) and scores the model's response."""
