"""dpinfer: Bayesian inference under differential privacy."""

from typing import TYPE_CHECKING

from ._version import __version__
from .errors import (
    BudgetExceededError,
    DPInferError,
    InvalidDataError,
    InvalidPrivacyParameterError,
    PrivacyError,
)

if TYPE_CHECKING:
    from .privacy import Ledger, PrivacyReport, PrivacyRNG, ReleaseContext


def __getattr__(name: str) -> object:
    """``dpinfer.infer`` (:func:`dpinfer.inference.entry.infer`), ``dpinfer.private_glm``
    (:func:`dpinfer.pipelines.glm.private_glm`) with its option objects ``dpinfer.GLMDataSpec`` and
    ``dpinfer.GLMPosteriorOptions``, ``dpinfer.connect`` (:func:`dpinfer.service.client.connect`)
    and the privacy core's ``Ledger``, ``PrivacyReport``, ``PrivacyRNG``, ``ReleaseContext``,
    imported on first use: ``import dpinfer.errors`` (every command line start-up) imports no
    accounting library."""
    if name in ("Ledger", "PrivacyReport", "PrivacyRNG", "ReleaseContext"):
        from . import privacy

        return getattr(privacy, name)
    if name == "infer":
        from .inference.entry import infer

        return infer
    if name == "connect":
        from .service.client import connect

        return connect
    if name in ("private_glm", "GLMDataSpec", "GLMPosteriorOptions"):
        from .pipelines import glm

        return getattr(glm, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BudgetExceededError",
    "DPInferError",
    "GLMDataSpec",
    "GLMPosteriorOptions",
    "InvalidDataError",
    "InvalidPrivacyParameterError",
    "Ledger",
    "PrivacyError",
    "PrivacyRNG",
    "PrivacyReport",
    "ReleaseContext",
    "__version__",
    "connect",
    "infer",
    "private_glm",
]
