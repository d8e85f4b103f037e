"""The truncated prior of truncated sequential NPE (TSNPE; Deistler, Gonçalves & Macke 2022).

After a round, the current posterior flow ``q(θ | s_obs)`` defines a highest-probability region

    HPR_ε = {θ : log q(θ | s_obs) >= t_ε},   t_ε = the ε-quantile of log q(θ) under θ ~ q   (eq. 3)

(ε = 10⁻⁴ by default: the region holds all but about 10⁻⁴ of q's mass). The next round's
parameters come from the prior restricted to it, ``p̃(θ) ∝ p(θ)·1[θ ∈ HPR_ε]`` (eq. 4). Because
``p̃/p`` is constant on the region, the plain NPE loss trained on these simulations targets the
posterior itself there, with no atomic correction, so nothing can leak to where no simulation
was drawn — the failure of atomic APT over many rounds that TSNPE was built to remove.

Sampling ``p̃`` (all in the flow's space, :mod:`dpinfer.inference.neural.param_space`):

* **prior rejection**: prior draws kept when inside the region (exact; used while a pilot finds
  at least ``prior_fraction`` of the prior inside);
* **ellipsoid rejection**, for a region far narrower than the prior: candidates uniform in the
  ellipsoid spanned by the mean and covariance of ``q``'s draws, with radius ``margin`` times that
  of the farthest draw, kept when inside the region, then accepted with probability
  ``p(θ)/p̂_max`` (``p̂_max`` the largest prior density among all region points seen). This is
  exact for the part of the region inside the ellipsoid when ``p̂_max`` bounds ``p`` there; the
  part outside the ellipsoid lies beyond every one of ``q``'s draws, i.e. at q-mass of order ε;
* **importance resampling**, only when the ellipsoid yields too few draws (a region of several
  far-apart pieces in many dimensions): ``q``'s draws inside the region resampled with weights
  ``p/q`` (approximate; recorded as the route so that a user can see it happened).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

ArrayFn = Callable[[np.ndarray], np.ndarray]


def hpr_threshold(log_q: np.ndarray, quantile: float) -> float:
    """``t_ε``: the ``quantile`` of ``log q`` over draws from ``q`` (eq. 3).

    Non-finite values count as the lowest density.
    """
    lq = np.where(np.isfinite(log_q), np.asarray(log_q, dtype=np.float64), -np.inf)
    return float(np.quantile(lq, quantile, method="lower"))


def _inside(z: np.ndarray, log_q: ArrayFn, threshold: float, prior_log_prob: ArrayFn) -> tuple:
    lp = np.asarray(prior_log_prob(z), dtype=np.float64)
    lq = np.asarray(log_q(z), dtype=np.float64)
    ok = np.isfinite(lp) & np.isfinite(lq) & (lq >= threshold)
    return ok, lp


def _ball(rng: np.random.Generator, m: int, d: int) -> np.ndarray:
    """``m`` points uniform in the unit ball of R^d."""
    g = rng.standard_normal((m, d))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    return g * rng.random((m, 1)) ** (1.0 / d)


def sample_truncated_prior(
    n: int,
    rng: np.random.Generator,
    *,
    prior_sample: Callable[[int, np.random.Generator], np.ndarray],
    prior_log_prob: ArrayFn,
    log_q: ArrayFn,
    q_draws: np.ndarray,
    quantile: float,
    prior_fraction: float = 0.02,
    margin: float = 1.1,
    batch: int = 20_000,
    max_candidates: int = 5_000_000,
) -> tuple[np.ndarray, dict[str, Any]]:
    """``n`` draws from the prior restricted to ``{log q >= t_ε}`` (module docstring).

    Parameters
    ----------
    prior_sample, prior_log_prob
        The prior in the flow's space: ``prior_sample(m, rng)`` gives (m, d) points,
        ``prior_log_prob(z)`` their log density (``-inf`` outside the support).
    log_q
        The posterior flow's log density at the observed release.
    q_draws, quantile
        Draws from ``q`` and ε: ``t_ε`` is :func:`hpr_threshold` over the draws inside the prior's
        support, and the draws inside the region span the ellipsoid of the second route. Their
        ``log_q`` and prior densities are evaluated once here and reused by every route.
    margin
        The ellipsoid's radius over that of the farthest draw (default 1.1: with ``10/ε`` draws
        the farthest already lies beyond the region's edge; a larger margin costs acceptance as
        ``margin^-d``).

    Returns
    -------
    draws, info
        ``(n, d)`` draws and ``{"route", "candidates", "acceptance", "prior_mass"}``
        (``prior_mass``: the pilot's estimate of ``P_p(region)``).

    Raises
    ------
    RuntimeError
        When even the prior route finds fewer than ``n`` draws in ``max_candidates``.
    """
    n = int(n)
    qd = np.asarray(q_draws, dtype=np.float64)
    qd_lp = np.asarray(prior_log_prob(qd), dtype=np.float64)
    qd, qd_lp = qd[np.isfinite(qd_lp)], qd_lp[np.isfinite(qd_lp)]
    qd_lq = np.asarray(log_q(qd), dtype=np.float64)
    threshold = hpr_threshold(qd_lq, quantile)
    in_region = np.isfinite(qd_lq) & (qd_lq >= threshold)
    rd, rd_lp, rd_lq = qd[in_region], qd_lp[in_region], qd_lq[in_region]
    pilot = np.asarray(prior_sample(batch, rng), dtype=np.float64)
    ok, _ = _inside(pilot, log_q, threshold, prior_log_prob)
    prior_mass = float(ok.mean())
    if prior_mass >= prior_fraction:
        kept, tried = [pilot[ok]], batch
        while sum(len(k) for k in kept) < n:
            if tried >= max_candidates:
                raise RuntimeError(f"the truncated prior gave too few draws from {tried} prior draws")
            z = np.asarray(prior_sample(batch, rng), dtype=np.float64)
            kept.append(z[_inside(z, log_q, threshold, prior_log_prob)[0]])
            tried += batch
        out = np.concatenate(kept)[:n]
        info = {"route": "prior", "candidates": tried, "acceptance": prior_mass, "prior_mass": prior_mass}
        return out, info

    d = rd.shape[1]
    mu = rd.mean(axis=0)
    cov = np.atleast_2d(np.cov(rd, rowvar=False)) + 1e-12 * np.eye(d)
    chol = np.linalg.cholesky(cov)
    u = np.linalg.solve(chol, (rd - mu).T).T
    radius = margin * float(np.max(np.linalg.norm(u, axis=1)))
    lp_max = float(np.max(rd_lp)) if rd_lp.size else -np.inf
    points, logps = [], []
    tried = 0
    while True:
        z = mu + (radius * _ball(rng, batch, d)) @ chol.T
        ok, lp = _inside(z, log_q, threshold, prior_log_prob)
        tried += batch
        points.append(z[ok])
        logps.append(lp[ok])
        if ok.any():
            lp_max = max(lp_max, float(lp[ok].max()))
        lps = np.concatenate(logps)
        if np.exp(lps - lp_max).sum() >= 1.5 * n or tried >= max_candidates:
            break
    pts = np.concatenate(points)
    accept = rng.random(len(pts)) < np.exp(lps - lp_max)
    if accept.sum() < n:
        return _importance_resample(n, rng, rd, rd_lp - rd_lq, tried, prior_mass)
    info = {
        "route": "ellipsoid",
        "candidates": tried,
        "acceptance": float(accept.sum()) / tried,
        "prior_mass": prior_mass,
    }
    return pts[accept][:n], info


def _importance_resample(
    n: int,
    rng: np.random.Generator,
    region: np.ndarray,
    logw: np.ndarray,
    tried: int,
    prior_mass: float,
) -> tuple[np.ndarray, dict[str, Any]]:
    """``n`` of ``q``'s region draws resampled with weights ``p/q`` (``logw``; the approximate
    last route)."""
    w = np.exp(logw - logw.max())
    w /= w.sum()
    idx = rng.choice(len(region), size=n, replace=True, p=w)
    info = {
        "route": "importance",
        "candidates": tried,
        "acceptance": 0.0,
        "prior_mass": prior_mass,
        "ess": float(1.0 / np.sum(w**2)),
    }
    return region[idx], info


__all__ = ["hpr_threshold", "sample_truncated_prior"]
