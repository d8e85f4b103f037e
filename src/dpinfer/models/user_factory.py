"""A user's own model by name: ``--model package.module:factory`` on the command line.

``package.module`` is imported (the current directory is put on ``sys.path`` first, as
``python -m`` does, so a ``mymodels.py`` next to the data works), ``factory`` (a dotted attribute
path is allowed) is called with the ``--model-args`` keyword arguments, plus ``epsilon=`` when it
takes an ``epsilon`` parameter, and must return a
:class:`~dpinfer.models.contract.PrivateDataModel`. Every failure (module not found, an error
while importing it, no such attribute, wrong arguments, a factory that raises or returns
something else) is an :class:`~dpinfer.errors.InvalidDataError` saying which and what to do.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Mapping
from typing import Any

from ..errors import DPInferError, InvalidDataError


def is_user_model(name: str) -> bool:
    """Whether a ``--model`` value names a factory (``package.module:factory``)."""
    return ":" in str(name)


def load_factory(spec: str) -> Any:
    """The callable named by ``package.module:factory`` (module docstring)."""
    module_name, _, attr = str(spec).partition(":")
    if not module_name or not attr or ":" in attr:
        raise InvalidDataError(
            f"--model {spec!r}: a model of your own is named package.module:factory, e.g. "
            "mymodels:poisson_model."
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise InvalidDataError(
                f"--model {spec}: cannot import module {module_name!r} (no module named {exc.name!r}); run "
                "dpinfer from the directory that holds it, add that directory to PYTHONPATH, or install the "
                "package."
            ) from None
        raise InvalidDataError(
            f"--model {spec}: importing {module_name!r} failed: it imports {exc.name!r}, which is not "
            "installed."
        ) from None
    except Exception as exc:
        raise InvalidDataError(
            f"--model {spec}: importing {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
            raise InvalidDataError(
                f"--model {spec}: module {module_name!r} has no attribute {attr!r}; its callables: "
                f"{', '.join(names) or 'none'}."
            )
        obj = getattr(obj, part)
    if not callable(obj):
        raise InvalidDataError(f"--model {spec}: {attr!r} is a {type(obj).__name__}, not a function.")
    return obj


def build_user_model(spec: str, epsilon: float | None = None, **kwargs: Any) -> tuple[Any, float]:
    """``(model, epsilon)`` from the factory ``spec``, called with ``kwargs`` (module docstring).

    ``epsilon`` is passed to a factory that takes it; for one that does not, the model's
    mechanism fixes ε, and a different ``epsilon`` is refused.
    """
    factory = load_factory(spec)
    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        params = {}
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    takes_eps = "epsilon" in params or var_kw
    unknown = [k for k in kwargs if k not in params and not var_kw]
    if unknown:
        accepted = [k for k in params if k != "epsilon"]
        raise InvalidDataError(
            f"--model-args: {spec} has no argument {', '.join(map(repr, unknown))}; accepted keys: "
            f"{', '.join(accepted) or 'none'}."
        )
    if epsilon is not None and takes_eps:
        kwargs["epsilon"] = epsilon
    try:
        model = factory(**kwargs)
    except DPInferError:
        raise
    except Exception as exc:
        raise InvalidDataError(
            f"--model {spec}: calling the factory raised {type(exc).__name__}: {exc}"
        ) from None
    missing = [a for a in ("prior", "mechanism", "simulate", "param_names") if not hasattr(model, a)]
    if missing:
        raise InvalidDataError(
            f"--model {spec}: the factory must return a dpinfer PrivateDataModel; got {type(model).__name__} "
            f"(no {', '.join(missing)})."
        )
    declared = getattr(model.mechanism, "epsilon", None)
    fixed = epsilon is not None and not takes_eps and declared is not None
    if epsilon is not None and declared is not None and fixed and abs(declared - epsilon) > 1e-9 * epsilon:
        raise InvalidDataError(
            f"--model {spec}: its mechanism releases at epsilon={declared:g} but epsilon={epsilon:g} was "
            "given; give the factory an epsilon parameter, or drop --epsilon."
        )
    if epsilon is None:
        epsilon = float(declared) if declared is not None else float(model.privacy_report().epsilon)
    return model, float(epsilon)


__all__ = ["build_user_model", "is_user_model", "load_factory"]
