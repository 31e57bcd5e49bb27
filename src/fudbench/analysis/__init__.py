"""Analysis: curve scores, Kendall tau, OOD detectors, image quality, bootstrap intervals, localisation,
FUD sampler diagnostics.

Floor 6: imports the floors below (core ... config), never meta, report or workflow."""
