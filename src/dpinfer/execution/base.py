"""The execution-backend interface shared by every simulation-heavy algorithm.

An algorithm splits its work into *batches*: picklable payloads that each carry their own
:class:`numpy.random.SeedSequence` (see :func:`batch_seeds`). A backend runs a pure function on
every batch and returns the results **in submission order**, never completion order. Because the
randomness of a batch is fixed by its seed and its index alone, one seed gives bit-identical
results on every backend and for every number of workers.

A batch whose worker dies (killed, out of memory, segfault) is re-run; an ordinary exception
raised by the function propagates to the caller.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


class BackendError(RuntimeError, ValueError):
    """A backend could not be created or reached (e.g. an unreachable Dask scheduler)."""


class WorkerLostError(RuntimeError):
    """Workers kept dying: a batch could not be completed within the allowed restarts."""


def batch_seeds(
    seed: int | np.random.SeedSequence | None, key: Sequence[int], n: int, start: int = 0
) -> list[np.random.SeedSequence]:
    """Seed sequences of batches ``start .. start+n-1`` of the stage ``key``.

    Batch ``j`` of stage ``key`` gets ``SeedSequence(entropy, spawn_key=root_key + key + (j,))``,
    the same child :meth:`SeedSequence.spawn` would give, but addressable directly, so a batch's
    randomness depends on its index only and not on how many batches were spawned before.
    """
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    prefix = tuple(root.spawn_key) + tuple(int(k) for k in key)
    return [
        np.random.SeedSequence(root.entropy, spawn_key=prefix + (j,), pool_size=root.pool_size)
        for j in range(start, start + n)
    ]


class Backend(ABC):
    """Runs ``fn`` over payloads; results in submission order.

    Use as a context manager (or call :meth:`close`) to release workers.
    """

    name: str = "backend"
    n_workers: int = 1

    @abstractmethod
    def map(self, fn: Callable[[Any], Any], payloads: Sequence[Any]) -> list[Any]:
        """``[fn(p) for p in payloads]``, possibly in parallel, in submission order."""

    def close(self) -> None:
        """Release workers (no-op by default)."""
        return None

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_workers={self.n_workers})"
