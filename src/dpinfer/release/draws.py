"""Streams of parameter / pseudo-data pairs {(θ_t, Y_t)}_{t=1..T} consumed in batches.

The modeler's public step of ABCDP (Park et al. 2021, Section 3): draw θ_t from the prior and
simulate Y_t. Either the pairs are given as arrays (:class:`ArrayDraws`, e.g. loaded from a
``dpinfer simulate`` file) or they are generated on the fly (:class:`SimulatedDraws`). Both
yield batches in order, so the memory used by ABCDP does not grow with T.

Reproducibility: batch k of :class:`SimulatedDraws` uses the child seed sequences
``SeedSequence(seed, spawn_key=(k, 0))`` (prior) and ``(k, 1)`` (simulator), so one seed and one
batch size reproduce the stream, in order, in any process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import numpy as np

from ..errors import InvalidDataError

Batch = tuple[np.ndarray, np.ndarray]


class DrawSource(Protocol):
    """Anything ABCDP can stream (θ_t, Y_t) batches from."""

    n_draws: int

    def batches(self) -> Iterator[Batch]:
        """Yield (θ batch (B, p), simulated batch (B, ...)) in order, T pairs in total."""
        ...


def _as_theta(theta: Any, n: int | None = None) -> np.ndarray:
    arr = np.asarray(theta, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or (n is not None and arr.shape[0] != n):
        raise InvalidDataError(
            f"parameters θ must have shape (T, p) with one row per simulation, got {arr.shape}"
            + (f" for T={n} simulations." if n is not None else ".")
        )
    return arr


class ArrayDraws:
    """Pairs given as arrays: ``thetas`` (T, p) and ``sims`` (T, ...), streamed in batches.

    Arrays may be memory-mapped (``np.load(..., mmap_mode="r")``); only one batch at a time is
    read.
    """

    def __init__(self, thetas: Any, sims: Any, batch_size: int = 256) -> None:
        sims_arr = sims if isinstance(sims, np.ndarray) else np.asarray(sims)
        if sims_arr.ndim < 2:
            raise InvalidDataError(
                f"simulations must have shape (T, ...) with one simulated data set per row, got "
                f"{sims_arr.shape}."
            )
        self.sims = sims_arr
        self.thetas = _as_theta(thetas, sims_arr.shape[0])
        self.n_draws = int(sims_arr.shape[0])
        if self.n_draws == 0:
            raise InvalidDataError("no simulations given (T = 0).")
        self.batch_size = max(1, int(batch_size))

    def batches(self) -> Iterator[Batch]:
        for start in range(0, self.n_draws, self.batch_size):
            stop = min(self.n_draws, start + self.batch_size)
            yield self.thetas[start:stop], np.asarray(self.sims[start:stop])


class SimulatedDraws:
    """Pairs generated on the fly: θ ~ prior, Y ~ simulator(θ), batch by batch.

    Parameters
    ----------
    prior
        ``prior(n, rng) -> (n, p)`` (or an object with ``sample(n, rng)``).
    simulator
        ``simulator(theta (B, p), rng) -> (B, ...)``, vectorised over the batch.
    n_draws
        T, the total number of pairs.
    seed
        The simulation seed (never used for privacy noise).
    batch_size
        Pairs per batch; with ``seed`` it determines the stream.
    """

    def __init__(
        self,
        prior: Callable[[int, np.random.Generator], np.ndarray] | Any,
        simulator: Callable[[np.ndarray, np.random.Generator], np.ndarray],
        n_draws: int,
        seed: int = 0,
        batch_size: int = 256,
    ) -> None:
        if int(n_draws) != n_draws or int(n_draws) < 1:
            raise InvalidDataError(f"n_draws must be an integer >= 1, got {n_draws!r}.")
        self.prior = prior.sample if hasattr(prior, "sample") else prior
        self.simulator = simulator
        self.n_draws = int(n_draws)
        self.seed = int(seed)
        self.batch_size = max(1, int(batch_size))

    def batch(self, k: int) -> Batch:
        """Batch number ``k`` (0-based) of the stream."""
        start = k * self.batch_size
        n = min(self.batch_size, self.n_draws - start)
        if n <= 0:
            raise IndexError(f"batch {k} is beyond the {self.n_draws} draws.")
        rng_prior = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(k, 0)))
        rng_sim = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(k, 1)))
        theta = _as_theta(self.prior(n, rng_prior), n)
        sims = np.asarray(self.simulator(theta, rng_sim))
        if sims.shape[0] != n:
            raise InvalidDataError(
                f"the simulator returned {sims.shape[0]} data sets for a batch of {n} parameters."
            )
        return theta, sims

    def batches(self) -> Iterator[Batch]:
        n_batches = -(-self.n_draws // self.batch_size)
        for k in range(n_batches):
            yield self.batch(k)

    def materialize(self) -> tuple[np.ndarray, np.ndarray]:
        """All T pairs as arrays (for saving a simulation file; memory grows with T)."""
        thetas, sims = zip(*self.batches(), strict=True)
        return np.concatenate(thetas), np.concatenate(sims)


def check_n_draws(n_draws: Any) -> int:
    """A draw source's declared T as an integer >= 1 (refused otherwise, before anything runs).

    T is what the privacy noise of a release is calibrated for (the query limit of the Gaussian
    sparse vector), so it must be an exact integer: a release examines at most T draws, whatever
    the source yields.
    """
    if isinstance(n_draws, bool) or not isinstance(n_draws, (int, np.integer)) or n_draws < 1:
        raise InvalidDataError(
            f"a draw source must declare n_draws, the number of (θ, Y) pairs it yields, as an integer "
            f">= 1; got {n_draws!r}. Nothing was charged or released."
        )
    return int(n_draws)


def as_draw_source(draws: Any, batch_size: int = 256) -> DrawSource:
    """A :class:`DrawSource` from a source, or from a ``(thetas, sims)`` pair of arrays.

    A source's declared ``n_draws`` is checked (:func:`check_n_draws`); ABCDP answers at most that
    many queries even if the source yields more.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise InvalidDataError(f"batch_size must be an integer >= 1, got {batch_size!r}.")
    if hasattr(draws, "batches") and hasattr(draws, "n_draws"):
        check_n_draws(draws.n_draws)
        return draws
    if isinstance(draws, tuple) and len(draws) == 2:
        return ArrayDraws(draws[0], draws[1], batch_size=batch_size)
    raise InvalidDataError(
        "draws must be a (thetas, sims) pair of arrays, an ArrayDraws or a SimulatedDraws "
        f"(prior + batched simulator), got {type(draws).__name__}."
    )
