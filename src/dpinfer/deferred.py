"""Heavy third-party modules imported on first use, so that starting ``dpinfer`` stays cheap.

``dp_accounting`` imports most of SciPy (``scipy.stats``, ``scipy.signal``, ``scipy.optimize``):
about a second of every command line start-up, ``dpinfer --help`` included, although only the
commands that account for privacy (and the release paths) use it. A module that needs such a
library at call time only binds a :class:`DeferredModule` instead of importing it::

    if TYPE_CHECKING:
        from dp_accounting.pld import privacy_loss_distribution as pld_lib
    else:
        pld_lib = DeferredModule("dp_accounting.pld.privacy_loss_distribution")

and ``pld_lib.identity(...)`` imports the library the first time it is called, then behaves
exactly as the module (the attribute is looked up on the imported module at every access).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class DeferredModule:
    """A stand-in for the module ``name``, which is imported at the first attribute access.

    Parameters
    ----------
    name : str
        Absolute name of a third-party module (``"scipy.stats"``).
    """

    __slots__ = ("_name", "_module")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"DeferredModule({self._name!r}, {state})"


__all__ = ["DeferredModule"]
