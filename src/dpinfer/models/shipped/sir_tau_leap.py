"""An approximate SIR simulator: exact Gillespie while few are infected, tau-leaping otherwise.

Exact stochastic simulation (Gillespie's direct method) is used while ``I < switch`` (the early,
strongly stochastic phase that decides whether the epidemic takes off, and the final extinction);
otherwise the process advances by Poisson tau-leaps (Gillespie 2001): over a step τ the numbers
of infections and recoveries are drawn as Poisson(β·S·I/K·τ) and Poisson(γ·I·τ). τ follows the
mean/variance bound of Cao, Gillespie & Petzold (2006) with tolerance ``tau_tol`` (relative change
of S and I per step), is truncated at the next recording time so that the recorded states fall on
the grid, and is halved when a leap would make a count negative.

It is an approximation (the state at a recording time is exact only in distribution up to the
leap error); use it through ``SIR(simulator="hybrid")`` only after checking that the posterior it
gives agrees with the exact simulator's (see ``examples/private_data/sir_fast_simulator.py``).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from ...errors import InvalidDataError
from .gillespie import (
    DEFAULT_TIMES,
    batch_inputs,
    infect_or_recover,
    next_event_time,
    record_before,
    record_initial,
)
from .streams import next_double


@numba.njit(cache=True)
def _poisson(mu, state):
    """Poisson(mu) from the xoroshiro stream: inversion for mu < 10, PTRS (Hörmann 1993) otherwise."""
    if mu <= 0.0:
        return 0
    if mu < 10.0:
        enlam = math.exp(-mu)
        k = 0
        prod = next_double(state)
        while prod > enlam:
            prod *= next_double(state)
            k += 1
        return k
    slam = math.sqrt(mu)
    loglam = math.log(mu)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2.0)
    while True:
        U = next_double(state) - 0.5
        V = next_double(state)
        us = 0.5 - abs(U)
        k = math.floor((2.0 * a / us + b) * U + mu + 0.43)
        if us >= 0.07 and V <= vr:
            return int(k)
        if k < 0 or (us < 0.013 and V > us):
            continue
        if math.log(V) + math.log(invalpha) - math.log(a / (us * us) + b) <= -mu + k * loglam - math.lgamma(
            k + 1.0
        ):
            return int(k)


@numba.njit(cache=True)
def _hybrid_one(beta, gamma, K, S0, I0, times, state, switch, tau_tol, out):
    t = 0.0
    S = S0
    I = I0
    nt = times.shape[0]
    j = record_initial(times, I, out)
    while j < nt:
        if I == 0:
            out[j:] = 0
            break
        r_inf = beta * S * I / K
        r_rec = gamma * I
        total = r_inf + r_rec
        if I < switch:  # an exact event, as in gillespie_sir
            t_next = next_event_time(t, total, state)
            j = record_before(times, j, t_next, I, out)
            if j == nt:
                break
            S, I = infect_or_recover(S, I, r_inf, total, state)
            t = t_next
            continue
        # tau selection (Cao, Gillespie & Petzold 2006): bound the mean and sd of the change of S and I
        gs = max(tau_tol * S, 1.0)
        gi = max(tau_tol * I, 1.0)
        tau = 1e300
        if r_inf > 0:
            tau = min(tau, gs / r_inf, gs * gs / r_inf)
        mu_i = abs(r_inf - r_rec)
        if mu_i > 0:
            tau = min(tau, gi / mu_i)
        tau = min(tau, gi * gi / total)
        hit = False
        if t + tau >= times[j]:
            tau = times[j] - t
            hit = True
        while True:
            n_inf = _poisson(r_inf * tau, state)
            n_rec = _poisson(r_rec * tau, state)
            if n_inf <= S and n_rec <= I + n_inf:
                break
            tau *= 0.5
            hit = False
        S -= n_inf
        I += n_inf - n_rec
        t += tau
        if hit:
            while j < nt and times[j] <= t:
                out[j] = I
                j += 1
    return S, I


@numba.njit(parallel=True, cache=True)
def _hybrid_batch(betas, gammas, K, S0, I0, times, seeds, switch, tau_tol):
    m = betas.shape[0]
    out = np.empty((m, times.shape[0]), dtype=np.int64)
    final = np.empty((m, 2), dtype=np.int64)
    for i in numba.prange(m):
        state = seeds[i].copy()
        S, I = _hybrid_one(betas[i], gammas[i], K, S0, I0, times, state, switch, tau_tol, out[i])
        final[i, 0] = S
        final[i, 1] = I
    return out, final


def hybrid_sir(
    beta: Any,
    gamma: Any,
    population: int,
    times: Any = DEFAULT_TIMES,
    initial_infected: int = 1,
    seed: Any = None,
    switch: int = 100,
    tau_tol: float = 0.03,
) -> tuple[np.ndarray, np.ndarray]:
    """Approximate SIR paths (exact while ``I < switch``, tau-leaping otherwise), batched.

    Returns the infected counts at ``times`` (m, len(times)) and the final (S, I) (m, 2).
    """
    if not (switch >= 1 and 0 < tau_tol < 1):
        raise InvalidDataError("need switch >= 1 and 0 < tau_tol < 1.")
    args = batch_inputs(beta, gamma, population, times, initial_infected, seed)
    return _hybrid_batch(*args, int(switch), float(tau_tol))
