"""Smoke tests of benchmarks/private_data.py: its baselines are the algorithms they claim to be.

Speed is not tested here (it is measured by the benchmark itself); these tests check that the
plain-Python Gillespie baseline simulates the same process as the compiled simulator, that the
weighted KS distance is the KS statistic, and that the pyABC comparison runs on tiny sizes.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dpinfer.models.shipped.sir import gillespie_sir

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "private_data.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_private_data", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_private_data"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("bench_private_data", None)


TIMES = np.array([0.0, 4.0, 8.0, 12.0])
K = 500
BETA, GAMMA = math.exp(-0.5), math.exp(-3.0)


def _python_paths(bench, beta: float, gamma: float, n: int) -> np.ndarray:
    return np.array([bench.python_gillespie(beta, gamma, K, TIMES.tolist(), seed)[0] for seed in range(n)])


def _z_scores(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    se = np.sqrt(a.var(0, ddof=1) / len(a) + b.var(0, ddof=1) / len(b))
    return np.abs(a.mean(0) - b.mean(0))[1:] / se[1:]  # t = 0 is deterministic


def test_python_gillespie_matches_compiled_process(bench):
    """Mean I(t) of the plain-Python baseline agrees with the compiled simulator (z-test, 400 paths
    each); a baseline with a doubled recovery rate is caught by the same test."""
    compiled, _ = gillespie_sir(np.full(400, BETA), GAMMA, K, TIMES, seed=11)
    python = _python_paths(bench, BETA, GAMMA, 400)
    assert np.all(python[:, 0] == 1)
    assert np.max(_z_scores(compiled.astype(float), python.astype(float))) < 4.5
    broken = _python_paths(bench, BETA, 2 * GAMMA, 400)
    assert np.max(_z_scores(compiled.astype(float), broken.astype(float))) > 4.5


def test_python_gillespie_event_cap(bench):
    _, events = bench.python_gillespie(BETA, GAMMA, 10_000, [0.0, 50.0], seed=1, max_events=1000)
    assert events <= 1000


def test_weighted_ks_is_the_ks_statistic(bench):
    x = np.random.default_rng(0).standard_normal(300)
    w = np.ones(300)
    ks = bench._weighted_ks_1d(x, w, stats.norm.cdf)
    assert ks == pytest.approx(stats.kstest(x, "norm").statistic, abs=1e-12)
    # a shifted reference is further away
    assert bench._weighted_ks_1d(x, w, stats.norm(0.5).cdf) > ks + 0.1


@pytest.mark.slow
def test_compare_with_pyabc_tiny(bench):
    """The pyABC comparison end to end on tiny sizes (about 15 s: exact posterior and two C2STs)."""
    gm, obs, ref = bench.gaussian_mean_setup(200)
    out = bench.compare_with_pyabc("tiny", gm, obs, [0.5, 0.25], 40, ref, seed=0, batch_size=50)
    assert out["ours"]["simulations"] >= 80
    assert 0.0 <= out["ours"]["accuracy"]["weighted_ks_vs_exact"] <= 1.0
    if bench.pyabc_available() is None:
        assert out["pyabc"]["simulations"] >= 80
        assert out["pyabc"]["populations"] == 2
        assert out["ratio_wall_ours_over_pyabc"] > 0
    else:
        assert "skipped" in out["pyabc"]


def test_pyabc_missing_is_skipped_with_a_message(bench, monkeypatch):
    """Without pyabc the comparison still runs ours and says how to install the bench extra."""
    monkeypatch.setattr(bench, "pyabc_available", lambda: "ModuleNotFoundError: No module named 'pyabc'")
    monkeypatch.setattr(bench, "accuracy", lambda *a, **k: {"stub": True})
    from dpinfer.models import GaussianMean

    ref = {"mean": np.zeros(1), "sd": np.ones(1), "draws": np.zeros((10, 1))}
    out = bench.compare_with_pyabc("tiny", GaussianMean(n=10), np.array([0.1]), [1.0, 0.5], 20, ref, 0, 20)
    assert out["ours"]["populations"] == 2
    assert "bench" in out["pyabc"]["skipped"] and "pyabc" in out["pyabc"]["skipped"]
    assert "ratio_wall_ours_over_pyabc" not in out
