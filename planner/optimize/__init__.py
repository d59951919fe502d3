"""The CP-SAT model: integer counts, named constraints, TCO objective."""
