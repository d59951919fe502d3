"""Pydantic models at the edges: problem files, catalogs, plans."""
