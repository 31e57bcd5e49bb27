"""The loops of the randomisation evaluators (fudbench.evaluators.randomisation): the map explained
again under a randomised model or another class, compared with the original map."""
