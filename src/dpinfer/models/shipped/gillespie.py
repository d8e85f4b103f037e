"""Exact simulation of the SIR epidemic: Gillespie's direct method, compiled and parallel.

The SIR Markov jump process in a closed population of K individuals starts at S = K - I0, I = I0,
R = 0, with infection rate ``β·S·I/K`` and recovery rate ``γ·I``. :func:`gillespie_sir` simulates
it exactly (compiled with numba, parallel over a batch, one private xoroshiro128+ stream per
simulation so that results do not depend on the thread schedule) and records ``I`` at given times.

The pieces of one exact event (:func:`next_event_time`, :func:`infect_or_recover`) and of the
recording on the time grid (:func:`record_initial`, :func:`record_before`) are shared with the
approximate hybrid simulator (:mod:`dpinfer.models.shipped.sir_tau_leap`), which runs the same exact step
while few are infected. They are small inlined functions: one ``direct_step`` returning
``(t, S, I, j)`` was tried and made the exact simulator ~1.6x slower (numba 0.68, one thread).
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from ...errors import InvalidDataError
from ...randomness import as_generator
from .streams import next_double, stream_seeds

DEFAULT_TIMES = np.arange(0.0, 154.0, 17.0)  # 0, 17, ..., 153

# ----------------------------------------------------------------------------------------------
# shared compiled pieces (inlined into the simulators' loops)
# ----------------------------------------------------------------------------------------------


@numba.njit(inline="always")
def record_initial(times: np.ndarray, infected: int, out: np.ndarray) -> int:
    """Record the initial state at every time ``<= 0``; returns the first index left to record."""
    j = 0
    while j < times.shape[0] and times[j] <= 0.0:
        out[j] = infected
        j += 1
    return j


@numba.njit(inline="always")
def record_before(times: np.ndarray, j: int, t: float, infected: int, out: np.ndarray) -> int:
    """Record ``infected`` at the times from index ``j`` on that are ``< t``; returns the next index."""
    while j < times.shape[0] and times[j] < t:
        out[j] = infected
        j += 1
    return j


@numba.njit(inline="always")
def next_event_time(t: float, total: float, state: np.ndarray) -> float:
    """Time of the next event: ``t`` plus an exponential waiting time of rate ``total``."""
    return t - math.log(next_double(state)) / total


@numba.njit(inline="always")
def infect_or_recover(S: int, I: int, r_inf: float, total: float, state: np.ndarray) -> tuple[int, int]:
    """The kind of the next event: an infection with probability ``r_inf/total``, else a recovery."""
    if next_double(state) * total < r_inf:
        return S - 1, I + 1
    return S, I - 1


# ----------------------------------------------------------------------------------------------
# the exact simulator
# ----------------------------------------------------------------------------------------------


@numba.njit(cache=True)
def _gillespie_one(beta, gamma, K, S0, I0, times, state, max_events, record_after, out):
    """Exact SIR path; writes I(times) into ``out``; returns (final S, final I, events)."""
    t = 0.0
    S = S0
    I = I0
    nt = times.shape[0]
    events = 0
    invK = 1.0 / K
    j = record_initial(times, I, out)  # the initial state, whatever the recording convention
    while j < nt:
        if I == 0:
            out[j:] = 0
            break
        r_inf = beta * S * I * invK
        r_rec = gamma * I
        total = r_inf + r_rec
        t_next = next_event_time(t, total, state)
        if not record_after:
            j = record_before(times, j, t_next, I, out)
            if j == nt:
                break
        S, I = infect_or_recover(S, I, r_inf, total, state)
        t = t_next
        events += 1
        if record_after:
            # authors' sir_c.cpp: the event that crosses a grid point is applied before recording
            j = record_before(times, j, t, I, out)
        if events >= max_events:
            out[j:] = -1
            break
    return S, I, events


@numba.njit(parallel=True, cache=True)
def _gillespie_batch(betas, gammas, K, S0, I0, times, seeds, max_events, record_after):
    m = betas.shape[0]
    out = np.empty((m, times.shape[0]), dtype=np.int64)
    final = np.empty((m, 3), dtype=np.int64)
    for i in numba.prange(m):
        state = seeds[i].copy()
        S, I, ev = _gillespie_one(
            betas[i], gammas[i], K, S0, I0, times, state, max_events, record_after, out[i]
        )
        final[i, 0] = S
        final[i, 1] = I
        final[i, 2] = ev
    return out, final


def batch_inputs(
    beta: Any, gamma: Any, population: int, times: Any, initial_infected: int, seed: Any
) -> tuple[np.ndarray, np.ndarray, float, int, int, np.ndarray, np.ndarray]:
    """The validated leading arguments of an SIR batch kernel.

    Returns ``(betas, gammas, K, S0, I0, times, seeds)``: the rates broadcast to 1-D float arrays,
    K as a float, the initial S and I, the recording times and one xoroshiro128+ state per path.

    Raises
    ------
    InvalidDataError
        If a rate is negative or not finite, ``population < 1``, ``initial_infected`` is not in
        ``[1, population]``, or ``times`` is not a non-decreasing 1-D array of non-negative numbers.
    """
    betas, gammas = np.broadcast_arrays(
        np.atleast_1d(np.asarray(beta, float)), np.atleast_1d(np.asarray(gamma, float))
    )
    if np.any(~np.isfinite(betas)) or np.any(betas < 0) or np.any(~np.isfinite(gammas)) or np.any(gammas < 0):
        raise InvalidDataError("beta and gamma must be finite and non-negative.")
    K = int(population)
    if K < 1 or not 1 <= initial_infected <= K:
        raise InvalidDataError(
            f"need population >= 1 and 1 <= initial_infected <= population, got {K}, {initial_infected}."
        )
    t = np.asarray(times, dtype=np.float64)
    if t.ndim != 1 or np.any(np.diff(t) < 0) or np.any(t < 0):
        raise InvalidDataError("times must be a non-decreasing 1-D array of non-negative numbers.")
    seeds = stream_seeds(as_generator(seed), betas.size)
    I0 = int(initial_infected)
    return (
        np.ascontiguousarray(betas, dtype=np.float64),
        np.ascontiguousarray(gammas, dtype=np.float64),
        float(K),
        K - I0,
        I0,
        t,
        seeds,
    )


def gillespie_sir(
    beta: Any,
    gamma: Any,
    population: int,
    times: Any = DEFAULT_TIMES,
    initial_infected: int = 1,
    seed: Any = None,
    max_events: int | None = None,
    record_after_event: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact SIR paths (Gillespie's direct method), batched and parallel.

    Parameters
    ----------
    beta, gamma
        Infection and recovery rates, scalars or arrays of equal length (one path each).
    population
        K; the epidemic starts at S = K - initial_infected.
    times
        Increasing recording times; ``I(t)`` is the state just before the first event after t.
    max_events
        Safety cap per path (default 4·K + 10); a capped path records -1 at later times.
    record_after_event
        Reproduce the authors' ``sir_c.cpp`` quirk (record after applying the crossing event).

    Returns
    -------
    infected : int64 array (m, len(times))
    final : int64 array (m, 3)
        S and I at the end of the recorded horizon (or extinction) and the number of events.
    """
    args = batch_inputs(beta, gamma, population, times, initial_infected, seed)
    cap = 4 * int(population) + 10 if max_events is None else int(max_events)
    return _gillespie_batch(*args, cap, bool(record_after_event))
