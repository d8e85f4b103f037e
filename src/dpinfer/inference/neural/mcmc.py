"""Vectorised MCMC over several chains: slice sampling, adaptive Metropolis, split R-hat.

Used by SPLE to sample ``p(θ | s_obs) ∝ q_φ(s_obs | θ)·p(θ)``. All chains advance together so the
flow's log density is evaluated on a batch of ``C`` parameter vectors per call.

* :func:`slice_sample`: univariate slice sampling with stepping out and shrinkage (Neal 2003,
  Fig. 3 and 5), one coordinate after another, the chains advancing independently within a step
  (one batched call serves every chain's next point); the initial bracket width of each
  coordinate is tuned during warm-up to twice the spread of the chains.
* :func:`adaptive_metropolis`: random-walk Metropolis with the covariance ``2.38²/d·Σ̂ + 1e-8 I``
  (Haario, Saksman & Tamminen 2001) adapted from all chains during warm-up and frozen afterwards,
  so the kept draws come from a fixed reversible kernel.
* :func:`split_rhat`, :func:`effective_sample_size`, :func:`tail_sample_size`: ArviZ's
  rank-normalised split R-hat, bulk and tail ESS (Vehtari et al. 2021), through
  :mod:`dpinfer.diagnostics.sampling`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...diagnostics import sampling
from ...errors import InvalidDataError
from ...randomness import as_generator

LogProb = Callable[[np.ndarray], np.ndarray]
MCMC_METHODS = ("slice", "adaptive-metropolis")


def split_rhat(chains: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat per coordinate of draws ``(n_draws, n_chains, dim)`` (needs >= 4
    draws): ArviZ's, by :func:`dpinfer.diagnostics.sampling.rhat` (Vehtari et al. 2021). Unlike the
    classic split R-hat it also flags chains that differ in spread, not only in location."""
    x = np.asarray(chains, dtype=np.float64)
    if x.ndim != 3 or x.shape[0] < 4:
        raise InvalidDataError(f"split_rhat needs draws of shape (n >= 4, chains, dim), got {x.shape}.")
    return sampling.rhat(np.swapaxes(x, 0, 1))


def effective_sample_size(chains: np.ndarray) -> np.ndarray:
    """Bulk effective sample size per coordinate of draws ``(n_draws, n_chains, dim)``: ArviZ's
    rank-normalised bulk ESS (:func:`dpinfer.diagnostics.sampling.ess_bulk`)."""
    x = np.asarray(chains, dtype=np.float64)
    if x.ndim != 3 or x.shape[0] < 4:
        raise InvalidDataError(f"effective_sample_size needs draws (n >= 4, chains, dim), got {x.shape}.")
    return sampling.ess_bulk(np.swapaxes(x, 0, 1))


def tail_sample_size(chains: np.ndarray) -> np.ndarray:
    """Tail effective sample size per coordinate of draws ``(n_draws, n_chains, dim)`` (ArviZ's:
    :func:`dpinfer.diagnostics.sampling.ess_tail`)."""
    x = np.asarray(chains, dtype=np.float64)
    if x.ndim != 3 or x.shape[0] < 4:
        raise InvalidDataError(f"tail_sample_size needs draws (n >= 4, chains, dim), got {x.shape}.")
    return sampling.ess_tail(np.swapaxes(x, 0, 1))


class _SliceState:
    """Per-chain state of the current coordinate update of :func:`slice_sample`."""

    def __init__(self, C: int, m: int) -> None:
        self.m = m
        self.kc = np.zeros(C, dtype=int)  # the coordinate being updated (d: the step is done)
        self.y, self.x0 = np.empty(C), np.empty(C)  # slice level, coordinate value before the update
        self.left, self.right = np.empty(C), np.empty(C)
        self.budget_l, self.budget_r = np.zeros(C, dtype=int), np.zeros(C, dtype=int)
        self.act_l, self.act_r = np.zeros(C, dtype=bool), np.zeros(C, dtype=bool)
        self.shrinking, self.shrinks = np.zeros(C, dtype=bool), np.zeros(C, dtype=int)

    def begin(self, idx: np.ndarray, x: np.ndarray, lp: np.ndarray, w: np.ndarray, rng: Any) -> None:
        """Start the update of coordinate ``kc`` of chains ``idx``: level, bracket, budgets."""
        m, k = self.m, self.kc[idx]
        self.y[idx] = lp[idx] - rng.exponential(size=idx.size)
        self.x0[idx] = x[idx, k]
        self.left[idx] = self.x0[idx] - w[k] * rng.random(idx.size)
        self.right[idx] = self.left[idx] + w[k]
        j = np.floor(m * rng.random(idx.size)).astype(int)
        self.budget_l[idx], self.budget_r[idx] = j, m - 1 - j
        self.act_l[idx], self.act_r[idx] = j > 0, m - 1 - j > 0
        self.shrinking[idx] = ~(self.act_l[idx] | self.act_r[idx])
        self.shrinks[idx] = 0

    def step_out(
        self, il: np.ndarray, ir: np.ndarray, lp_l: np.ndarray, lp_r: np.ndarray, stepping: np.ndarray,
        w: np.ndarray,
    ) -> None:
        """Stepping out: widen an end while it is inside the slice and its budget lasts."""
        grow_l = lp_l > self.y[il]
        grow_r = lp_r > self.y[ir]
        self.left[il] = np.where(grow_l, self.left[il] - w[self.kc[il]], self.left[il])
        self.right[ir] = np.where(grow_r, self.right[ir] + w[self.kc[ir]], self.right[ir])
        self.budget_l[il] -= 1
        self.budget_r[ir] -= 1
        self.act_l[il] = grow_l & (self.budget_l[il] > 0)
        self.act_r[ir] = grow_r & (self.budget_r[ir] > 0)
        self.shrinking |= stepping & ~self.act_l & ~self.act_r

    def shrink(
        self, isr: np.ndarray, cand: np.ndarray, lp_c: np.ndarray, x: np.ndarray, lp: np.ndarray,
        max_shrink: int,
    ) -> np.ndarray:
        """Shrinkage: accept a candidate inside the slice, else shrink the bracket towards x0.
        Returns the chains whose coordinate update is finished."""
        acc = lp_c > self.y[isr]
        ia = isr[acc]
        x[ia, self.kc[ia]] = cand[acc]
        lp[ia] = lp_c[acc]
        rej, c_rej = isr[~acc], cand[~acc]
        lower = c_rej < self.x0[rej]
        self.left[rej[lower]] = c_rej[lower]
        self.right[rej[~lower]] = c_rej[~lower]
        self.shrinks[rej] += 1
        # chains that exhausted the shrinkage budget stay where they were (still a valid move)
        return np.concatenate([ia, rej[self.shrinks[rej] >= max_shrink]])


def slice_sample(
    log_prob: LogProb,
    init: np.ndarray,
    n_steps: int,
    seed: Any = None,
    widths: np.ndarray | None = None,
    warmup: int = 0,
    max_steps_out: int = 20,
    max_shrink: int = 60,
) -> np.ndarray:
    """Coordinate-wise slice sampling of ``C`` chains; returns states ``(n_steps, C, d)``.

    Each chain updates its coordinates one after another with Neal's (2003) stepping out and
    shrinkage. The chains advance independently within a step: every call of ``log_prob``
    evaluates, for each chain still working on this step, its next point (a stepping-out end,
    both ends at once, or a shrinkage candidate), so a step costs as many calls as its busiest
    chain needs, not the sum over coordinates and phases of the busiest chain in each. All chains
    finish step ``t`` before step ``t + 1`` (the warm-up tuning uses whole steps).

    The first ``warmup`` steps tune the bracket widths (and are included in the output: the
    caller discards them).
    """
    rng = as_generator(seed)
    x = np.array(init, dtype=np.float64)
    C, d = x.shape
    lp = np.asarray(log_prob(x), dtype=np.float64)
    if not np.all(np.isfinite(lp)):
        raise InvalidDataError("every MCMC chain must start where the target density is positive.")
    w = np.ones(d) if widths is None else np.array(widths, dtype=np.float64)
    out = np.empty((n_steps, C, d))
    s = _SliceState(C, int(max_steps_out))
    for t in range(n_steps):
        s.kc[:] = 0
        s.begin(np.arange(C), x, lp, w, rng)
        while True:
            live = s.kc < d
            if not live.any():
                break
            stepping = live & ~s.shrinking
            il = np.flatnonzero(stepping & s.act_l)
            ir = np.flatnonzero(stepping & s.act_r)
            isr = np.flatnonzero(live & s.shrinking)
            cand = s.left[isr] + rng.random(isr.size) * (s.right[isr] - s.left[isr])
            idx = np.concatenate([il, ir, isr])
            probe = x[idx]
            probe[np.arange(idx.size), s.kc[idx]] = np.concatenate([s.left[il], s.right[ir], cand])
            lp_probe = np.asarray(log_prob(probe), dtype=np.float64)
            n_l, n_r = il.size, il.size + ir.size
            s.step_out(il, ir, lp_probe[:n_l], lp_probe[n_l:n_r], stepping, w)
            finished = s.shrink(isr, cand, lp_probe[n_r:], x, lp, max_shrink)
            s.kc[finished] += 1
            nxt = finished[s.kc[finished] < d]
            if nxt.size:
                s.begin(nxt, x, lp, w, rng)
        out[t] = x
        if t < warmup and C > 1 and (t + 1) % 10 == 0:
            spread = out[max(0, t - 49) : t + 1].reshape(-1, d).std(axis=0)
            w = np.where(spread > 0, 2.0 * spread, w)
    return out


def adaptive_metropolis(
    log_prob: LogProb,
    init: np.ndarray,
    n_steps: int,
    seed: Any = None,
    initial_cov: np.ndarray | None = None,
    warmup: int = 0,
) -> tuple[np.ndarray, float]:
    """Random-walk Metropolis on ``C`` chains with covariance adapted during warm-up.

    Returns states ``(n_steps, C, d)`` and the post-warm-up acceptance rate.
    """
    rng = as_generator(seed)
    x = np.array(init, dtype=np.float64)
    C, d = x.shape
    lp = np.asarray(log_prob(x), dtype=np.float64)
    if not np.all(np.isfinite(lp)):
        raise InvalidDataError("every MCMC chain must start where the target density is positive.")
    cov = np.eye(d) * 0.1 if initial_cov is None else np.atleast_2d(np.asarray(initial_cov, dtype=np.float64))
    scale = 2.38**2 / d
    chol = np.linalg.cholesky(scale * cov + 1e-8 * np.eye(d))
    out = np.empty((n_steps, C, d))
    accepted = 0
    counted = 0
    for t in range(n_steps):
        prop = x + rng.standard_normal((C, d)) @ chol.T
        lp_p = np.asarray(log_prob(prop), dtype=np.float64)
        acc = np.log(rng.random(C)) < lp_p - lp
        x[acc] = prop[acc]
        lp[acc] = lp_p[acc]
        out[t] = x
        if t >= warmup:
            accepted += int(acc.sum())
            counted += C
        elif (t + 1) % 20 == 0 and t >= 39:
            hist = out[max(0, t - 199) : t + 1].reshape(-1, d)
            emp = np.atleast_2d(np.cov(hist, rowvar=False))
            try:
                chol = np.linalg.cholesky(scale * emp + 1e-8 * np.eye(d))
            except np.linalg.LinAlgError:
                pass
    return out, accepted / max(counted, 1)


@dataclass
class MCMCResult:
    """Kept draws (``draws``: (n, dim), chains interleaved), per-chain draws, R-hat and ESS."""

    draws: np.ndarray
    chains: np.ndarray
    rhat: np.ndarray
    method: str
    acceptance_rate: float | None
    n_log_prob_calls: int
    ess: np.ndarray | None = None
    ess_tail: np.ndarray | None = None


def run_mcmc(
    log_prob: LogProb,
    init: np.ndarray,
    n_draws: int,
    *,
    method: str = "slice",
    warmup: int = 200,
    thin: int = 1,
    seed: Any = None,
    scale: np.ndarray | None = None,
) -> MCMCResult:
    """``n_draws`` draws from ``exp(log_prob)`` with ``C = len(init)`` chains.

    Each chain runs ``warmup + thin·ceil(n_draws / C)`` steps; the warm-up is discarded.
    ``scale`` (per-coordinate spread of the target, e.g. the proposal's sd) initialises the slice
    widths or the Metropolis covariance.
    """
    if method not in MCMC_METHODS:
        raise InvalidDataError(f"unknown MCMC method {method!r}; use one of {MCMC_METHODS}.")
    init = np.atleast_2d(np.asarray(init, dtype=np.float64))
    C, d = init.shape
    if C < 2:
        raise InvalidDataError("run at least 2 chains (R-hat compares chains).")
    if int(thin) != thin or thin < 1 or warmup < 0:
        raise InvalidDataError("thin must be a positive integer and warmup >= 0.")
    per_chain = max(4, -(-int(n_draws) // C))
    n_steps = int(warmup) + int(thin) * per_chain
    calls = [0]

    def counted(theta: np.ndarray) -> np.ndarray:
        calls[0] += 1
        return log_prob(theta)

    sc = np.ones(d) if scale is None else np.asarray(scale, dtype=np.float64)
    acc_rate = None
    if method == "slice":
        states = slice_sample(counted, init, n_steps, seed, widths=2.0 * sc, warmup=warmup)
    else:
        states, acc_rate = adaptive_metropolis(counted, init, n_steps, seed, np.diag(sc**2), warmup)
    kept = states[warmup:][thin - 1 :: thin][:per_chain]  # (per_chain, C, d)
    draws = kept.reshape(-1, d)[: int(n_draws)]
    return MCMCResult(
        draws, kept, split_rhat(kept), method, acc_rate, calls[0], effective_sample_size(kept),
        tail_sample_size(kept),
    )


__all__ = [
    "MCMC_METHODS",
    "MCMCResult",
    "adaptive_metropolis",
    "effective_sample_size",
    "run_mcmc",
    "slice_sample",
    "split_rhat",
    "tail_sample_size",
]
