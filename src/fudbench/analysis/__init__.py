"""Analysis: curve scores, Kendall tau, energy OOD, bootstrap intervals."""
