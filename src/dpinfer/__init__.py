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
    (:func:`dpinfer.pipelines.glm.private_glm`) with its option object ``dpinfer.GLMPosteriorOptions``,
    ``dpinfer.DataSpec`` (:class:`dpinfer.models.data_spec.DataSpec`, the description of the data of
    ``private_glm`` and ``DPVI.fit``), ``dpinfer.connect`` (:func:`dpinfer.service.client.connect`)
    and the privacy core's ``Ledger``, ``PrivacyReport``, ``PrivacyRNG``, ``ReleaseContext``,
    imported on first use: ``import dpinfer.errors`` (every command line start-up) imports no
    accounting library. ``dpinfer.GLMDataSpec`` (replaced by ``DataSpec``) is refused, naming it."""
    if name in ("Ledger", "PrivacyReport", "PrivacyRNG", "ReleaseContext"):
        from . import privacy

        return getattr(privacy, name)
    if name == "infer":
        from .inference.entry import infer

        return infer
    if name == "connect":
        from .service.client import connect

        return connect
    if name in ("private_glm", "GLMPosteriorOptions"):
        from .pipelines import glm

        return getattr(glm, name)
    if name == "DataSpec":
        from .models.data_spec import DataSpec

        return DataSpec
    if name == "GLMDataSpec":
        from .models.data_spec import removed_name

        raise removed_name(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BudgetExceededError",
    "DPInferError",
    "DataSpec",
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
