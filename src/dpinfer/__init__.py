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
    """``dpinfer.infer`` (:func:`dpinfer.inference.entry.infer`), imported on first use."""
    if name == "infer":
        from .inference.entry import infer

        return infer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BudgetExceededError",
    "DPInferError",
    "InvalidDataError",
    "InvalidPrivacyParameterError",
    "Ledger",
    "PrivacyError",
    "PrivacyRNG",
    "PrivacyReport",
    "ReleaseContext",
    "__version__",
    "infer",
]
