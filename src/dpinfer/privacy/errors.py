"""The privacy core's exceptions: re-exported from :mod:`dpinfer.errors`, where they live.

``InvalidDataError`` is not a privacy concept; importing it from here still works for one
release, with a :class:`DeprecationWarning` (import it from :mod:`dpinfer.errors`).
"""

from __future__ import annotations

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
from .deprecation import moved_names

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


__getattr__ = moved_names(__name__, {"InvalidDataError": "dpinfer.errors"})
