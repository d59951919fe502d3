"""The bundled catalogs (YAML data, not code), installed as the package ``planner.catalogs``.

This file only makes the folder an importable package, so that an editable install finds the
YAML files here and a regular install finds them inside ``planner/``. See ``planner/catalog.py``.
"""
