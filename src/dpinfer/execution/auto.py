"""The ``"auto"`` backend: time one batch in this process, then stay serial or start workers.

Worker processes cost a start-up (a second or so) and a round trip per batch (pickling the model
and the proposal population); for a cheap simulator that is 10-20× the simulation itself. So the
first batch of the first :meth:`AutoBackend.map` call runs here and is timed: if it took at least
``min_batch_seconds`` and more than one core is available, the rest of the work (this call's and
every later call's) goes to a :class:`~dpinfer.execution.processes.ProcessBackend`, else
everything stays serial. Batches carry their own seeds, so the results are the same either way.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import BackendWarning
from .base import Backend
from .serial import SerialBackend
from .shipping import cloudpickle_module, main_is_importable


def processes_or_serial(n_workers: int | None = None) -> Backend:
    """A :class:`ProcessBackend`, or the serial backend with a :class:`BackendWarning` naming the
    cause when the work could not reach the workers (no cloudpickle and a ``__main__`` that the
    workers cannot re-import: ``python -c``, stdin, a notebook)."""
    from .processes import ProcessBackend

    if cloudpickle_module() is None and not main_is_importable():
        warnings.warn(
            "backend 'processes' falls back to 'serial': cloudpickle is not installed and this "
            "program's __main__ (python -c, stdin or a notebook) cannot be re-imported by worker "
            "processes, so a model defined there could not reach them. pip install cloudpickle.",
            BackendWarning,
            stacklevel=3,
        )
        return SerialBackend()
    return ProcessBackend(n_workers)


class AutoBackend(Backend):
    """Serial for cheap batches, worker processes for expensive ones (module docstring).

    Parameters
    ----------
    n_workers
        Workers if processes are chosen (default: all cores); 1 means always serial.
    min_batch_seconds
        A first batch at least this long switches to worker processes.
    """

    def __init__(self, n_workers: int | None = None, min_batch_seconds: float = 0.25) -> None:
        self._n = n_workers
        self.min_batch_seconds = float(min_batch_seconds)
        self.chosen: Backend | None = None
        self.first_batch_seconds: float | None = None
        self.n_workers = 1

    @property
    def name(self) -> str:  # type: ignore[override]
        return "auto" if self.chosen is None else f"auto:{self.chosen.name}"

    def _choose(self, seconds: float) -> Backend:
        cores = self._n if self._n is not None else (os.cpu_count() or 1)
        if seconds >= self.min_batch_seconds and cores > 1:
            return processes_or_serial(self._n)
        return SerialBackend()

    def map(self, fn: Callable[[Any], Any], payloads: Sequence[Any]) -> list[Any]:
        payloads = list(payloads)
        if self.chosen is not None:
            return self.chosen.map(fn, payloads)
        if not payloads:
            return []
        start = time.perf_counter()
        first = fn(payloads[0])
        self.first_batch_seconds = time.perf_counter() - start
        self.chosen = self._choose(self.first_batch_seconds)
        self.n_workers = self.chosen.n_workers
        return [first, *self.chosen.map(fn, payloads[1:])]

    def close(self) -> None:
        if self.chosen is not None:
            self.chosen.close()

    def __repr__(self) -> str:
        return f"AutoBackend(chosen={self.chosen!r}, first_batch_seconds={self.first_batch_seconds})"


__all__ = ["AutoBackend", "processes_or_serial"]
