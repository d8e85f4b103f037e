"""Noise calibration: the smallest noise multiplier that meets an (ε, δ) target."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..errors import CalibrationError, InvalidPrivacyParameterError
from .accountants import Accountant, get_accountant
from .events import (
    MIN_NOISE_MULTIPLIER,
    REPLACE_ONE,
    GaussianEvent,
    GaussianSparseVectorEvent,
    PrivacyEvent,
    compose,
)
from .gaussian import analytic_gaussian_sigma
from .gaussian_svt import noise_ratio
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


def _composed_gaussian(s: float, K: int) -> PrivacyEvent:
    return compose(*[GaussianEvent(s, neighbouring=REPLACE_ONE)] * K)


def composed_gaussian_multiplier(
    epsilon: float, delta: float, K: int, accountant: str | Accountant = "pld"
) -> float:
    """The least s with ``accountant``(K × GaussianEvent(s)) <= ε at δ.

    K Gaussian releases with multiplier s compose exactly to one with multiplier s/√K (their
    privacy-loss distributions are Gaussian; Dong, Roth & Su 2019, Cor. 3.3), so the start is
    s = √K·σ_analytic(ε, δ) (Balle & Wang 2018). It is kept if the accountant certifies it
    (up to 10 steps of +0.1%, absorbing a PLD grid's pessimism); otherwise (e.g. the looser
    ``"rdp"`` conversion) the accountant's own bisection decides.
    """
    acc = get_accountant(accountant)
    s = math.sqrt(K) * analytic_gaussian_sigma(epsilon, delta, 1.0)
    for _ in range(10):
        if acc.epsilon(_composed_gaussian(s, K), delta) <= epsilon:
            return s
        if acc.name != "pld":
            break
        s *= 1.001
    return calibrate_noise_multiplier(lambda x: _composed_gaussian(x, K), epsilon, delta, acc, rtol=1e-4)


def calibrate_gaussian_svt(
    epsilon: float,
    delta: float,
    c: int,
    max_queries: int,
    resample: bool = False,
    *,
    ratio: float | None = None,
) -> GaussianSparseVectorEvent:
    """The least-noise Gaussian SVT event meeting (ε, δ) under the ``"rdp"`` accountant.

    σ1/Δ = s and σ2/Δ = ``ratio``·s (default :func:`noise_ratio`); s is the smallest value whose
    composed Rényi curve converts to ε at δ (bisection of
    :func:`~dpinfer.privacy.calibration.calibrate_noise_multiplier`).

    Returns
    -------
    GaussianSparseVectorEvent
        Its noise multipliers times the sensitivity are the noise standard deviations.
    """
    r = noise_ratio(int(c), resample) if ratio is None else float(ratio)
    if not math.isfinite(r) or r <= 0:
        raise InvalidPrivacyParameterError(f"ratio must be positive and finite, got {ratio!r}.")

    def make(s: float) -> GaussianSparseVectorEvent:
        return GaussianSparseVectorEvent(c, s, s * r, max_queries, resample)

    s = calibrate_noise_multiplier(make, epsilon, delta, "rdp", rtol=1e-4)
    return make(s)
