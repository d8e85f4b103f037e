"""Deprecated: the old home of the model contract, kept for one release.

Its contents now live in modules of their own: :mod:`~dpinfer.models.randomness` (``as_generator``,
``open_uniforms``, ``SeedLike``), :mod:`~dpinfer.models.priors` (``Prior``, ``GaussianPrior``),
:mod:`~dpinfer.models.mechanisms` (``Mechanism``, ``LaplaceMechanism``, ``PrivateRelease``),
:mod:`~dpinfer.models.contract` (``PrivateDataModel``) and :mod:`~dpinfer.models.posteriors`
(``GaussianPosterior``, ``DrawsPosterior``). Every public name is still importable from here, with a
:class:`DeprecationWarning`; import it from :mod:`dpinfer.models` or from its new module instead.
"""

from __future__ import annotations

from ..privacy.deprecation import moved_names

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
__getattr__ = moved_names(__name__, {name: f"dpinfer.models.{module}" for name, module in _MOVED.items()})
