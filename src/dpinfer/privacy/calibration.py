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
    start: float | None = None,
) -> float:
    """Smallest noise multiplier σ with ``accountant.epsilon(make_event(σ), δ) <= ε``.

    ε is non-increasing in σ for every accountant here, so the answer is found by bracketing
    and shrinking a bracket [lo, hi] (lo fails, hi meets) to relative width ``rtol``; the
    returned σ is the upper end of the final bracket, so it always meets the target (the
    answer is the one bisection gives, to within ``rtol``). The points are chosen by the secant
    of log ε against log σ (nearly linear for the Gaussian events: ε ∝ 1/σ at large σ): the first
    guess extrapolates from σ = 1 with slope −1, each later one is the secant root of the bracket
    (the last two secant points, clamped into the bracket), and a secant root is followed by the
    point ``rtol``/2 above or below it that would close the bracket. About 6-10 accountant
    evaluations instead of the 25 of bisection from σ = 1: each can take seconds for a PLD of
    a thousand subsampled steps at small σ (``benchmarks/dpvi_calibration.py`` times it).
    For the PLD accountant the search first runs (to rtol 10⁻³) on a 10× coarser pessimistic
    grid, whose evaluations are several times cheaper, and the fine one starts from its answer
    (``start``) with a first step of ``rtol``: only the fine accountant certifies the returned
    σ, and at ``rtol`` = 10⁻³ (DPVI's) two fine evaluations usually close the bracket.

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
    seen: dict[float, float] = {}
    vdi = getattr(acc, "value_discretization_interval", None)
    if start is None and acc.name == "pld" and vdi is not None and rtol <= 1e-3 and float(vdi) < 1e-3:
        coarse = type(acc)(value_discretization_interval=10.0 * float(vdi))  # type: ignore[call-arg]
        try:
            start = calibrate_noise_multiplier(
                make_event, target_epsilon, target_delta, coarse, rtol=1e-3,
                max_noise_multiplier=max_noise_multiplier, min_noise_multiplier=min_noise_multiplier,
            )
        except CalibrationError:
            start = None

    def eps_at(sigma: float) -> float:
        if sigma not in seen:
            seen[sigma] = float(acc.epsilon(make_event(sigma), target_delta))
        return seen[sigma]

    def meets(sigma: float) -> bool:
        eps = eps_at(sigma)
        return math.isfinite(eps) and eps <= target_epsilon

    def fail() -> CalibrationError:
        return CalibrationError(
            f"no noise multiplier up to {max_noise_multiplier:g} meets epsilon="
            f"{target_epsilon:g}, delta={target_delta:g} with the {acc.name!r} accountant "
            f"(event {make_event(1.0)!r}). Relax the target (larger epsilon or delta > 0), "
            "fewer steps, a smaller sampling rate, or another accountant."
        )

    log_t = math.log(target_epsilon)

    def gap(sigma: float) -> float:  # log ε − log ε_target (finite, > 0 where ε is 0 or inf)
        e = eps_at(sigma)
        return math.log(e) - log_t if math.isfinite(e) and e > 0 else (math.inf if e > 0 else -math.inf)

    # 1. a bracket: from σ = 1, jump along slope −1 in log-log, then keep going (doubling the jump)
    x = 1.0 if start is None else float(start)
    # from a coarse answer the first step is rtol: one fine evaluation either side closes it
    min_step = 0.002 if start is None else min(0.002, 0.999 * rtol)
    lo, hi = None, None
    jump = 1.0
    for _ in range(200):
        if meets(x):
            hi = x
            if lo is not None:
                break
            g = gap(x)
            step = min(max(-g if math.isfinite(g) else -1.0, -10.0), -min_step) * jump
            nxt = x * math.exp(step)
            if nxt < min_noise_multiplier:
                if x / 2 < min_noise_multiplier:
                    return x
                nxt = max(min_noise_multiplier, x / 2)
        else:
            lo = x
            if hi is not None:
                break
            g = gap(x)
            step = min(max(g if math.isfinite(g) else 1.0, min_step), 10.0) * jump
            nxt = x * math.exp(step)
            if x >= max_noise_multiplier:
                raise fail()
            nxt = min(nxt, max_noise_multiplier)
        jump *= 1.5
        x = nxt
    if lo is None or hi is None:  # pragma: no cover - the loop always brackets or raises
        raise fail()
    if lo < min_noise_multiplier:
        return hi
    # 2. shrink: the secant root of the last two secant points (clamped into the bracket), then
    # the point rtol/2 beyond it that may close the bracket
    pts = [lo, hi]
    for _ in range(200):
        if hi - lo <= rtol * hi:
            break
        (x0, x1), width = pts[-2:], hi - lo
        g0, g1 = gap(x0), gap(x1)
        if math.isfinite(g0) and math.isfinite(g1) and g0 != g1 and x0 != x1:
            a, b = math.log(x0), math.log(x1)
            root = math.exp(b - g1 * (b - a) / (g1 - g0))
        else:
            root = 0.5 * (lo + hi)
        root = min(max(root, lo + 0.01 * width), hi - 0.01 * width) if width > 0 else hi
        pts.append(root)
        if meets(root):
            hi = root
            probe = root * (1.0 - rtol / 2.0)
            if probe > lo and not meets(probe):
                lo = probe
            elif probe > lo:
                hi = probe
        else:
            lo = root
            probe = root * (1.0 + rtol / 2.0)
            if probe < hi and meets(probe):
                hi = probe
            elif probe < hi:
                lo = probe
    return hi


def _composed_gaussian(s: float, K: int) -> PrivacyEvent:
    return compose(*[GaussianEvent(s, neighbouring=REPLACE_ONE)] * K)


def composed_gaussian_multiplier(
    epsilon: float, delta: float, K: int, accountant: str | Accountant = "pld"
) -> float:
    """The least s with ``accountant(K × GaussianEvent(s)) <= ε`` at δ.

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
