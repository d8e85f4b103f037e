"""Names that moved to another module keep working from their old module for one release.

A module whose public name moved elsewhere sets ``__getattr__ = moved_names(__name__, {...})``
(PEP 562): reading the name from the old module still returns the object, with a
:class:`DeprecationWarning` that says where it lives now. The new module is imported by name
when the alias is first read, so the old module need not import it (no import cycle when the new
module imports the old one).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def moved_names(old_module: str, moved: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving ``moved`` (name -> new module) with a DeprecationWarning.

    Parameters
    ----------
    old_module
        The module the names used to live in (its ``__name__``), for the messages.
    moved
        Each moved name and the dotted name of the module it lives in now.

    Returns
    -------
    callable
        ``__getattr__(name)``: the moved object, after warning; :class:`AttributeError` for any
        other name.
    """
    table = dict(moved)

    def __getattr__(name: str) -> Any:
        new_module = table.get(name)
        if new_module is None:
            raise AttributeError(f"module {old_module!r} has no attribute {name!r}")
        warnings.warn(
            f"{old_module}.{name} moved to {new_module}.{name}; this alias goes away in the next "
            "release.",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new_module), name)

    return __getattr__
