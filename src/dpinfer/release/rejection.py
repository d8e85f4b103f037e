"""Rejection ABC (Pritchard et al. 1999), the non-private baseline of ABCDP.

Accept θ_t when ρ(Y*, Y_t) <= ε_abc (eq. (4) of Park et al. 2021). The observed data are
used without any noise: the result is NOT differentially private.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..distances.base import Distance
from ..errors import InvalidPrivacyParameterError, NonPrivateResultWarning
from .abc_result import ABCResult
from .abcdp import check_c, check_epsilon_abc
from .draws import SimulatedDraws, as_draw_source

#: What a rejection-ABC result says about itself (``meta["privacy_warning"]``, its summary, the warning).
NON_PRIVATE_ABC = (
    "NON-PRIVATE: rejection ABC accepts θ by the exact distance to the confidential observed data, "
    "without noise; the result is NOT differentially private: do not publish it or anything computed "
    "from it. For a private release call dpinfer.release.abcdp(...) (ABCDP) charged to a ledger."
)


def warn_non_private(what: str, stacklevel: int) -> None:
    """The :class:`~dpinfer.errors.NonPrivateResultWarning` of a rejection-ABC call."""
    warnings.warn(f"{what}: {NON_PRIVATE_ABC}", NonPrivateResultWarning, stacklevel=stacklevel + 1)


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
    """Non-private rejection ABC over a given stream; stops after ``max_accept`` acceptances if
    given. Warns (:class:`~dpinfer.errors.NonPrivateResultWarning`): the result is NOT
    differentially private (its ``meta["privacy_warning"]`` and summary say so)."""
    result = _rejection(observed, draws, distance, epsilon_abc, max_accept, batch_size, param_names, meta)
    warn_non_private("rejection_abc_draws", stacklevel=2)
    return result


def _rejection(
    observed: Any,
    draws: Any,
    distance: Distance,
    epsilon_abc: float,
    max_accept: int | None,
    batch_size: int,
    param_names: tuple[str, ...],
    meta: dict[str, Any] | None,
) -> ABCResult:
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
    return ABCResult(acc, idx, offset, eps_abc, tuple(param_names),
                     {**dict(meta or {}), "privacy_warning": NON_PRIVATE_ABC})


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

    The result is NOT differentially private: a :class:`~dpinfer.errors.NonPrivateResultWarning`
    says so and names the private release (:func:`dpinfer.release.abcdp`); the result's summary
    and ``meta["privacy_warning"]`` say ``NON-PRIVATE``.

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
    result = _rejection(observed, draws, distance, epsilon_abc, max_accept, batch_size, param_names,
                        {"seed": seed, "batch_size": batch_size})
    warn_non_private("rejection_abc", stacklevel=2)
    return result
