"""Every exception and warning dpinfer raises on purpose.

Errors are not a privacy concept: a malformed data set, a bad model, a privacy parameter out of
range and an exhausted budget all derive from :class:`DPInferError`, so one ``except
DPInferError`` catches every deliberate refusal. Every error raised before a release means:
nothing was charged and nothing was released. The message always says what was wrong and what to
do about it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import ParamSpec, TypeVar


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


class LedgerNotFoundError(PrivacyError, FileNotFoundError):
    """There is no ledger at the path or database given; nothing was created."""

    def __str__(self) -> str:  # FileNotFoundError formats (errno, strerror); keep the message.
        return str(self.args[0]) if self.args else ""


class LedgerFileError(PrivacyError, ValueError):
    """The file or database given exists but is not a dpinfer ledger (or one this version cannot
    read); it was left untouched."""


class LedgerConnectionError(PrivacyError):
    """The ledger's database could not be reached, or the connection was lost during an operation.

    The message says whether a charge in progress was recorded (its transaction is atomic: it is
    either fully recorded or absent). Nothing was released. It never contains a password.
    """


class RunStoreError(DPInferError):
    """A run store cannot be opened or used, or a run cannot be resumed as asked (unknown id,
    another kind of run, different settings, already finished). Never contains a password."""


class LedgerStatusWarning(UserWarning):
    """A charge is recorded, but its status (``released`` / ``failed``) could not be updated
    afterwards (e.g. the database went away); it stays ``charged`` and counts all the same."""


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


class NonPrivateResultWarning(PrivacyWarning):
    """A result was computed from the confidential data WITHOUT differential privacy.

    Emitted by the non-private baselines (:func:`dpinfer.release.rejection_abc`,
    :func:`~dpinfer.release.rejection_abc_draws`, ``DPVI.fit(private=False)``): their output
    reveals the data as plain (non-noisy) statistics would, so it must not be published. The
    warning names the private call to use instead; the result says ``NON-PRIVATE`` in its
    summary and saved file.
    """


class ImpossibleObservationError(InvalidDataError):
    """No (or almost no) simulation of the model comes within the tolerance of the observed
    statistic after a bounded number of simulations: the observation may be impossible under the
    model (wrong units, wrong model, a typo in the observed value)."""


class InferenceWarning(UserWarning):
    """Base category of the diagnostics a careful statistician would want to see (below)."""


class WeightDegeneracyWarning(InferenceWarning):
    """Importance weights are unreliable: low effective sample size or Pareto k above 0.7."""


class ConvergenceWarning(InferenceWarning):
    """Chains disagree: split R-hat above 1.01 (Vehtari et al. 2021)."""


class ABCConvergenceWarning(InferenceWarning):
    """An ABC run stopped while its tolerance still mattered: the spread was still shrinking
    between the last populations, or the run ended on its simulation budget or acceptance floor
    rather than on convergence; its posterior is then wider than the exact one
    (:mod:`dpinfer.inference.smc.convergence`)."""


class PriorBoundaryWarning(InferenceWarning):
    """Posterior mass piles up at a bound of the prior's support."""


class ObservedOutsideSimulationsWarning(InferenceWarning):
    """The observed statistic lies outside the range of the model's simulations."""


class MethodFallbackWarning(InferenceWarning):
    """``infer(method="auto")`` replaced the method it chose, because that method's own
    diagnostics failed; the warning says which methods it tried and why."""


class PriorDataConflictWarning(ObservedOutsideSimulationsWarning):
    """The observed release lies far in the tail of the prior predictive (the model's releases
    simulated from its prior): the prior, the model's units or its bounds do not fit the data
    (:mod:`dpinfer.diagnostics.conflict`)."""


class BackendWarning(UserWarning):
    """An execution backend could not be used as asked and another one runs the work instead."""


_P = ParamSpec("_P")
_R = TypeVar("_R")


def refuse_removed_keywords(
    moved: Mapping[str, str | tuple[str, str]],
    *,
    positional: tuple[int, str] | None = None,
) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Refuse the spellings an entry point no longer takes with a :class:`TypeError` that names the
    new one instead of Python's bare "unexpected keyword".

    Parameters
    ----------
    moved
        Each old keyword mapped to the option that now holds it: ``{"bounds": "data=DataSpec"}``
        gives "pass data=DataSpec(bounds=...) instead"; a pair (option, field) when the field
        has a new name there: ``{"rng": ("context=ReleaseContext", "privacy_rng")}``.
    positional
        ``(count, name)`` when the former positional argument ``name`` became a keyword option:
        a call with more than ``count`` positional arguments is refused as if ``name=`` was given
        (e.g. ``laplace(x, s, eps, rng)``).
    """

    def refuse(fn: Callable[..., object], old: list[str]) -> TypeError:
        groups: dict[str, list[str]] = {}
        for k in old:
            new = moved[k]
            option, field = new if isinstance(new, tuple) else (new, k)
            groups.setdefault(str(option), []).append(f"{field}=...")
        return TypeError(
            f"{fn.__name__}() no longer takes {', '.join(k + '=' for k in old)}: pass "
            + " and ".join(f"{g}({', '.join(ks)})" for g, ks in groups.items())
            + " instead. Nothing was charged."
        )

    def decorate(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(fn)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            old = [k for k in kwargs if k in moved]
            if positional is not None and len(args) > positional[0]:
                old.insert(0, positional[1])
            if old:
                raise refuse(fn, old)
            return fn(*args, **kwargs)

        return wrapper

    return decorate
