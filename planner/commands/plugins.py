"""pydantic's plugin loader without its scan, for a run in which plugins are off.

pydantic makes every model class's validator through ``pydantic.plugin._schema_validator``,
which imports ``pydantic.plugin._loader`` for ``get_plugins()``. That module imports
``importlib.metadata`` at its top, even when ``PYDANTIC_DISABLE_PLUGINS`` says to look for no
plugin, and ``get_plugins()`` then returns ``()`` without using it: 6 ms of that import and 2
ms of the loader's own at the first model class of every run (measured on startup, pydantic
2.13), which a bare import of the libraries never pays.

``skip_scan()`` puts a stand-in under the loader's name when plugins are off as pydantic reads
the variable: its ``get_plugins()`` returns ``()``, as pydantic's would, and any other name is
read from the real loader, imported then (a later pydantic that asks it for more still works).
With plugins on (the variable unset or naming plugins), nothing is changed.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from typing import Any

LOADER = "pydantic.plugin._loader"
DISABLED = ("__all__", "1", "true")  # the values pydantic's get_plugins() reads as "none at all"


def skip_scan() -> bool:
    """Install the stand-in, if plugins are off and pydantic's loader is not imported yet."""
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in DISABLED or LOADER in sys.modules:
        return False
    stand_in = types.ModuleType(LOADER, __doc__)
    stand_in.get_plugins = _no_plugins  # type: ignore[attr-defined]
    stand_in.__getattr__ = _from_real  # type: ignore[method-assign]
    sys.modules[LOADER] = stand_in
    return True


def _no_plugins() -> tuple[()]:
    return ()


def _from_real(name: str) -> Any:
    """Any other name: from pydantic's own loader, which replaces the stand-in from then on.
    Not a module's special names: the import system asks for ``__path__`` on every ``from``
    import (is it a package?), and the answer is no."""
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    if getattr(sys.modules.get(LOADER), "get_plugins", None) is _no_plugins:
        del sys.modules[LOADER]
    return getattr(importlib.import_module(LOADER), name)
