"""The CLI's commands beyond `solve`, one module per room they drive.

- ``common``: the consoles, the one place user errors become an exit code, shared arguments;
- ``inputs``: ``catalog`` (what the planner knows) and ``import-melange`` (a Mélange config
  into a problem file);
- ``perf``: ``estimate inference|training`` and ``calibrate`` (the performance model alone);
- ``whatif``: ``whatif`` (grids, scenarios, Monte Carlo) and ``compare``.

``planner/cli.py`` registers them all on one typer app, in the order ``planner --help`` shows.
"""
