"""The processes backend: a pool of local worker processes (default: all cores).

Work is sent with cloudpickle (:mod:`dpinfer.execution.shipping`), so functions and model classes
defined in ``__main__`` — ``python -c``, a script read from stdin, a notebook — reach the workers by
value instead of by a reference the workers cannot resolve.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any

from .base import Backend, WorkerLostError
from .shipping import call_shipped, cloudpickle_module, ship

_STOPPING = False
_IN_TASK = False


class _WorkerStopped(Exception):
    """Raised inside a worker's running task when the parent stops the pool."""


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM from the parent: stop the running task (if any) and take no new one.

    The worker then leaves through its normal exit path, which runs multiprocessing's finalizers
    (unlinking the named semaphores numba and the queues created), so nothing leaks. The
    exception is raised only inside a task, never while the worker is in the middle of a queue
    operation, where an asynchronous exception could leave a half-written message behind.
    """
    global _STOPPING
    _STOPPING = True
    if _IN_TASK:
        raise _WorkerStopped("stopped by the parent process")


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """Run one task in a worker unless the pool is stopping."""
    global _IN_TASK
    if _STOPPING:
        raise _WorkerStopped("stopped by the parent process")
    _IN_TASK = True
    try:
        return fn(*args)
    finally:
        _IN_TASK = False


def _unraisable(hook: Any) -> Callable[[Any], None]:
    """Drop the stop signal where a callback swallowed it (numba's compiler runs ctypes
    callbacks, which report exceptions as "Exception ignored ..."); report anything else."""

    def handler(unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, _WorkerStopped):
            hook(unraisable)

    return handler


def _init_worker(threads: int) -> None:
    """Limit each worker's thread pools so that workers do not oversubscribe the cores.

    Workers ignore SIGINT: a Ctrl-C in a terminal reaches the whole process group, and a worker
    that turned it into a ``KeyboardInterrupt`` would send it back as a task's result and go on
    with the queued tasks. The parent alone handles the interrupt and terminates the workers.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)
    sys.unraisablehook = _unraisable(sys.unraisablehook)
    # numba's threading layer takes a named multiprocessing lock when the process's start method
    # contains "fork"; a worker killed while stuck in a kernel would leak it (resource_tracker's
    # "leaked semaphore" warning). Workers start no processes of their own, so "spawn" is safe.
    mp.set_start_method("spawn", force=True)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(threads)
    if "numba" not in sys.modules:
        # read once at import; changing it after numba's threads started makes every later
        # compilation fail ("Cannot set NUMBA_NUM_THREADS to a different value"), so a
        # preloaded numba is limited by set_num_threads below instead
        os.environ["NUMBA_NUM_THREADS"] = str(threads)
    try:
        import numba

        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - numba absent or threads already launched: not fatal
        pass


@contextmanager
def _main_not_reimported() -> Iterator[None]:
    """Hide ``__main__``'s file and spec while workers start, so that they never re-run it.

    Spawned and forkserver workers re-run the parent's main script (``__main__.__file__``) or
    re-import its module (``__main__.__spec__``) when they start: a plain script without an
    ``if __name__ == "__main__":`` guard would then run again in every worker (its output printed
    once per worker, its own pool started recursively), and a script read from stdin names
    ``'<stdin>'``, which the workers cannot open. The work itself travels by value (cloudpickle,
    :mod:`dpinfer.execution.shipping`), so the workers need nothing from ``__main__``.
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    by_value = cloudpickle_module() is not None  # without it, __main__'s objects travel by name
    if main is None or (not by_value and (path is None or os.path.isfile(path))):
        yield
        return
    saved: dict[str, Any] = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
    main.__dict__.pop("__file__", None)
    if "__spec__" in saved:
        main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.update(saved)


class ProcessBackend(Backend):
    """A :class:`~concurrent.futures.ProcessPoolExecutor` that survives dying workers.

    Parameters
    ----------
    n_workers
        Worker processes (default: ``os.cpu_count()``).
    start_method
        ``"forkserver"`` (default: workers fork from a clean server process that has imported
        ``preload`` once, so starting or replacing a worker is cheap and safe even when the parent
        runs threads), ``"spawn"`` or ``"fork"`` (unsafe if the parent has started threads).
    preload
        Modules the fork server imports once (forkserver only).
    threads_per_worker
        Thread limit applied to numba/BLAS inside each worker.
    max_restarts
        How many times the pool may be rebuilt after a worker died before giving up.

    Notes
    -----
    When a worker dies, every unfinished batch of the current :meth:`map` call is re-run on a
    fresh pool; finished batches keep their results. Results are returned in submission order.
    """

    name = "processes"

    def __init__(
        self,
        n_workers: int | None = None,
        start_method: str = "forkserver",
        threads_per_worker: int = 1,
        max_restarts: int = 3,
        preload: tuple[str, ...] = (
            "numpy", "scipy.stats", "dpinfer.inference.smc.smc_abc", "dpinfer.models"
        ),
    ) -> None:
        n = (os.cpu_count() or 1) if n_workers is None else int(n_workers)
        if n < 1:
            raise ValueError(f"n_workers must be >= 1, got {n_workers!r}.")
        self.n_workers = n
        self.start_method = start_method
        self.threads_per_worker = int(threads_per_worker)
        self.max_restarts = int(max_restarts)
        self.preload = tuple(preload)
        self.restarts = 0
        self._pool: ProcessPoolExecutor | None = None

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            ctx = mp.get_context(self.start_method)
            if self.start_method == "forkserver" and self.preload:
                ctx.set_forkserver_preload(list(self.preload))
            self._pool = ProcessPoolExecutor(
                max_workers=self.n_workers,
                mp_context=ctx,
                initializer=_init_worker,
                initargs=(self.threads_per_worker,),
            )
        return self._pool

    def _discard_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def _kill_pool(self, grace: float = 2.0) -> None:
        """Stop the pool now: cancel queued tasks, stop the workers, join everything.

        Used when :meth:`map` is interrupted (Ctrl-C, an error in a task): waiting for running
        tasks could take minutes, and a pool left to the interpreter's exit leaks its semaphores.
        Workers get SIGTERM, which stops their running task and lets them exit cleanly; one that
        has not exited after ``grace`` seconds (stuck in compiled code) is killed.
        """
        pool, self._pool = self._pool, None
        if pool is None:
            return
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
        for proc in procs:
            proc.join(timeout=grace)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
        pool.shutdown(wait=True)

    def map(self, fn: Callable[[Any], Any], payloads: Sequence[Any]) -> list[Any]:
        shipped_fn = ship(fn)
        payloads = [ship(p) for p in payloads]
        results: list[Any] = [None] * len(payloads)
        pending = set(range(len(payloads)))
        losses = 0
        completed = 0
        try:
            while pending:
                pool = self._get_pool()
                try:
                    with _main_not_reimported():
                        futures: dict[Future[Any], int] = {
                            pool.submit(_call, call_shipped, shipped_fn, payloads[i]): i
                            for i in sorted(pending)
                        }
                except BrokenProcessPool:
                    futures = {}
                broken = not futures
                remaining = set(futures)
                while remaining and not broken:
                    done, remaining = wait(remaining, return_when=FIRST_EXCEPTION)
                    for fut in done:
                        exc = fut.exception()
                        if exc is None:
                            i = futures[fut]
                            results[i] = fut.result()
                            pending.discard(i)
                            completed += 1
                        elif isinstance(exc, BrokenProcessPool):
                            broken = True
                        else:
                            raise exc
                if broken:
                    # harvest whatever finished before the pool broke, re-run the rest
                    for fut, i in futures.items():
                        if fut.done() and not fut.cancelled() and fut.exception() is None:
                            results[i] = fut.result()
                            pending.discard(i)
                            completed += 1
                    self._discard_pool()
                    losses += 1
                    self.restarts += 1
                    if losses > self.max_restarts:
                        raise WorkerLostError(_lost_message(losses, len(pending), completed))
        except BaseException:
            if pending:
                self._kill_pool()
            raise
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __repr__(self) -> str:
        return f"ProcessBackend(n_workers={self.n_workers}, start_method={self.start_method!r})"


def _lost_message(losses: int, pending: int, completed: int) -> str:
    """Why the workers died, as far as the parent can tell."""
    head = f"worker processes died {losses} times; {pending} batch(es) could not be completed. "
    if completed == 0:
        return head + (
            "No batch ever finished, so the workers most likely failed at start-up, before running "
            "any work: a script that starts workers needs an `if __name__ == '__main__':` guard "
            "(the workers re-run the main script), or the simulator kills its process (os._exit, a "
            "crash in compiled code); the workers' stderr shows the traceback. Use backend='serial' "
            "to see the error directly."
        )
    return head + (
        "Some batches finished before, so a worker was killed while running: typically out of "
        "memory (use fewer workers or smaller batch_size) or a crash in compiled code."
    )
