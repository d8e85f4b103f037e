"""Validation of privacy parameters and data: fail loudly, before anything is charged."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InvalidDataError, InvalidPrivacyParameterError
from .neighbouring import NEIGHBOURING_RELATIONS, Neighbouring

#: Smallest ε accepted anywhere (a guarantee, a budget, a target).
MIN_EPSILON = 1e-12


def _as_real(value: Any) -> float:
    """``float(value)`` for real numbers only: strings, booleans and containers are refused.

    ``float("1")`` would silently accept a string (a CLI value passed through unparsed) and
    ``float(True)`` a flag; both are refused so that a privacy parameter is always a number the
    caller meant.
    """
    if isinstance(value, (str, bytes, bool, np.bool_)):
        raise TypeError(type(value).__name__)
    if isinstance(value, np.ndarray) and value.ndim != 0:
        raise TypeError("array")
    return float(value)


def check_positive(value: Any, name: str, *, hint: str = "") -> float:
    """Return ``value`` as a float after checking it is a real number, finite and > 0.

    ``hint`` is appended to the message when the number is not finite or not positive.
    """
    try:
        out = _as_real(value)
    except (TypeError, ValueError):
        raise InvalidPrivacyParameterError(
            f"{name} must be a positive finite number, got {value!r}."
        ) from None
    if not math.isfinite(out) or out <= 0.0:
        raise InvalidPrivacyParameterError(
            f"{name} must be a positive finite number, got {value!r}." + (f" {hint}" if hint else "")
        )
    return out


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float after checking it is finite and > 0."""
    value = check_positive(
        epsilon, name, hint="Choose the privacy level you want to guarantee, e.g. epsilon=1.0."
    )
    if value < MIN_EPSILON:
        raise InvalidPrivacyParameterError(
            f"{name}={epsilon!r} is below {MIN_EPSILON:g}: the noise would be more than 1e12 times "
            "the sensitivity (no information released) and the privacy arithmetic underflows. "
            "Choose a larger epsilon, e.g. 0.01-10."
        )
    return value


def check_delta(delta: Any, name: str = "delta") -> float:
    """Return ``delta`` as a float after checking it lies in [0, 1)."""
    try:
        value = _as_real(delta)
    except (TypeError, ValueError):
        raise InvalidPrivacyParameterError(f"{name} must be a number in [0, 1), got {delta!r}.") from None
    if not math.isfinite(value) or not 0.0 <= value < 1.0:
        raise InvalidPrivacyParameterError(
            f"{name} must lie in [0, 1), got {delta!r}. A common choice is delta << 1/n, "
            "e.g. 1e-5 for a few thousand records."
        )
    return value




def check_sensitivity(sensitivity: Any, name: str = "sensitivity") -> float:
    """Return the sensitivity as a float after checking it is finite and > 0."""
    try:
        return check_positive(sensitivity, name)
    except InvalidPrivacyParameterError:
        raise InvalidPrivacyParameterError(
            f"{name} must be a positive finite number, got {sensitivity!r}. It bounds how much "
            "the statistic can change between neighbouring data sets; derive it from the "
            "declared data bounds (e.g. (hi - lo) / n for a clamped mean)."
        ) from None


def check_count(value: Any, name: str, low: int = 1) -> int:
    """Return ``value`` as an int after checking it is a whole number >= ``low``.

    Booleans, strings and fractions are refused (``int(1.5)`` would silently release a statistic
    of another length than the caller declared)."""
    ok = not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, np.integer, float, np.floating))
    if not ok or not math.isfinite(float(value)) or float(value) != int(value) or int(value) < low:
        raise InvalidPrivacyParameterError(f"{name} must be a whole number >= {low}, got {value!r}.")
    return int(value)


def check_relation(relation: str | Neighbouring) -> str:
    """The plain string of a neighbouring relation (a string or a :class:`Neighbouring`).

    Refused, with the valid spellings listed, when it is neither; the plain string is returned
    so that events, ledger rows and charges are the same whichever spelling the caller used.
    """
    if isinstance(relation, Neighbouring):
        return str(relation.value)
    if not isinstance(relation, str) or relation not in NEIGHBOURING_RELATIONS:
        raise InvalidPrivacyParameterError(
            f"neighbouring relation must be one of {NEIGHBOURING_RELATIONS} "
            f"(or dpinfer.privacy.Neighbouring.REPLACE_ONE / ADD_REMOVE), got {relation!r}."
        )
    return str(relation)


def check_finite_array(value: Any, name: str = "value") -> np.ndarray:
    """Return ``value`` as a float64 array after checking every entry is finite."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidDataError(f"{name} must be numeric, got {type(value).__name__}.") from None
    if not np.all(np.isfinite(arr)):  # how many, or where, is a statistic of the data: not said
        raise InvalidDataError(
            f"{name} contains NaN or infinite values. Remove or impute them before the "
            "private release; nothing was charged or released."
        )
    return arr


def check_bounds(value: np.ndarray, lower: float, upper: float, name: str = "data") -> None:
    """Check that every entry of ``value`` lies within the declared ``[lower, upper]``."""
    arr = np.asarray(value)
    if arr.size and (arr.min() < lower or arr.max() > upper):
        raise InvalidDataError(  # the data's min and max are confidential: never printed
            f"{name} has values outside the declared bounds [{lower}, {upper}]. Clip the data to "
            "the bounds or declare wider bounds (the sensitivity is derived from them); nothing was "
            "charged or released."
        )
