"""Deprecated: the old home of the model contract, kept for one release.

Its contents now live in modules of their own: :mod:`~dpinfer.models.randomness` (``as_generator``,
``open_uniforms``, ``SeedLike``), :mod:`~dpinfer.models.priors` (``Prior``, ``GaussianPrior``),
:mod:`~dpinfer.models.mechanisms` (``Mechanism``, ``LaplaceMechanism``, ``PrivateRelease``),
:mod:`~dpinfer.models.contract` (``PrivateDataModel``) and :mod:`~dpinfer.models.posteriors`
(``GaussianPosterior``, ``DrawsPosterior``). Every public name is still importable from here, with a
:class:`DeprecationWarning`; import it from :mod:`dpinfer.models` or from its new module instead.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

_MOVED = {
    "SeedLike": "randomness",
    "as_generator": "randomness",
    "open_uniforms": "randomness",
    "Prior": "priors",
    "GaussianPrior": "priors",
    "PrivateRelease": "mechanisms",
    "Mechanism": "mechanisms",
    "LaplaceMechanism": "mechanisms",
    "PrivateDataModel": "contract",
    "GaussianPosterior": "posteriors",
    "DrawsPosterior": "posteriors",
}

__all__ = sorted(_MOVED)


def __getattr__(name: str) -> Any:
    """The moved name, with a :class:`DeprecationWarning` that says where it lives now."""
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"dpinfer.models.base.{name} is deprecated and will be removed in the next release; "
        f"import it from dpinfer.models.{module} (or dpinfer.models) instead.",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_MOVED])
