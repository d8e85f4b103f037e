"""dpinfer: Bayesian inference under differential privacy."""

from ._version import __version__
from .errors import (
    BudgetExceededError,
    DPInferError,
    InvalidDataError,
    InvalidPrivacyParameterError,
    PrivacyError,
)
from .privacy import Ledger, PrivacyReport, PrivacyRNG


def __getattr__(name: str) -> object:
    """``dpinfer.infer`` (:func:`dpinfer.inference.infer`), imported on first use."""
    if name == "infer":
        from .inference import infer

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
    "__version__",
    "infer",
]
