"""LaTeX tables (booktabs) and matplotlib figures."""
