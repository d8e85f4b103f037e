"""Every exception and warning dpinfer raises on purpose.

Errors are not a privacy concept: a malformed data set, a bad model, a privacy parameter out of
range and an exhausted budget all derive from :class:`DPInferError`, so one ``except
DPInferError`` catches every deliberate refusal. Every error raised before a release means:
nothing was charged and nothing was released. The message always says what was wrong and what to
do about it.
"""

from __future__ import annotations


class DPInferError(Exception):
    """Base class of every error dpinfer raises on purpose."""


class PrivacyError(DPInferError):
    """Base class of every privacy-related error raised by dpinfer."""


class InvalidPrivacyParameterError(PrivacyError, ValueError):
    """A privacy parameter (epsilon, delta, sensitivity, noise level, ...) is invalid."""


class InvalidDataError(DPInferError, ValueError):
    """Input data is malformed: NaN/inf, wrong shape, or outside declared bounds."""


class UnsupportedEventError(PrivacyError, TypeError):
    """An accountant was asked to interpret an event it has no analysis for."""


class NeighbouringRelationError(PrivacyError, ValueError):
    """Events under different neighbouring relations were mixed without explicit conversion."""


class BudgetExceededError(PrivacyError):
    """A charge would overspend a dataset's privacy budget. Nothing was charged."""


class UnknownDatasetError(PrivacyError, KeyError):
    """The ledger has no dataset of that name."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable.
        return str(self.args[0]) if self.args else ""


class CalibrationError(PrivacyError, ValueError):
    """No noise level can meet the requested (epsilon, delta) target."""


class DeviceUnavailableError(DPInferError, ValueError):
    """The requested compute device (e.g. ``"cuda"``) does not exist or is not available here."""


class InsecureRandomnessWarning(UserWarning):
    """Privacy noise is being drawn from a deterministic (test-only) source."""


class PrivacyWarning(UserWarning):
    """A release happened without the protection the library normally gives it.

    Emitted, for example, when a private release is made without a ledger: the release is then
    unaccounted (its report says ``accounted: false``) and nothing stops the budget of that
    data set from being overspent. Pass a ledger, or silence this warning deliberately.
    """
