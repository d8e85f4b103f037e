"""Fill the bytecode caches before ``make test`` starts its pytest-xdist workers.

On a fresh clone there are none, and every worker then compiles the package and rewrites the
asserts of every test module itself, at the same moment, on the same cores. This writes them
once, in parallel: the package's and the test helpers' ``.pyc`` (``compileall``) and pytest's
rewritten test modules (pytest's own rewriting and cache format, the files its import hook reads
back). Only a speed-up: nothing here changes what runs, a stale or missing cache is rebuilt by
Python and pytest as usual, and if pytest's internals are not what this expects the second step
is skipped. Usage: ``python tests/warm_caches.py`` (``make test`` runs it).
"""

from __future__ import annotations

import compileall
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _rewrite(paths: list[str]) -> int:
    """Rewrite the asserts of ``paths`` as pytest does and store them where its hook reads them."""
    try:
        from _pytest.assertion import rewrite as rw
    except ImportError:
        return 0

    class _State:
        @staticmethod
        def trace(message: str) -> None:
            return None

    done = 0
    for name in paths:
        fn = Path(name)
        try:
            cache_dir = rw.get_cache_dir(fn)
            pyc = cache_dir / (fn.name[:-3] + rw.PYC_TAIL)
            if not rw.try_makedirs(cache_dir) or rw._read_pyc(fn, pyc) is not None:
                continue
            source_hash, co = rw._rewrite_test(fn, None)
            done += bool(rw._write_pyc(_State(), co, source_hash, pyc))
        except (AttributeError, TypeError, OSError, SyntaxError):
            return done  # pytest's internals changed: leave it to the workers
    return done


def main() -> int:
    if sys.dont_write_bytecode:
        return 0  # PYTHONDONTWRITEBYTECODE: nothing would read the caches
    workers = max(1, len(os.sched_getaffinity(0)))
    compileall.compile_dir(ROOT / "src", quiet=1, workers=workers)
    compileall.compile_dir(ROOT / "tests", quiet=1, workers=workers)
    tests = sorted(str(p) for p in (ROOT / "tests").rglob("*.py")
                   if p.name.startswith("test_") or p.name == "conftest.py")
    chunks = [tests[i::workers] for i in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        n = sum(pool.map(_rewrite, chunks))
    print(f"warm_caches: {n} test modules rewritten for pytest", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
