"""Shared test configuration."""

import os
import sys

import pytest

from seeded_privacy_rng import prng


@pytest.fixture
def test_rng():
    """A deterministic privacy RNG (INSECURE; tests only)."""
    return prng(12345)


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server for the whole session (tests/pg_server.py), or a skip saying why
    none can be started here."""
    from pg_server import PGServer, why_unavailable

    reason = why_unavailable()
    if reason:
        pytest.skip(reason)
    server = PGServer().init()
    yield server
    server.close()


def pytest_configure(config):
    """Under pytest-xdist, one torch (OpenMP) thread per worker unless OMP_NUM_THREADS says
    otherwise: the workers already fill the cores, and a worker's idle OpenMP threads spin while
    the other worker runs, which made torch-heavy tests (the GLM's Laplace step, the flows) several
    times slower on a busy 2-core machine. Set before any test module imports torch; subprocesses
    (the command-line tests) inherit it. Tests that need more threads set them (test_dpvi_threads).
    Also under pytest-xdist, numba kernels are compiled one worker at a time
    (:func:`_compile_numba_kernels_one_at_a_time`)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
        basetemp = getattr(config.option, "basetemp", None)  # this worker's: <the run's>/gwN
        if basetemp:  # the lock lives (and is pruned) with the run's temporary directory
            lock = os.path.join(os.path.dirname(basetemp), "numba-compile.lock")
            _compile_numba_kernels_one_at_a_time(lock)


#: Longest wait for another worker's numba compilation before compiling anyway (never a hang).
NUMBA_LOCK_WAIT_S = 120.0


def _compile_numba_kernels_one_at_a_time(lock_path: str) -> None:
    """Under pytest-xdist, a numba kernel with ``cache=True`` is compiled by one worker at a time
    (a file lock shared by the run's workers); numba's ``Dispatcher.compile`` loads a kernel from
    its on-disk cache before compiling it, so a worker that waited loads what the other compiled
    instead of compiling it too. From a fresh clone the workers otherwise compiled the same
    kernels side by side: 51.7 s of CPU against 36 s for one compile of each (measured). Nested
    compilations (a kernel's callees) run under the lock already held; a wait longer than
    :data:`NUMBA_LOCK_WAIT_S` compiles without it. Only the order of compilation changes."""
    import fcntl
    import threading
    import time

    from numba.core import dispatcher

    original = dispatcher.Dispatcher.compile
    held = threading.local()

    def compile_one_at_a_time(self, sig):
        cache = getattr(self, "_cache", None)
        if getattr(held, "depth", 0) or cache is None or type(cache).__name__ == "NullCache":
            return original(self, sig)
        fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            deadline = time.monotonic() + NUMBA_LOCK_WAIT_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
            held.depth = 1
            return original(self, sig)
        finally:
            held.depth = 0
            os.close(fd)  # releases the lock

    dispatcher.Dispatcher.compile = compile_one_at_a_time


#: Tests of 5–30 s each (subprocess builds and notebooks): sent to the workers first, so that none
#: of them starts last and leaves the other workers idle at the end of the run.
LONG_FIRST = ("tests/docs/", "tests/cli/test_demo.py", "tests/test_readme.py")


def pytest_collection_finish(session):
    """Move everything alive after collection (the imported libraries: about a million objects per
    worker) out of the cyclic garbage collector's reach (``gc.freeze``): a full collection then
    walks only what the tests allocate. Measured over a full run with 3 workers: 35 full
    collections took 13.2 s of CPU, 0.38 s each, almost all of it re-walking torch, scipy and
    numba objects that live until the process exits. Nothing a test allocates is frozen."""
    import gc

    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    """Put the :data:`LONG_FIRST` tests at the front (stable otherwise): longest-first scheduling."""
    items[:] = sorted(items, key=lambda item: not item.nodeid.startswith(LONG_FIRST))


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist, the tests of a module that defines a module- or class-scoped fixture
    run on one worker, so that the fixture (fitted posteriors, a running service) is built once
    instead of once per worker, and so do the tests of a module that sets ``ONE_WORKER = True``
    (a per-process cache, such as test_architecture's parsed sources); the other tests are spread
    one by one, as ``--dist load`` does.
    (``--dist loadgroup`` would do it with marks, but pytest 9 ignores the node ids that
    pytest-xdist 3.8 rewrites for it.)"""
    import re
    from pathlib import Path

    from xdist.scheduler import LoadScopeScheduling

    root = Path(config.rootpath)
    shared_scope = re.compile(r"scope\s*=\s*[\"'](module|class)[\"']|^ONE_WORKER = True", flags=re.M)
    shared = {p.relative_to(root).as_posix() for p in (root / "tests").rglob("test_*.py")
              if shared_scope.search(p.read_text(encoding="utf-8"))}

    class SharedFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if module in shared else nodeid

    return SharedFixtureScheduling(config, log)
