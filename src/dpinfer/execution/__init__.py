"""Execution backends (serial, processes, Dask) behind one interface.

``get_backend(spec)`` accepts ``"auto"`` (serial for cheap simulators, processes for expensive
ones, decided by timing the first batch), ``"serial"``, ``"processes"`` (all cores), ``"dask"``
(a new local cluster), a scheduler address ``"tcp://host:port"``, a ``distributed.Client`` or a
:class:`Backend` instance (returned as is).
"""

from __future__ import annotations

from typing import Any

from .auto import AutoBackend, processes_or_serial
from .base import Backend, BackendError, WorkerLostError, batch_seeds
from .processes import ProcessBackend
from .serial import SerialBackend


def get_backend(spec: Any = "processes", n_workers: int | None = None) -> Backend:
    """A backend from a name, a scheduler address, a Dask client or a Backend."""
    if isinstance(spec, Backend):
        return spec
    if spec is None or spec == "serial":
        return SerialBackend()
    if spec == "auto":
        return AutoBackend(n_workers)
    if spec == "processes":
        return processes_or_serial(n_workers)
    if spec == "dask":
        from .dask_backend import DaskBackend

        return DaskBackend(None, n_workers=n_workers or 2)
    if isinstance(spec, str) and "://" in spec:
        from .dask_backend import DaskBackend

        return DaskBackend(spec)
    if type(spec).__name__ == "Client" and type(spec).__module__.startswith("distributed"):
        from .dask_backend import DaskBackend

        return DaskBackend(spec)
    raise BackendError(
        f"unknown backend {spec!r}: use 'auto', 'serial', 'processes', 'dask', a scheduler address "
        "('tcp://host:port'), a distributed.Client or a dpinfer.execution.Backend."
    )


def __getattr__(name: str) -> Any:
    if name == "DaskBackend":  # optional dependency: imported on first use
        from .dask_backend import DaskBackend

        return DaskBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AutoBackend",
    "DaskBackend",
    "Backend",
    "BackendError",
    "ProcessBackend",
    "SerialBackend",
    "WorkerLostError",
    "batch_seeds",
    "get_backend",
]
