"""Per-simulation random streams for compiled simulators (numba).

Each simulation of a batch owns a xoroshiro128+ state (Blackman & Vigna 2018) drawn from the
batch's numpy Generator, so compiled simulators can run in parallel threads and still give results
that depend on the seed only, never on the thread schedule.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(inline="always")
def _rotl(x: np.uint64, k: np.uint64) -> np.uint64:
    return (x << k) | (x >> (np.uint64(64) - k))


@numba.njit(inline="always")
def next_double(state: np.ndarray) -> float:
    """xoroshiro128+ (Blackman & Vigna): a double in (0, 1) from the top 53 bits."""
    s0 = state[0]
    s1 = state[1]
    result = s0 + s1
    s1 ^= s0
    state[0] = _rotl(s0, np.uint64(24)) ^ s1 ^ (s1 << np.uint64(16))
    state[1] = _rotl(s1, np.uint64(37))
    return ((result >> np.uint64(11)) + 0.5) * (1.0 / 9007199254740992.0)


@numba.njit(inline="always")
def standard_normal_draw(state: np.ndarray) -> float:
    """A standard normal draw (Box-Muller, one of the pair)."""
    u1 = next_double(state)
    u2 = next_double(state)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)


def stream_seeds(gen: np.random.Generator, m: int) -> np.ndarray:
    """``m`` non-zero xoroshiro128+ states drawn from a numpy Generator."""
    seeds = gen.integers(0, np.iinfo(np.uint64).max, size=(m, 2), dtype=np.uint64, endpoint=True)
    seeds[:, 0] |= np.uint64(1)  # an all-zero state is a fixed point
    return seeds
