"""The bundled catalog as built, kept between runs (``parse_cache`` keeps each file's parse).

Validating the six catalog files makes pydantic build the validators of the catalog's model
classes (declared ``defer_build``): 0.02-0.03 s of every run on startup, more than the rest of
loading the catalog. Read back from here (``planner.kept``), nothing is validated, so a run never
builds them unless it validates a catalog object of its own (an imported model config, say).
The key holds the catalog files' text and the source of ``SOURCES``.
"""

from __future__ import annotations

from planner.kept import Kept, module_source

STEM = "catalog"
# Where the catalog's code lives: the loader, the fabrics' expansion and every catalog class
# (``tests/test_catalog_cache.py`` checks that an entry names no class from elsewhere).
SOURCES = (
    "planner.catalog",
    "planner.fabric",
    "planner.parse_cache",
    "planner.schema.catalog",
    "planner.schema.efficiency",
    "planner.schema.fabric",
    "planner.schema.facility",
)
CATALOG = Kept(STEM, SOURCES)
built_once = CATALOG.built_once
entry_key = CATALOG.entry_key

__all__ = ["CATALOG", "SOURCES", "STEM", "built_once", "entry_key", "module_source"]
