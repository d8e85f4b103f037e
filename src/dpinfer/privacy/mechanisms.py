"""Additive noise mechanisms: Laplace and Gaussian.

Each function validates everything first, then (if a ledger is given) charges the budget, and
only then draws the noise. The return value is ``(noisy_value, event)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InvalidPrivacyParameterError
from .events import REPLACE_ONE, GaussianEvent, LaplaceEvent, PrivacyEvent
from .gaussian import analytic_gaussian_sigma, classical_gaussian_sigma
from .rng import PrivacyRNG, as_privacy_rng
from .validation import (
    check_delta,
    check_epsilon,
    check_finite_array,
    check_relation,
    check_sensitivity,
)

if TYPE_CHECKING:
    from .ledger import Ledger


def _release(
    value: np.ndarray,
    noise_fn: Any,
    event: PrivacyEvent,
    ledger: Ledger | None,
    dataset: str | None,
    label: str,
) -> Any:
    if ledger is None:
        noisy = value + noise_fn()
    else:
        if dataset is None:
            raise InvalidPrivacyParameterError("a ledger charge needs the dataset name.")
        with ledger.charge(dataset, event, label=label):
            noisy = value + noise_fn()
    return float(noisy) if np.ndim(noisy) == 0 else noisy


def laplace(
    value: Any,
    sensitivity: float,
    epsilon: float,
    rng: PrivacyRNG | None = None,
    *,
    neighbouring: str = REPLACE_ONE,
    ledger: Ledger | None = None,
    dataset: str | None = None,
    label: str = "laplace",
) -> tuple[Any, LaplaceEvent]:
    """The Laplace mechanism: ``value + Lap(sensitivity/epsilon)`` per coordinate.

    Parameters
    ----------
    value
        The confidential statistic (scalar or array); must be finite.
    sensitivity
        Its L1 sensitivity under ``neighbouring``.
    epsilon
        The privacy level; the release is ε-DP (Dwork & Roth 2014, Theorem 3.6).
    rng
        A :class:`PrivacyRNG`; a fresh OS-seeded one if None. Numpy generators are refused.
    ledger, dataset
        If given, the event is charged to ``dataset`` in ``ledger`` before any noise is drawn.

    Returns
    -------
    (noisy_value, LaplaceEvent)
    """
    arr = check_finite_array(value, "value")
    sens = check_sensitivity(sensitivity)
    eps = check_epsilon(epsilon)
    gen = as_privacy_rng(rng)
    event = LaplaceEvent(eps, check_relation(neighbouring))
    noisy = _release(arr, lambda: gen.laplace(sens / eps, arr.shape), event, ledger, dataset, label)
    return noisy, event


def gaussian_sigma(
    l2_sensitivity: float, epsilon: float, delta: float, calibration: str = "analytic"
) -> float:
    """The noise std of the (ε, δ) Gaussian mechanism under the chosen calibration."""
    if calibration == "analytic":
        return analytic_gaussian_sigma(epsilon, delta, l2_sensitivity)
    if calibration == "classical":
        return classical_gaussian_sigma(epsilon, delta, l2_sensitivity)
    raise InvalidPrivacyParameterError(f"calibration must be 'analytic' or 'classical', got {calibration!r}.")


def gaussian(
    value: Any,
    l2_sensitivity: float,
    epsilon: float,
    delta: float,
    rng: PrivacyRNG | None = None,
    *,
    calibration: str = "analytic",
    neighbouring: str = REPLACE_ONE,
    ledger: Ledger | None = None,
    dataset: str | None = None,
    label: str = "gaussian",
) -> tuple[Any, GaussianEvent]:
    """The Gaussian mechanism: ``value + N(0, σ²)`` per coordinate, (ε, δ)-DP.

    ``calibration="analytic"`` (default) uses the exact condition of Balle & Wang (2018);
    ``"classical"`` uses σ = sqrt(2 ln(1.25/δ))·Δ/ε and is refused for ε >= 1, where it is not a
    valid guarantee.

    Returns
    -------
    (noisy_value, GaussianEvent) with ``noise_multiplier = σ / l2_sensitivity``.
    """
    arr = check_finite_array(value, "value")
    sens = check_sensitivity(l2_sensitivity, "l2_sensitivity")
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    sigma = gaussian_sigma(sens, eps, dlt, calibration)
    gen = as_privacy_rng(rng)
    event = GaussianEvent(sigma / sens, check_relation(neighbouring))
    noisy = _release(arr, lambda: gen.normal(sigma, arr.shape), event, ledger, dataset, label)
    return noisy, event
