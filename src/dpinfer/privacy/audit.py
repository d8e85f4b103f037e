"""Black-box privacy audits of release mechanisms: pure functions of releases, no knowledge of the code.

Three checks, each a statistical or exact test on outputs of a release function
``release(data, rng) -> value`` run on two neighbouring inputs D and D' (the tests of
:mod:`tests.audits.test_mechanism_registry` run every mechanism of
:mod:`dpinfer.privacy.mechanisms.registry` through them).

1. **A lower confidence bound on ε** (:func:`audit_epsilon`). An (ε, δ)-DP release satisfies, for
   every rejection set S (Dwork & Roth 2014, Def. 2.4),

       P(release(D) ∈ S) <= e^ε · P(release(D') ∈ S) + δ,

   so any estimate of the two probabilities bounds ε from below. With one-sided Clopper–Pearson
   bounds (Clopper & Pearson 1934) p_lo <= P(release(D) ∈ S) and p'_hi >= P(release(D') ∈ S),
   each at confidence 1 − α,

       ε_lb = log((p_lo − δ) / p'_hi)                                                     (1)

   is a lower bound on the true ε with probability at least 1 − 2α (union bound); this is the
   estimator of Jagielski, Ullman & Oprea (2020, "Auditing differentially private machine
   learning: how private is private SGD?") and Nasr, Song, Thakurta, Papernot & Carlini (2021,
   "Adversary instantiation: lower bounds for differentially private machine learning"). The
   rejection set is a threshold ``T >= t`` or ``T <= t`` on a
   one-dimensional statistic T of the output (or a single value ``T = t`` when T takes few
   values, e.g. the index of a sparse vector's positive answer), with the set and which input plays
   D chosen on a separate half of the runs (as in Tramèr, Terzis, Steinke, Song, Jagielski &
   Carlini 2022, "Debugging differential privacy: a case study for privacy auditing"): the bound on
   the held-out half is then valid without correcting for the selection. A correct (ε, δ)
   mechanism gives ε_lb <= ε except with probability 2α; a miscalibrated one gives ε_lb > ε once
   enough runs resolve its true privacy loss.

2. **Grid membership and reachability** (:func:`check_grid`). A floating-point-safe release
   (Mironov 2012, "On significance of the least significant bits for differential privacy";
   Canonne, Kamath & Steinke 2020) outputs only points ``k·γ`` of a grid γ that depends on
   public quantities only, with ``|k| < 2⁵³`` so that ``k·γ`` is an exact double, and the set of
   outputs reachable from D equals that from D'. The check counts outputs off the declared grid,
   outputs outside the declared output range, and, when no grid is declared, infers the coarsest
   power-of-two grid of the outputs of D and of D' separately (:func:`power_of_two_spacing`):
   both must be the same and no finer than a public bound (a float release lands on a grid of
   about one ulp of the value, so it fails this by many orders of magnitude).

3. **The floating-point distinguishing test of Mironov (2012)** (:func:`impossible_fraction`).
   For a release ``y = fl(x + e)`` with ``e`` the output of a floating-point noise sampler, an
   output y of D is *impossible* from D' when no output e' of the sampler gives
   ``fl(x' + e') = y``. Every such output identifies D with certainty (an infinite privacy loss).
   :func:`laplace_float_reaches` decides this exactly for the inverse-CDF Laplace sampler of
   :meth:`dpinfer.privacy.rng.PrivacyRNG.laplace` by a binary search over its 2⁵² uniforms.

Everything here is post-processing of releases; nothing is charged. The randomness of the runs
comes from the :class:`~dpinfer.privacy.rng.PrivacyRNG` passed in (OS entropy if None; tests pass
the seeded test RNG for reproducible audits).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import beta

from ..errors import InvalidPrivacyParameterError
from .rng import PrivacyRNG, as_privacy_rng

__all__ = [
    "AuditResult",
    "GridCheck",
    "Lattice",
    "audit_epsilon",
    "audit_from_outputs",
    "check_grid",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "impossible_fraction",
    "in_set",
    "laplace_float_reaches",
    "power_of_two_spacing",
    "run_releases",
]

#: Largest number of candidate thresholds tried on the selection half.
MAX_CANDIDATES = 400
#: A statistic with at most this many distinct values is also tested on single-value sets.
MAX_SINGLETONS = 64
_TWO_M52 = 2.0**-52
_N_UNIFORMS = 2**52


# ------------------------------------------------------------------------------------------------
# Clopper-Pearson bounds and the ε lower bound (1)
# ------------------------------------------------------------------------------------------------


def clopper_pearson_lower(k: Any, n: int, alpha: float) -> np.ndarray:
    """One-sided lower Clopper–Pearson bound on a binomial probability from ``k`` successes in
    ``n`` trials, at confidence ``1 - alpha``: the ``alpha`` quantile of Beta(k, n − k + 1)
    (0 when k = 0; Clopper & Pearson 1934)."""
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        lo = beta.ppf(alpha, np.maximum(k, 1e-300), n - k + 1)
    return np.where(k > 0, lo, 0.0)


def clopper_pearson_upper(k: Any, n: int, alpha: float) -> np.ndarray:
    """One-sided upper Clopper–Pearson bound: the ``1 - alpha`` quantile of Beta(k + 1, n − k)
    (1 when k = n)."""
    k = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        hi = beta.ppf(1.0 - alpha, k + 1, np.maximum(n - k, 1e-300))
    return np.where(k < n, hi, 1.0)


def epsilon_lower_bound(k: Any, n: int, k_prime: Any, n_prime: int, *, delta: float, alpha: float) -> Any:
    """Equation (1) of the module docstring: ``log((p_lo − δ)/p'_hi)``.

    ``k`` of ``n`` runs on D and ``k_prime`` of ``n_prime`` runs on D' fell in the rejection set;
    ``-inf`` where ``p_lo <= δ`` (no evidence). Holds with probability >= 1 − 2·alpha.
    """
    p_lo = clopper_pearson_lower(k, n, alpha)
    p_hi = clopper_pearson_upper(k_prime, n_prime, alpha)
    num = p_lo - float(delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(num > 0, np.log(np.maximum(num, 1e-300)) - np.log(np.maximum(p_hi, 1e-300)), -np.inf)
    return float(out) if np.ndim(out) == 0 else out


# ------------------------------------------------------------------------------------------------
# running releases and turning outputs into a statistic
# ------------------------------------------------------------------------------------------------


def run_releases(
    release: Callable[[Any, PrivacyRNG], Any], data: Any, n: int, rng: PrivacyRNG | None = None
) -> list[Any]:
    """``n`` independent outputs of ``release(data, rng)`` (the same ``rng`` stream throughout)."""
    gen = as_privacy_rng(rng)
    return [release(data, gen) for _ in range(int(n))]


def _as_matrix(outputs: Sequence[Any]) -> np.ndarray | None:
    rows = [np.asarray(o, dtype=np.float64).reshape(-1) for o in outputs]
    if not rows or len({r.size for r in rows}) != 1:
        return None
    return np.stack(rows)


def _projection(
    sel: Sequence[Any], sel_prime: Sequence[Any]
) -> Callable[[Sequence[Any]], np.ndarray]:
    """The default statistic: outputs as vectors projected on the difference of the two means
    estimated on the selection half (the likelihood-ratio direction of a location family)."""
    a, b = _as_matrix(sel), _as_matrix(sel_prime)
    if a is None or b is None or a.shape[1] != b.shape[1]:
        raise InvalidPrivacyParameterError(
            "the outputs have different lengths: pass statistic= (a function of one output to a number)."
        )
    w = b.mean(0) - a.mean(0)
    norm = float(np.linalg.norm(w))
    w = w / norm if norm > 0 and np.isfinite(norm) else np.ones(a.shape[1])

    def project(outputs: Sequence[Any]) -> np.ndarray:
        m = _as_matrix(outputs)
        assert m is not None
        return m @ w

    return project


# ------------------------------------------------------------------------------------------------
# the audit
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`audit_epsilon`.

    Attributes
    ----------
    epsilon_lb
        Equation (1) on the held-out runs (``-inf``: no evidence of any privacy loss).
    selection_epsilon
        The same quantity on the selection half for the chosen set (optimistic; information only).
    n_runs
        Held-out runs per input.
    count, count_prime
        Held-out runs of the input playing D (resp. D') that fell in the rejection set.
    threshold, side
        The rejection set ``{T >= threshold}`` (side ``">="``), ``{T <= threshold}`` (``"<="``) or
        ``{T == threshold}`` (``"=="``).
    swapped
        True when D' plays the role of D in (1) (the set is likelier under D').
    delta, alpha
        The δ of the claim and the Clopper–Pearson level (each bound at 1 − α).
    """

    epsilon_lb: float
    selection_epsilon: float
    n_runs: int
    count: int
    count_prime: int
    threshold: float
    side: str
    swapped: bool
    delta: float
    alpha: float


def _set_counts(t: np.ndarray, values: np.ndarray, side: str) -> np.ndarray:
    """How many of ``t`` fall in ``{T >= v}``, ``{T <= v}`` or ``{T == v}`` for every ``v``."""
    ts = np.sort(t)
    if side == ">=":
        return t.size - np.searchsorted(ts, values, side="left")
    if side == "<=":
        return np.searchsorted(ts, values, side="right")
    return np.searchsorted(ts, values, side="right") - np.searchsorted(ts, values, side="left")


def in_set(t: np.ndarray, threshold: float, side: str) -> np.ndarray:
    """Membership of ``t`` in ``{T >= threshold}``, ``{T <= threshold}`` or ``{T == threshold}``."""
    if side == ">=":
        return t >= threshold
    if side == "<=":
        return t <= threshold
    return t == threshold


def _choose_set(
    t: np.ndarray, t_prime: np.ndarray, *, delta: float, alpha: float
) -> tuple[float, str, bool, float]:
    """The rejection set maximising (1) on the selection half: thresholds on both sides, both
    orientations, and single values when the statistic takes at most :data:`MAX_SINGLETONS` values."""
    pooled = np.unique(np.concatenate([t, t_prime]))
    sides = (">=", "<=", "==") if pooled.size <= MAX_SINGLETONS else (">=", "<=")
    if pooled.size > MAX_CANDIDATES:
        pooled = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, MAX_CANDIDATES), method="nearest"))
    n, n_prime = t.size, t_prime.size
    best = (float(pooled[0]), ">=", False, -math.inf)
    for side in sides:
        k, kp = _set_counts(t, pooled, side), _set_counts(t_prime, pooled, side)
        for swapped, (a, na, b, nb) in ((False, (k, n, kp, n_prime)), (True, (kp, n_prime, k, n))):
            eps = np.asarray(epsilon_lower_bound(a, na, b, nb, delta=delta, alpha=alpha))
            i = int(np.argmax(eps))
            if eps[i] > best[3]:
                best = (float(pooled[i]), side, swapped, float(eps[i]))
    return best


def _statistic_of(
    statistic: Callable[[Any], float] | None, sel: Sequence[Any], sel_prime: Sequence[Any]
) -> Callable[[Sequence[Any]], np.ndarray]:
    if statistic is None:
        return _projection(sel, sel_prime)
    fn = statistic

    def stat(outputs: Sequence[Any]) -> np.ndarray:
        return np.array([float(fn(o)) for o in outputs], dtype=np.float64)

    return stat


def audit_from_outputs(
    selection: Sequence[Any],
    selection_prime: Sequence[Any],
    held_out: Sequence[Any],
    held_out_prime: Sequence[Any],
    *,
    delta: float = 0.0,
    alpha: float = 1e-3,
    statistic: Callable[[Any], float] | None = None,
) -> AuditResult:
    """:func:`audit_epsilon` on releases already made: the rejection set is chosen on
    ``selection`` (from D) and ``selection_prime`` (from D'), the bound (1) computed on the
    held-out releases ``held_out`` and ``held_out_prime`` (which must be independent of the
    selection releases; the two held-out samples must have the same size)."""
    if not 0.0 < alpha < 0.5:
        raise InvalidPrivacyParameterError(f"alpha must lie in (0, 0.5), got {alpha!r}.")
    n_runs = len(held_out)
    if n_runs < 1 or len(held_out_prime) != n_runs or not selection or not selection_prime:
        raise InvalidPrivacyParameterError(
            "an audit needs non-empty selection samples and two held-out samples of the same size, got "
            f"{len(selection)}, {len(selection_prime)}, {n_runs}, {len(held_out_prime)}."
        )
    stat = _statistic_of(statistic, selection, selection_prime)
    threshold, side, swapped, eps_sel = _choose_set(
        stat(selection), stat(selection_prime), delta=delta, alpha=alpha
    )
    k = int(np.sum(in_set(stat(held_out), threshold, side)))
    k_prime = int(np.sum(in_set(stat(held_out_prime), threshold, side)))
    a, b = (k_prime, k) if swapped else (k, k_prime)
    eps_lb = float(epsilon_lower_bound(a, n_runs, b, n_runs, delta=delta, alpha=alpha))
    return AuditResult(eps_lb, eps_sel, n_runs, a, b, threshold, side, swapped, float(delta), float(alpha))


def audit_epsilon(
    release: Callable[[Any, PrivacyRNG], Any],
    data: Any,
    data_prime: Any,
    *,
    n_runs: int,
    delta: float = 0.0,
    alpha: float = 1e-3,
    rng: PrivacyRNG | None = None,
    statistic: Callable[[Any], float] | None = None,
    selection_runs: int | None = None,
) -> AuditResult:
    """A Clopper–Pearson lower confidence bound on the ε of ``release`` (module docstring, (1)).

    Parameters
    ----------
    release
        ``release(data, rng) -> output``: one release with its noise from ``rng``.
    data, data_prime
        Neighbouring inputs (at the sensitivity bound, for a tight audit).
    n_runs
        Held-out releases per input; the bound (1) is computed from these only.
    delta
        The δ of the claim being audited (0 for pure ε-DP).
    alpha
        Each Clopper–Pearson bound holds with probability 1 − α; the ε bound with 1 − 2α.
    rng
        Source of the release noise: a :class:`PrivacyRNG` (OS entropy if None; the seeded test RNG
        for reproducible audits).
    statistic
        Output -> number (e.g. the index of the first positive answer of a sparse vector);
        default: the output as a vector projected on the difference of the two mean outputs,
        estimated on the selection half.
    selection_runs
        Releases per input used to choose the rejection set (default ``n_runs``).

    Returns
    -------
    AuditResult
    """
    n_runs = int(n_runs)
    n_sel = n_runs if selection_runs is None else int(selection_runs)
    if n_runs < 1 or n_sel < 1:
        raise InvalidPrivacyParameterError(f"n_runs and selection_runs must be >= 1, got {n_runs}, {n_sel}.")
    gen = as_privacy_rng(rng)
    sel = run_releases(release, data, n_sel, gen)
    sel_prime = run_releases(release, data_prime, n_sel, gen)
    hold = run_releases(release, data, n_runs, gen)
    hold_prime = run_releases(release, data_prime, n_runs, gen)
    return audit_from_outputs(sel, sel_prime, hold, hold_prime, delta=delta, alpha=alpha, statistic=statistic)


# ------------------------------------------------------------------------------------------------
# grid membership and reachability
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lattice:
    """A release grid: ``{k·step}`` with ``step`` a power of two, or ``{k/denominator}``.

    ``denominator`` describes releases computed as ``count / N`` (the binomial release): the
    output is on the grid when ``round(y·N)/N == y`` exactly.
    """

    step: float = 1.0
    denominator: int | None = None

    def __post_init__(self) -> None:
        if self.denominator is None:
            m, _ = math.frexp(self.step)
            if not (math.isfinite(self.step) and self.step > 0 and m == 0.5):
                raise InvalidPrivacyParameterError(f"a grid step must be a power of two, got {self.step!r}.")
        elif int(self.denominator) < 1:
            raise InvalidPrivacyParameterError(f"a grid denominator must be >= 1, got {self.denominator!r}.")

    def units(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(integer units, on-grid mask) of ``values``: exact membership, |units| < 2⁵³."""
        v = np.asarray(values, dtype=np.float64)
        if self.denominator is None:
            u = v / self.step  # exact: division by a power of two
            k = np.rint(u)
            on = (u == k) & (np.abs(k) < 2.0**53)
        else:
            k = np.rint(v * self.denominator)
            on = (k / self.denominator == v) & (np.abs(k) < 2.0**53)
        return k, on & np.isfinite(v)


def power_of_two_spacing(values: Any) -> float:
    """The largest power of two γ with every value an integer multiple of γ (``inf`` if all are 0).

    For a release on a grid γ with integer noise of scale >> 1 unit this is γ itself (with
    overwhelming probability over a few hundred outputs); for ``x + float noise`` it is about the
    ulp of the smallest output, i.e. data-dependent and ~2⁻⁵² of the values.
    """
    v = np.abs(np.asarray(values, dtype=np.float64).reshape(-1))
    v = v[v != 0]
    if v.size == 0:
        return math.inf
    if not np.all(np.isfinite(v)):
        return 0.0
    mant, exp = np.frexp(v)  # v = mant·2^exp, mant in [0.5, 1): 53-bit integer m = mant·2^53
    m = (mant * 2.0**53).astype(np.int64)
    trailing = np.zeros(m.shape, dtype=np.int64)
    rest = m.copy()
    for _ in range(53):  # count trailing zero bits of the 53-bit significand
        even = (rest & 1) == 0
        if not even.any():
            break
        trailing += even
        rest = np.where(even, rest >> 1, rest)
    lowest = exp.astype(np.int64) - 53 + trailing  # v = odd·2^lowest
    return math.ldexp(1.0, int(lowest.min()))


@dataclass(frozen=True)
class GridCheck:
    """The outcome of :func:`check_grid`.

    Attributes
    ----------
    n_outputs
        Outputs checked (D and D' together, every coordinate).
    off_grid
        Outputs not exactly on the grid (declared, or the inferred one of the other input).
    outside_range
        Outputs outside the declared output range of *either* input (reachable from one input
        only).
    spacing, spacing_prime
        The inferred power-of-two spacing of the outputs of D and of D' (:func:`power_of_two_spacing`).
    min_spacing
        The public lower bound the inferred spacing must reach (0: not checked).
    declared
        True when a lattice was declared (membership was checked against it; the inferred spacings
        are then information only).
    """

    n_outputs: int
    off_grid: int
    outside_range: int
    spacing: float
    spacing_prime: float
    min_spacing: float
    declared: bool

    @property
    def same_grid(self) -> bool:
        """The inferred grids of D and D' agree (a grid chosen from public quantities only)."""
        a, b = self.spacing, self.spacing_prime
        return a == b or math.isinf(a) or math.isinf(b)

    @property
    def ok(self) -> bool:
        """On the declared grid (or on one inferred grid for D and D', no finer than ``min_spacing``)
        and inside both output ranges."""
        if self.off_grid or self.outside_range:
            return False
        return self.declared or (self.same_grid and min(self.spacing, self.spacing_prime) >= self.min_spacing)


def _flat(outputs: Sequence[Any]) -> np.ndarray:
    parts = [np.asarray(o, dtype=np.float64).reshape(-1) for o in outputs]
    return np.concatenate(parts) if parts else np.zeros(0)


def check_grid(
    outputs: Sequence[Any],
    outputs_prime: Sequence[Any],
    *,
    lattice: Lattice | None = None,
    min_spacing: float = 0.0,
    output_range: tuple[float, float] | None = None,
    output_range_prime: tuple[float, float] | None = None,
) -> GridCheck:
    """Check that the outputs of D and D' lie on one data-independent grid (module docstring, 2).

    Parameters
    ----------
    outputs, outputs_prime
        Releases from D and from D' (arrays of any shape; every coordinate is checked).
    lattice
        The declared grid, or None to check the inferred power-of-two grids instead (the same for
        D and D', at least ``min_spacing``).
    min_spacing
        A public lower bound on the grid step (e.g. the noise scale times 2⁻²⁴).
    output_range, output_range_prime
        The declared output range from D and from D' (None: unbounded). Every output of either
        input must lie in both ranges: an output in one only is reachable from one input only.
    """
    y, y_prime = _flat(outputs), _flat(outputs_prime)
    both = np.concatenate([y, y_prime])
    if lattice is not None:
        _, on = lattice.units(both)
        off = int(np.sum(~on))
    else:
        off = int(np.sum(~np.isfinite(both)))
    mask = np.zeros(both.shape, dtype=bool)
    for span in (output_range, output_range_prime):
        if span is not None:
            mask |= (both < span[0]) | (both > span[1])
    outside = int(np.sum(mask))
    if output_range != output_range_prime:  # the declared reachable sets differ: one input only
        outside = max(outside, 1)
    return GridCheck(
        int(both.size), off, outside, power_of_two_spacing(y), power_of_two_spacing(y_prime),
        float(min_spacing), lattice is not None,
    )


# ------------------------------------------------------------------------------------------------
# the floating-point distinguishing test (Mironov 2012)
# ------------------------------------------------------------------------------------------------


def _laplace_sampler(k: np.ndarray, scale: float) -> np.ndarray:
    """The output of :meth:`PrivacyRNG.laplace` for the uniform of index ``k`` (exactly the same
    floating-point operations: ``u = (k + ½)·2⁻⁵²``, ``−b·sgn(u − ½)·log1p(−2|u − ½|)``)."""
    u = (k.astype(np.float64) + 0.5) * _TWO_M52
    v = u - 0.5
    return -np.asarray(scale, dtype=np.float64) * np.sign(v) * np.log1p(-2.0 * np.abs(v))


def laplace_float_reaches(scale: float) -> Callable[[np.ndarray, float], np.ndarray]:
    """``reaches(y, x)``: whether ``y == fl(x + e)`` for some output ``e`` of
    :meth:`PrivacyRNG.laplace` at ``scale``.

    The sampler is a non-decreasing function of its uniform's index k < 2⁵², and so is
    ``fl(x + e(k))``; a binary search finds the first k whose output is >= y, and the k within
    8 of it (a margin for a last-bit non-monotonicity of ``log1p``) are compared exactly. This is
    the test of Mironov (2012) for the library's own float sampler.
    """
    b = float(scale)

    def reaches(y: np.ndarray, x: float) -> np.ndarray:
        target = np.asarray(y, dtype=np.float64).reshape(-1)
        lo = np.zeros(target.shape, dtype=np.int64)
        hi = np.full(target.shape, _N_UNIFORMS, dtype=np.int64)
        while np.any(lo < hi):  # first k with fl(x + e(k)) >= y (hi = 2^52 if none)
            mid = (lo + hi) // 2
            go_right = (x + _laplace_sampler(np.minimum(mid, _N_UNIFORMS - 1), b)) < target
            active = lo < hi
            lo = np.where(active & go_right, mid + 1, lo)
            hi = np.where(active & ~go_right, mid, hi)
        found = np.zeros(target.shape, dtype=bool)
        for off in range(-8, 9):
            k = lo + off
            ok = (k >= 0) & (k < _N_UNIFORMS)
            kk = np.clip(k, 0, _N_UNIFORMS - 1)
            found |= ok & ((x + _laplace_sampler(kk, b)) == target)
        return found.reshape(np.shape(y))

    return reaches


def impossible_fraction(
    outputs: Sequence[Any], data_prime: float, reaches: Callable[[np.ndarray, float], np.ndarray]
) -> float:
    """The fraction of ``outputs`` (releases from D) that the release cannot produce from D'.

    ``reaches(y, x')`` decides whether ``y`` is a possible output from the input ``x'``
    (e.g. :func:`laplace_float_reaches`). Each impossible output identifies D with certainty: a
    mechanism with a nonzero fraction is not (ε, δ)-DP for any ε when δ is below that fraction
    (Mironov 2012).
    """
    y = _flat(outputs)
    if y.size == 0:
        raise InvalidPrivacyParameterError("impossible_fraction needs at least one output.")
    return float(np.mean(~np.asarray(reaches(y, float(data_prime)), dtype=bool)))
