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
]
