"""Models: classifiers that take [0, 1] images and return logits, and score models."""
