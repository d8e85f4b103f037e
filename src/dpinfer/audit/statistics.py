"""The empirical ε lower bound of a black-box privacy audit: Clopper–Pearson bounds on releases.

A release function ``release(data, rng) -> value`` is run on two neighbouring inputs D and D'.
An (ε, δ)-DP release satisfies, for every rejection set S (Dwork & Roth 2014, Def. 2.4),

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
from ..privacy.rng import PrivacyRNG, as_privacy_rng

__all__ = [
    "AuditResult",
    "audit_epsilon",
    "audit_from_outputs",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_lower_bound",
    "in_set",
    "run_releases",
]

#: Largest number of candidate thresholds tried on the selection half.
MAX_CANDIDATES = 400
#: A statistic with at most this many distinct values is also tested on single-value sets.
MAX_SINGLETONS = 64
_TWO_M52 = 2.0**-52


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
