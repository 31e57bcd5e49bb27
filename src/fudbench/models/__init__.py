"""Models: classifiers that take [0, 1] images and return logits, score models, their training,
shipped checkpoints and energy scores.

Floor 1: imports only fudbench.core."""
