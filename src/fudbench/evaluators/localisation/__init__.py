"""Localisation: does the map's relevance lie on the object (a ground-truth mask)? Nothing is
removed or filled; the data must carry masks."""
