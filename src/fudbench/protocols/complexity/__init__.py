"""The complexity evaluators' loop (fudbench.evaluators.complexity): one statistic of each map itself,
no model call besides the clean image's response."""
