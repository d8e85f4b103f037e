"""The privacy core's exceptions: re-exported from :mod:`dpinfer.errors`, where they live.

``InvalidDataError`` is not a privacy concept; importing it from here still works for one
release, with a :class:`DeprecationWarning` (import it from :mod:`dpinfer.errors`).
"""

from __future__ import annotations

import warnings
from typing import Any

from ..errors import (
    BudgetExceededError,
    CalibrationError,
    DPInferError,
    InsecureRandomnessWarning,
    InvalidPrivacyParameterError,
    NeighbouringRelationError,
    PrivacyError,
    PrivacyWarning,
    UnknownDatasetError,
    UnsupportedEventError,
)

__all__ = [
    "DPInferError",
    "PrivacyError",
    "InvalidPrivacyParameterError",
    "UnsupportedEventError",
    "NeighbouringRelationError",
    "BudgetExceededError",
    "UnknownDatasetError",
    "CalibrationError",
    "InsecureRandomnessWarning",
    "PrivacyWarning",
]


def __getattr__(name: str) -> Any:
    if name == "InvalidDataError":
        warnings.warn(
            "dpinfer.privacy.errors.InvalidDataError moved to dpinfer.errors.InvalidDataError; "
            "this alias goes away in the next release.",
            DeprecationWarning,
            stacklevel=2,
        )
        from ..errors import InvalidDataError

        return InvalidDataError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
