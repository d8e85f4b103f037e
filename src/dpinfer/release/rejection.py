"""Rejection ABC (Pritchard et al. 1999), the non-private baseline of ABCDP.

Accept θ_t when ρ(Y*, Y_t) <= ε_abc (eq. (4) of Park et al. 2021). The observed data are
used without any noise: the result is NOT differentially private.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..distances.base import Distance
from ..errors import InvalidPrivacyParameterError
from .abc_result import ABCResult
from .abcdp import check_c, check_epsilon_abc
from .draws import SimulatedDraws, as_draw_source


def rejection_abc_draws(
    observed: Any,
    draws: Any,
    distance: Distance,
    epsilon_abc: float,
    max_accept: int | None = None,
    *,
    batch_size: int = 256,
    param_names: tuple[str, ...] = (),
    meta: dict[str, Any] | None = None,
) -> ABCResult:
    """Rejection ABC over a given stream; stops after ``max_accept`` acceptances if given."""
    eps_abc = check_epsilon_abc(epsilon_abc)
    if not isinstance(distance, Distance):
        raise InvalidPrivacyParameterError("distance must be a dpinfer.distances.Distance.")
    source = as_draw_source(draws, batch_size=batch_size)
    if max_accept is not None:
        max_accept = check_c(max_accept, source.n_draws)
    prepared = distance.prepare(observed)
    accepted: list[np.ndarray] = []
    index: list[np.ndarray] = []
    offset = 0
    count = 0
    p = None
    for theta, sims in source.batches():
        p = theta.shape[1]
        rho = distance.batch(prepared, sims)
        hit = np.flatnonzero(rho <= eps_abc)
        n_seen = rho.size
        if max_accept is not None and count + hit.size >= max_accept:
            hit = hit[: max_accept - count]
            n_seen = int(hit[-1]) + 1
        accepted.append(theta[hit])
        index.append(hit + offset)
        count += hit.size
        offset += n_seen
        if max_accept is not None and count >= max_accept:
            break
    acc = np.concatenate(accepted) if accepted else np.zeros((0, p or 1))
    idx = np.concatenate(index) if index else np.zeros(0, dtype=np.int64)
    return ABCResult(acc, idx, offset, eps_abc, tuple(param_names), dict(meta or {}))


def rejection_abc(
    observed: Any,
    prior: Any,
    simulator: Any,
    distance: Distance,
    epsilon_abc: float,
    n_draws: int,
    seed: int = 0,
    *,
    max_accept: int | None = None,
    batch_size: int = 256,
    param_names: tuple[str, ...] = (),
) -> ABCResult:
    """Non-private rejection ABC: θ_t ~ prior, Y_t ~ simulator(θ_t), accept if ρ <= ε_abc.

    Parameters
    ----------
    prior
        ``prior(n, rng) -> (n, p)`` or an object with ``sample(n, rng)``.
    simulator
        ``simulator(theta (B, p), rng) -> (B, ...)``.
    n_draws, seed, batch_size
        The stream (see :class:`~dpinfer.release.SimulatedDraws`).
    max_accept
        Stop after this many acceptances (the non-private counterpart of ABCDP's c).
    """
    draws = SimulatedDraws(prior, simulator, n_draws, seed=seed, batch_size=batch_size)
    return rejection_abc_draws(
        observed, draws, distance, epsilon_abc, max_accept, param_names=param_names,
        meta={"seed": seed, "batch_size": batch_size},
    )
