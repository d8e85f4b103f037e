"""Sending work to worker processes by value: cloudpickle, with a plain-pickle fallback.

The standard library pickles functions and classes *by reference* (module and name). A worker
process resolves ``__main__.MyModel`` in its own ``__main__``, which is not the user's when the
user ran ``python -c``, a script from stdin or a notebook: the worker fails with
``AttributeError: Can't get attribute 'MyModel' on <module '__main__'>``. cloudpickle pickles
whatever lives in ``__main__`` by value (its code and the globals it uses), so the worker needs
nothing from the parent's main module. :func:`ship` pickles a payload with cloudpickle once, in the
parent (so a payload that cannot be pickled fails there, with its own error), and
:func:`call_shipped` unpickles it in the worker (so a payload that cannot be rebuilt raises an
ordinary exception that reaches the caller, instead of killing the worker).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

from .base import BackendError


def cloudpickle_module() -> Any:
    """The cloudpickle module, or None when it is not installed."""
    try:
        import cloudpickle
    except ImportError:
        return None
    return cloudpickle


def main_is_importable() -> bool:
    """Whether worker processes can re-import ``__main__`` (it is a file, or run with ``-m``)."""
    import os
    import sys

    main = sys.modules.get("__main__")
    if main is None:
        return False
    if getattr(main, "__spec__", None) is not None:
        return True
    path = getattr(main, "__file__", None)
    return path is not None and os.path.isfile(path)


def ship(obj: Any) -> bytes:
    """``obj`` as bytes (cloudpickle; plain pickle when cloudpickle is absent)."""
    cp = cloudpickle_module()
    try:
        return cp.dumps(obj) if cp is not None else pickle.dumps(obj)
    except Exception as exc:  # noqa: BLE001 - any pickling failure: name the object and the cause
        raise BackendError(
            f"cannot send {type(obj).__name__} to worker processes: {type(exc).__name__}: {exc}. "
            "Everything the simulator uses must be picklable (no open files, locks or generators); "
            "use backend='serial'."
        ) from exc


def call_shipped(fn: bytes, payload: bytes) -> Any:
    """Worker side: unpickle ``fn`` and ``payload`` and return ``fn(payload)``."""
    func: Callable[[Any], Any] = pickle.loads(fn)
    return func(pickle.loads(payload))


__all__ = ["call_shipped", "cloudpickle_module", "main_is_importable", "ship"]
