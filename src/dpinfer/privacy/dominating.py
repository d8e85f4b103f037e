"""Valid *dominating* analyses for mechanisms that have no tight one in an accountant.

Each function here is a pure function of public parameters and returns an upper bound on a
mechanism's privacy curve in the form an accountant composes (a privacy-loss distribution, a
Rényi curve, or a Rényi curve plus a δ composed basically). None of them is tight; each says
why it is valid. :func:`analysis_of` names which analysis an accountant uses for a leaf event.

Dominating pairs and privacy profiles
-------------------------------------
A pair of distributions (P, Q) *dominates* a mechanism M if for every γ >= 0 and every pair of
neighbouring data sets, H_γ(M(D) ‖ M(D')) <= H_γ(P ‖ Q), where
H_γ(P ‖ Q) = sup_S P(S) - γ Q(S) is the hockey-stick divergence (δ at ε = ln γ). The adaptive
composition of mechanisms is dominated by the product of their dominating pairs (Zhu, Dong &
Wang 2022, "Optimal accounting of differential privacy via characteristic function", Def. 7 and
Thm. 10), which is what a PLD accountant composes: the PLD of (P, Q) is the law of ln(P/Q)(X),
X ~ P.

:func:`pld_from_privacy_profile` turns any valid *upper bound* u(ε) on a mechanism's privacy
profile δ_M(ε) = sup_{D~D'} H_{e^ε}(M(D) ‖ M(D')) into a dominating pair. δ_M, as a function of
γ = e^ε, is convex and non-increasing with δ_M(0) = 1 (a supremum of hockey-stick divergences,
each of which is), and under a symmetric neighbouring relation
δ_M(γ) = 1 - γ + γ·δ_M(1/γ) for γ < 1. Given u at points γ_1 < ... < γ_n (raised to
max(1 - γ_i, 0) and made non-increasing, both still upper bounds), let g be the lower convex
envelope of {(0, 1), (γ_i, u_i)} continued by the constant u_n beyond γ_n. Then

    δ_M(γ) <= g(γ)   for every γ >= 0,                                                  (D1)

because δ_M is a convex function lying below every point, hence below their lower convex
envelope on [0, γ_n], and non-increasing, hence <= δ_M(γ_n) <= u_n beyond. g is itself the
hockey-stick curve of a pair: the PLD with mass γ_k·(s_k⁺ - s_k⁻) at loss ln γ_k for each vertex
γ_k of g (s_k^∓ its slopes left and right of the vertex) and mass u_n at +∞ has
H_γ = Σ_k p_k (1 - γ e^{-ℓ_k})₊ + p_∞ = g(γ) (connect-the-dots, Doroshenko, Ghazi, Kamath,
Kumar & Manurangsi 2022, Sec. 3, applied to an upper bound on the profile). Rounding each loss
*up* to the accountant's grid only raises H_γ (pessimistic discretisation).

Where u comes from a Rényi curve R(α), it is the conversion of Canonne, Kamath & Steinke 2020,
Prop. 12 (the one dp-accounting uses),

    δ(ε) <= min_α exp((α - 1)(R(α) - ε)) · (1 - 1/α)^α / (α - 1),                      (D2)

together with δ(ε) <= TV <= sqrt(1 - e^{-R(α)}) (Bretagnolle–Huber; R(α) >= KL for α > 1),
both valid for every ε >= 0; the negative side follows from the symmetry above.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache, lru_cache
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import log_ndtr

from ..deferred import DeferredModule
from ..errors import InvalidPrivacyParameterError
from .gaussian_pld import gaussian_pld

if TYPE_CHECKING:
    import dp_accounting
    from dp_accounting.pld import privacy_loss_distribution as pld_lib
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib
else:  # imported at the first accounting, not at start-up (see dpinfer.deferred)
    dp_accounting = DeferredModule("dp_accounting")
    pld_lib = DeferredModule("dp_accounting.pld.privacy_loss_distribution")
    rdp_lib = DeferredModule("dp_accounting.rdp.rdp_privacy_accountant")

__all__ = [
    "pld_from_privacy_profile",
    "pld_from_rdp",
    "profile_orders",
    "rdp_delta_profile",
    "replace_one_pair_log_moment",
    "replace_one_subsampled_gaussian_rdp",
    "subsampled_gaussian_add_remove_rdp",
    "with_replacement_gaussian_pld",
    "with_replacement_gaussian_rdp",
    "with_replacement_multiplicity",
]


@cache
def profile_orders() -> np.ndarray:
    """Rényi orders used to turn a curve into a privacy profile: dp-accounting's default grid and
    a geometric extension up to 10⁴ (large ε of the profile need large orders). Any order gives a
    valid bound, so the grid only affects tightness. Computed at first use (dp-accounting is
    imported then, not when dpinfer starts); the shared array is read-only."""
    orders = np.unique(
        np.concatenate(
            [np.asarray(rdp_lib.DEFAULT_RDP_ORDERS, dtype=np.float64), 1024.0 * 1.1 ** np.arange(1, 25)]
        )
    )
    orders.flags.writeable = False
    return orders


#: Largest ε the profile grid reaches; the mass beyond it goes to +∞ (always valid).
_PROFILE_EPSILON_CAP = 60.0
#: Stop extending the profile grid once u(ε) is below this.
_PROFILE_TAIL = 1e-30
#: Number of grid points of the non-negative side of a profile.
_PROFILE_POINTS = 12000


def rdp_delta_profile(orders: np.ndarray, curve: np.ndarray, epsilons: np.ndarray) -> np.ndarray:
    """An upper bound on δ(ε) at each of ``epsilons`` (>= 0) from a Rényi curve: (D2) and the TV
    bound of the module docstring, minimised over ``orders`` (vectorised ``compute_delta`` of
    dp-accounting). ``curve`` may hold ``inf`` (order ignored)."""
    orders = np.asarray(orders, dtype=np.float64)
    curve = np.asarray(curve, dtype=np.float64)
    eps = np.asarray(epsilons, dtype=np.float64)
    if np.any(eps < 0):
        raise InvalidPrivacyParameterError("rdp_delta_profile takes epsilons >= 0.")
    ok = np.isfinite(curve) & (orders > 1.0)
    a, r = orders[ok], np.maximum(curve[ok], 0.0)
    if a.size == 0:
        return np.ones_like(eps)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        tv = np.where(r > 0, 0.5 * np.log1p(-np.exp(-r)), -np.inf)
        log_tv = float(np.min(tv))
        big = a > 1.01
        ab, rb = a[big], r[big]
        const = (ab - 1.0) * (rb + np.log1p(-1.0 / ab)) - np.log(ab)
        out = np.full(eps.shape, log_tv)
        # chunks of ε keep the (orders x points) matrix small
        for start in range(0, eps.size, 4096):
            e = eps.ravel()[start:start + 4096]
            if ab.size:
                m = np.min(const[:, None] - (ab - 1.0)[:, None] * e[None, :], axis=0)
                out.ravel()[start:start + 4096] = np.minimum(log_tv, m)
    return np.minimum(np.exp(out), 1.0)


def _lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the vertices of the lower convex envelope of points sorted by increasing x."""
    hull: list[int] = []
    for i in range(x.size):
        while len(hull) >= 2:
            o, a = hull[-2], hull[-1]
            # drop a if it lies on or above the segment o -> i
            cross = (x[a] - x[o]) * (y[i] - y[o]) - (y[a] - y[o]) * (x[i] - x[o])
            if cross <= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    return np.asarray(hull, dtype=np.int64)


def pld_from_privacy_profile(
    delta_at: Callable[[np.ndarray], np.ndarray],
    *,
    value_discretization_interval: float,
    epsilon_cap: float = _PROFILE_EPSILON_CAP,
    points: int = _PROFILE_POINTS,
) -> pld_lib.PrivacyLossDistribution:
    """A dominating PLD from an upper bound on a mechanism's privacy profile (module docstring,
    (D1)).

    Parameters
    ----------
    delta_at
        ``delta_at(eps)``: an upper bound on the mechanism's δ at each ε >= 0 of an array, for
        every pair of neighbouring data sets in either order (a symmetric relation).
    value_discretization_interval
        The loss grid of the returned PLD (losses are rounded up to it).
    epsilon_cap, points
        The profile is evaluated on ``points`` equally spaced ε in [0, E], E the smallest of
        ``epsilon_cap`` and the first power-of-two multiple of 1 where the bound falls below
        1e-30; the bound at E is the mass at +∞.
    """
    vdi = float(value_discretization_interval)
    top = 1.0
    while top < epsilon_cap and float(np.asarray(delta_at(np.array([top])))[0]) > _PROFILE_TAIL:
        top *= 2.0
    top = min(top, epsilon_cap)
    step = max(vdi, top / points)
    eps = np.arange(0.0, top + 0.5 * step, step)
    u_pos = np.clip(np.asarray(delta_at(eps), dtype=np.float64), 0.0, 1.0)
    u_pos = np.minimum.accumulate(u_pos)  # δ_M is non-increasing: min over smaller ε is valid
    # the negative side: δ_M(-ε) = 1 - e^{-ε} + e^{-ε} δ_M(ε) (a symmetric relation)
    neg = eps[:0:-1]
    u_neg = -np.expm1(-neg) + np.exp(-neg) * u_pos[:0:-1]
    loss = np.concatenate([-neg, eps])
    gamma = np.exp(loss)
    u = np.concatenate([u_neg, u_pos])
    u = np.minimum(np.maximum(u, np.maximum(1.0 - gamma, 0.0)), 1.0)
    x = np.concatenate([[0.0], gamma])
    y = np.concatenate([[1.0], u])
    hull = _lower_hull(x, y)
    hx, hy = x[hull], y[hull]
    slopes = np.diff(hy) / np.diff(hx)  # slope of each hull segment
    right = np.concatenate([slopes[1:], [0.0]])  # flat beyond the last point
    mass = hx[1:] * (right - slopes)
    mass = np.maximum(mass, 0.0)
    infinity_mass = float(hy[-1])
    idx = np.ceil(np.log(hx[1:]) / vdi).astype(np.int64)  # round the loss UP (pessimistic)
    pmf: dict[int, float] = {}
    for i, m in zip(idx.tolist(), mass.tolist(), strict=True):
        if m > 0.0:
            pmf[i] = pmf.get(i, 0.0) + m
    # the masses sum to g(0) = 1 up to rounding; a total a few ulp above 1 only raises every
    # H_γ (the safe direction), so it is left as it is
    return pld_lib.PrivacyLossDistribution.create_from_rounded_probability(
        {k: v for k, v in pmf.items() if v > 0.0}, infinity_mass, vdi, pessimistic_estimate=True
    )


def pld_from_rdp(
    curve_of: Callable[[np.ndarray], np.ndarray], *, value_discretization_interval: float
) -> pld_lib.PrivacyLossDistribution:
    """A dominating PLD of a mechanism from its Rényi curve: the profile bound (D2), made a pair by
    (D1). ``curve_of(orders)`` is the mechanism's Rényi curve (valid for both orders of every
    neighbouring pair)."""
    orders = profile_orders()
    curve = np.asarray(curve_of(orders), dtype=np.float64)
    return pld_from_privacy_profile(
        lambda e: rdp_delta_profile(orders, curve, e),
        value_discretization_interval=value_discretization_interval,
    )


# ------------------------------------------------------------------------------------------------
# Poisson-subsampled Gaussian under replace-one: a Rényi bound
# ------------------------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _add_remove_step_cached(q: float, sigma: float, orders: tuple[float, ...]) -> np.ndarray:
    acc = rdp_lib.RdpAccountant(np.asarray(orders, dtype=np.float64))
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)))
    out = np.asarray(acc.rdp, dtype=np.float64)
    out.setflags(write=False)
    return out


def subsampled_gaussian_add_remove_rdp(q: float, sigma: float, orders: np.ndarray) -> np.ndarray:
    """The Rényi curve of ONE Poisson-subsampled Gaussian step under add-or-remove, at ``orders``
    (dp-accounting's analysis: Mironov, Talwar & Zhang 2019, Sec. 3.3), as a new array.

    Cached on (q, σ, orders): dp-accounting sums a series per order in Python (about 1 ms per
    order), and a ledger, a report and the replace-one bound (R1) ask for the same step again;
    ``steps`` compositions are ``steps`` times this curve (Mironov 2017, Prop. 1), which is what
    dp-accounting's self-composition computes, to the bit.
    """
    return np.array(_add_remove_step_cached(float(q), float(sigma), tuple(float(o) for o in orders)))


def _log_ndtr_diff(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """ln(Φ(hi) - Φ(lo)) for hi > lo, stable in both tails (computed on the side where the
    CDF values are small)."""
    out = np.empty_like(hi)
    left = hi <= 0
    a, b = log_ndtr(hi[left]), log_ndtr(lo[left])
    out[left] = a + np.log(-np.expm1(b - a))
    a, b = log_ndtr(-lo[~left]), log_ndtr(-hi[~left])
    out[~left] = a + np.log(-np.expm1(b - a))
    return out


#: The largest order for which :func:`replace_one_pair_log_moment` integrates (its cost grows as
#: α²); above it the bound (R1) alone is used (nearly tight there: the curve is nearly linear).
_QUADRATURE_MAX_ORDER = 64.0
#: Safety factor on the computed integral for floating-point rounding (safe direction).
_ROUNDING = 1e-9


def replace_one_pair_log_moment(q: float, sigma: float, alpha: float) -> float:
    """An upper bound on ln E_Q[(P/Q)^α] for the replace-one pair of the Poisson-subsampled
    Gaussian, P = (1 - q)N(0, σ²) + qN(-1, σ²), Q = (1 - q)N(0, σ²) + qN(1, σ²).

    This is the pair dp-accounting's PLD uses for a replace-one subsampled Gaussian (sensitivity
    1 in units of the clip norm; Zhu, Dong & Wang 2022). It dominates the mechanism in every
    hockey-stick divergence, hence in every f-divergence, E_Q[(P/Q)^α] included (an f-divergence
    is an integral of hockey-stick divergences with weights f''(γ) >= 0; Liese & Vajda 2006,
    Thm. 11; Balle et al. 2020, "Hypothesis testing interpretations and Rényi DP", Sec. 3), so
    its Rényi divergence is a Rényi-DP bound of the mechanism.

    The integral is bounded from above, not estimated. The loss ℓ = ln(P/Q) is non-increasing
    in x (ℓ' = P'/P - Q'/Q, with P'/P <= -x/σ² <= Q'/Q since both are averages of their
    components' scores -(x - m)/σ²). On [L, U] cut into cells [a, b], with the exact masses
    P_c, Q_c of the cell and r = P/Q in [r(b), r(a)], convexity of t ↦ t^α bounds t^α by its
    chord, so

        ∫_c Q r^α <= Q_c r(b)^α + (P_c - r(b) Q_c) (r(a)^α - r(b)^α) / (r(a) - r(b)).

    Tails: for x <= L <= -1/2, φ(x)/φ(x+1) = e^{(2x+1)/(2σ²)} <= e^{(2L+1)/(2σ²)} =: κ, so
    P <= qφ(x+1)(1 + (1 - q)κ/q), and Q >= (1 - q)φ(x), hence (φ(x+1)^α φ(x)^{1-α} being
    e^{α(α-1)/(2σ²)} times the N(-α, σ²) density)

        ∫_{-∞}^L P^α Q^{1-α} <= (1 - q)^{1-α} q^α (1 + (1 - q)κ/q)^α e^{α(α-1)/(2σ²)} Φ((L + α)/σ);

    for x >= U >= 0, P <= Q, so ∫_U^∞ Q (P/Q)^α <= P(X > U). The cell width
    h = min(σ/10, σ²/(5α)) keeps the chord's excess below about 0.5% of the integrand where the
    loss is steep, and the sum is raised by a factor 1 + 1e-9 for floating-point rounding.
    """
    q, s, a = float(q), float(sigma), float(alpha)
    log1mq = math.log1p(-q) if q < 1 else -math.inf
    lq = math.log(q)

    def log_tail_scale(left: float) -> float:
        # ln of (1 - q)^{1-α} q^α (1 + (1 - q)/q · e^{(2L+1)/(2σ²)})^α e^{α(α-1)/(2σ²)}
        extra = math.log1p(math.exp(log1mq - lq + (2.0 * left + 1.0) / (2.0 * s * s))) if q < 1 else 0.0
        return a * (a - 1.0) / (2.0 * s * s) - (a - 1.0) * log1mq + a * (lq + extra)

    # left end: the tail bound's log below about -46 (and L <= -1/2)
    z = math.sqrt(2.0 * max(0.0, log_tail_scale(-a) + 46.0)) + 1.0
    lo_x = min(-0.5, -a - z * s)
    hi_x = 0.5 + 10.0 * s
    h = min(0.1 * s, 0.2 * s * s / a)
    n = int(min(max(math.ceil((hi_x - lo_x) / h), 64), 2**21))
    x = np.linspace(lo_x, hi_x, n + 1)
    xs = x / s
    x_plus, x_minus = (x + 1.0) / s, (x - 1.0) / s
    lp = log1mq
    # log densities (the common (2πσ²)^{-1/2} cancels in r)
    log_p = np.logaddexp(lp - 0.5 * xs**2, lq - 0.5 * x_plus**2)
    log_q = np.logaddexp(lp - 0.5 * xs**2, lq - 0.5 * x_minus**2)
    ell = log_p - log_q
    ell_a = np.maximum(ell[:-1], ell[1:]) + 1e-12  # r non-increasing; pad for rounding
    ell_b = np.minimum(ell[:-1], ell[1:]) - 1e-12
    # exact cell masses
    base = _log_ndtr_diff(xs[1:], xs[:-1])
    log_pc = np.logaddexp(lp + base, lq + _log_ndtr_diff(x_plus[1:], x_plus[:-1]))
    log_qc = np.logaddexp(lp + base, lq + _log_ndtr_diff(x_minus[1:], x_minus[:-1]))
    # θ = (P_c/Q_c - r_b)/(r_a - r_b), clamped to [0, 1] (then nudged up, safe direction)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        m = np.exp(log_pc - log_qc - ell_b)  # (P_c/Q_c)/r_b
        span = np.expm1(ell_a - ell_b)  # r_a/r_b - 1
        theta = np.where(span > 0, (m - 1.0) / span, 1.0)
    theta = np.clip(np.nan_to_num(theta, nan=1.0) + 1e-9, 0.0, 1.0)
    # log of (1 - θ) r_b^α + θ r_a^α
    with np.errstate(divide="ignore"):
        mix = np.logaddexp(np.log1p(-theta) + a * ell_b, np.log(theta) + a * ell_a)
    terms = log_qc + mix
    log_left = log_tail_scale(lo_x) + float(log_ndtr(np.array([(lo_x + a) / s]))[0])
    log_right = float(np.logaddexp(lp + log_ndtr(np.array([-hi_x / s]))[0],
                                   lq + log_ndtr(np.array([-(hi_x + 1.0) / s]))[0]))
    total = float(np.logaddexp.reduce(np.concatenate([terms, [log_left, log_right]])))
    return total + math.log1p(_ROUNDING)


def replace_one_subsampled_gaussian_rdp(
    q: float, sigma: float, steps: int, orders: np.ndarray
) -> np.ndarray:
    """A Rényi curve of ``steps`` Poisson-subsampled Gaussian steps under *replace-one*.

    A replacement D -> D' is a removal D -> D⁻ followed by an addition D⁻ -> D'. Mironov's weak
    triangle inequality for Rényi divergences (Mironov 2017, "Rényi differential privacy",
    Prop. 11) gives, for α > 1,

        D_α(M(D) ‖ M(D')) <= (α - 1/2)/(α - 1) · D_{2α}(M(D) ‖ M(D⁻)) + D_{2α-1}(M(D⁻) ‖ M(D')),

    and both terms on the right are bounded by the add-remove Rényi curve R_ar of the sampled
    Gaussian, which holds for both directions of an add-remove pair (Mironov, Talwar & Zhang 2019,
    "Rényi differential privacy of the sampled Gaussian mechanism", Sec. 3.3, Thm. 5):

        R_ro(α) <= (α - 1/2)/(α - 1) · R_ar(2α) + R_ar(2α - 1).                           (R1)

    For orders up to 64 the Rényi divergence of the dominating pair itself is bounded by
    quadrature with a proven error bound (:func:`replace_one_pair_log_moment`), and the smaller
    of the two valid bounds is used. Steps compose by adding curves. Order 1 itself is dropped
    (``inf``).
    """
    orders = np.asarray(orders, dtype=np.float64)
    out = np.full(orders.shape, np.inf)
    ok = orders > 1.0
    a = orders[ok]
    if a.size:
        r2a = subsampled_gaussian_add_remove_rdp(q, sigma, 2.0 * a)
        r2a1 = subsampled_gaussian_add_remove_rdp(q, sigma, 2.0 * a - 1.0)
        tri = (a - 0.5) / (a - 1.0) * r2a + r2a1
        quad = np.array([
            replace_one_pair_log_moment(q, sigma, float(al)) / (float(al) - 1.0)
            if al <= _QUADRATURE_MAX_ORDER else np.inf
            for al in a
        ])
        out[ok] = np.minimum(tri, np.maximum(quad, 0.0))
    return int(steps) * out


# ------------------------------------------------------------------------------------------------
# Gaussian sum on a batch drawn with replacement (replace-one)
# ------------------------------------------------------------------------------------------------

#: Multiplicities above this (per step) are not modelled: their probability goes to δ / +∞.
_WR_TAIL = 1e-13


def with_replacement_multiplicity(q: float, steps: int = 1) -> tuple[np.ndarray, float]:
    """A dominating law of the number K of times the replaced record is drawn in one batch.

    A batch of B draws with replacement from N records (q = B/N) draws the replaced record
    K ~ Binomial(B, 1/N) times, and P(K >= k) <= C(B, k) N^{-k} <= q^k / k! (union bound over the
    k-subsets of draws). The law K' with P(K' >= k) = q^k/k! for k >= 1 (a valid law since q <= 1)
    therefore dominates K stochastically. It is truncated at the first k_max with
    ``steps`` · P(K' > k_max) <= 1e-13.

    Returns
    -------
    (weights, tail)
        ``weights[k]`` = P(K' = k) for k = 0..k_max, and ``tail`` = P(K' > k_max) (per step).
    """
    q = float(q)
    tails = [1.0]
    k = 0
    while True:
        k += 1
        tails.append(math.exp(k * math.log(q) - math.lgamma(k + 1)) if q > 0 else 0.0)
        if steps * tails[-1] <= _WR_TAIL or k >= 200:
            break
    surv = np.asarray(tails)  # surv[k] = P(K' >= k), k = 0..k_max+1
    weights = surv[:-1] - surv[1:]
    return weights, float(surv[-1])


def with_replacement_gaussian_pld(
    q: float, sigma: float, steps: int, *, value_discretization_interval: float
) -> pld_lib.PrivacyLossDistribution:
    """A dominating PLD of ``steps`` Gaussian sums (noise multiplier σ relative to the clip norm
    C) on batches drawn with replacement at rate q, under replace-one.

    Reveal, with each output, the multiplicity K of the replaced record in the batch: conditional
    on K = k and on the rest of the batch, the two outputs are Gaussians with std σC whose means
    differ by at most 2kC (each of the k copies moves the clipped sum by <= 2C). Revealing more
    only weakens the guarantee (post-processing), and the joint law of (K, rest) is the same under
    both data sets, so the mechanism is dominated by the pair "K revealed, then N(0, σ²) against
    N(2K, σ²)", whose PLD is the mixture over k of the Gaussian PLDs with sensitivity 2k. Each of
    those curves grows with k (a larger shift is never more private), so replacing K by the
    stochastically larger K' of :func:`with_replacement_multiplicity` keeps a dominating pair;
    the truncated tail goes to +∞ loss. Steps compose (Zhu, Dong & Wang 2022, Thm. 10). This
    ignores the amplification hidden in not knowing K, so it is loose (module report: slack).
    """
    vdi = float(value_discretization_interval)
    weights, tail = with_replacement_multiplicity(q, steps)
    total_w = float(weights.sum()) + tail
    out = pld_lib.identity(value_discretization_interval=vdi)
    acc_w = float(weights[0])
    for k in range(1, weights.size):
        w = float(weights[k])
        if w <= 0.0:
            continue
        part = gaussian_pld(standard_deviation=float(sigma), sensitivity=2.0 * k,
                            value_discretization_interval=vdi)
        out = out.compute_mixture(part, acc_w / (acc_w + w))
        acc_w += w
    if tail > 0.0:
        inf_pld = pld_lib.PrivacyLossDistribution.create_from_rounded_probability({0: 0.0}, 1.0, vdi)
        out = out.compute_mixture(inf_pld, acc_w / total_w)
    return out.self_compose(int(steps)) if int(steps) > 1 else out


def with_replacement_gaussian_rdp(
    q: float, sigma: float, steps: int, orders: np.ndarray
) -> tuple[np.ndarray, float]:
    """A δ-approximate Rényi curve of ``steps`` with-replacement Gaussian sums (replace-one).

    The pair of :func:`with_replacement_gaussian_pld` has infinite Rényi divergence (the
    multiplicity's tail is too heavy for e^{α k²}), so the tail event {K' > k_max}, which has the
    same probability t under both data sets, is set aside: conditional on K' <= k_max the pair
    has, with w_k = P(K' = k | K' <= k_max),

        R(α) = 1/(α - 1) · ln Σ_k w_k exp(2α(α - 1) k² / σ²),

    (the Rényi divergence of N(0, σ²) from N(2k, σ²) is 2αk²/σ², and revealing K mixes the
    exponentiated divergences). Each step is then δ-approximately RDP with δ = t, and such
    guarantees compose by adding curves and δ's (Bun & Steinke 2016, "Concentrated differential
    privacy", Def. 8.1 and Lemma 8.3): ``steps`` steps give (steps·R, steps·t), and the (ε, δ)
    guarantee is ε_RDP(δ - steps·t) at δ.

    Returns
    -------
    (curve, delta)
        The composed curve at ``orders`` and the δ composed basically.
    """
    orders = np.asarray(orders, dtype=np.float64)
    weights, tail = with_replacement_multiplicity(q, steps)
    w = weights / weights.sum()
    k = np.arange(w.size, dtype=np.float64)
    out = np.full(orders.shape, np.inf)
    ok = orders > 1.0
    a = orders[ok][:, None]
    with np.errstate(divide="ignore"):
        logs = np.log(w)[None, :] + 2.0 * a * (a - 1.0) * k[None, :] ** 2 / float(sigma) ** 2
    m = logs.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(logs - m).sum(axis=1, keepdims=True)))[:, 0]
    out[ok] = lse / (orders[ok] - 1.0)
    return int(steps) * out, int(steps) * tail
