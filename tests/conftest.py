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
    (the command-line tests) inherit it. Tests that need more threads set them (test_dpvi_threads)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


#: Tests of 5–30 s each (subprocess builds and notebooks): sent to the workers first, so that none
#: of them starts last and leaves the other workers idle at the end of the run.
LONG_FIRST = ("tests/docs/", "tests/cli/test_demo.py", "tests/test_readme.py")


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
