"""Noise calibration: the smallest noise multiplier that meets an (ε, δ) target."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..errors import CalibrationError
from .accountants import Accountant, get_accountant
from .events import MIN_NOISE_MULTIPLIER, PrivacyEvent
from .validation import check_delta, check_epsilon


def calibrate_noise_multiplier(
    make_event: Callable[[float], PrivacyEvent],
    target_epsilon: float,
    target_delta: float,
    accountant: str | Accountant = "pld",
    *,
    rtol: float = 1e-6,
    max_noise_multiplier: float = 1e6,
    min_noise_multiplier: float = MIN_NOISE_MULTIPLIER,
) -> float:
    """Smallest noise multiplier σ with ``accountant.epsilon(make_event(σ), δ) <= ε``.

    ε is non-increasing in σ for every accountant here, so the answer is found by bracketing
    (doubling / halving from σ = 1) and bisection to relative width ``rtol``. The returned σ
    is the upper end of the final bracket, so it always meets the target.

    Raises
    ------
    CalibrationError
        If even ``max_noise_multiplier`` does not meet the target (e.g. δ = 0 with a Gaussian,
        or a target ε below what the accountant can ever certify).
    """
    target_epsilon = check_epsilon(target_epsilon, "target_epsilon")
    target_delta = check_delta(target_delta, "target_delta")
    acc = get_accountant(accountant)
    acc.check_supported(make_event(1.0))

    def meets(sigma: float) -> bool:
        eps = acc.epsilon(make_event(sigma), target_delta)
        return math.isfinite(eps) and eps <= target_epsilon

    hi = 1.0
    while not meets(hi):
        hi *= 2.0
        if hi > max_noise_multiplier:
            raise CalibrationError(
                f"no noise multiplier up to {max_noise_multiplier:g} meets epsilon="
                f"{target_epsilon:g}, delta={target_delta:g} with the {acc.name!r} accountant "
                f"(event {make_event(1.0)!r}). Relax the target (larger epsilon or delta > 0), "
                "fewer steps, a smaller sampling rate, or another accountant."
            )
    lo = hi / 2.0
    while True:
        if lo < min_noise_multiplier:
            return hi
        if not meets(lo):
            break
        hi, lo = lo, lo / 2.0
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return hi
