"""dpinfer: Bayesian inference under differential privacy."""

from ._version import __version__
from .privacy import (
    BudgetExceededError,
    InvalidDataError,
    InvalidPrivacyParameterError,
    Ledger,
    PrivacyError,
    PrivacyReport,
    PrivacyRNG,
)

__all__ = [
    "BudgetExceededError",
    "InvalidDataError",
    "InvalidPrivacyParameterError",
    "Ledger",
    "PrivacyError",
    "PrivacyRNG",
    "PrivacyReport",
    "__version__",
]
