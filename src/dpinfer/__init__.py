"""dpinfer: Bayesian inference under differential privacy."""

from ._version import __version__
from .errors import (
    BudgetExceededError,
    DPInferError,
    InvalidDataError,
    InvalidPrivacyParameterError,
    PrivacyError,
)
from .privacy import Ledger, PrivacyReport, PrivacyRNG, ReleaseContext


def __getattr__(name: str) -> object:
    """``dpinfer.infer`` (:func:`dpinfer.inference.entry.infer`), ``dpinfer.private_glm``
    (:func:`dpinfer.pipelines.glm.private_glm`) with its option objects ``dpinfer.GLMDataSpec`` and
    ``dpinfer.GLMPosteriorOptions``, and ``dpinfer.connect`` (:func:`dpinfer.service.client.connect`),
    imported on first use."""
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
