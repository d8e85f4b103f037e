"""Issue 39 item 7: the default DPVI fit at small ε on a held-out GLM, and when it warns.

The regression: from issue 29 the steps before the averaged tail ran at 4x the default rate at
every noise level; where the privacy noise dominates, the windowed AdaGrad's normalised step is
mostly noise and the 4x burn-in left the iterates far from the optimum when the average began
(held-out GLMs: average |z| at ε = 0.5 from 4.8 to 8.6, logistic, and 5.1 to 7.5, Poisson). The
burn-in now runs only where the noise is small (``loop.BURN_IN_MAX_NOISE``);
``benchmarks/dpvi_accuracy.py`` has the table. The cell below (logistic, n = 1000, D = 3, ε = 0.5,
one deterministic noise stream, no. 1; streams 0-5 measured: mean |z| 1.07-2.18 now against
1.61-4.97 with the regressed default, better on every stream) is bounded at mean |z| < 2 (1.07
now); the known-broken variant (the regressed default, the 4x burn-in at every noise level)
exceeds it (4.97, max 11.8).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from scipy import special

from dpinfer.privacy import PrivacyRNG
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, DataSpec, DPVINoiseWarning, LogisticRegression
from dpinfer.release.dpvi import loop as loop_module
from glm_reference import reference_posterior

BOUND = 2.0


def _cell():
    rng = np.random.default_rng(7)
    n = 1000
    X = rng.uniform(-1, 1, (n, 2))
    y = (rng.random(n) < special.expit(0.3 + X @ [1.0, -1.0])).astype(float)
    ref = reference_posterior("logistic", np.column_stack([np.ones(n), X]), y, draws=20_000)
    return X, y, ref


def _mean_abs_z(X, y, ref, epsilon=0.5, stream=1):
    torch.set_num_threads(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = DPVI(LogisticRegression()).fit(
            X, y, epsilon=epsilon, delta=1e-5, seed=0, data=DataSpec(bounds=(-1, 1)),
            context=ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(stream)),
        )
    return float(np.mean(np.abs(fit.mean() - ref["mean"]) / ref["sd"]))


@pytest.mark.slow
def test_default_fit_at_small_epsilon_is_back_within_the_bound():
    X, y, ref = _cell()
    assert _mean_abs_z(X, y, ref) < BOUND


@pytest.mark.slow
def test_known_broken_the_4x_burn_in_under_heavy_noise_exceeds_the_bound(monkeypatch):
    X, y, ref = _cell()
    monkeypatch.setattr(loop_module, "BURN_IN_MAX_NOISE", float("inf"))
    assert _mean_abs_z(X, y, ref) > BOUND


@pytest.mark.slow
def test_noise_warning_never_at_epsilon_100_with_n_1000():
    """Issue 39: the warning fired on every private fit; at ε = 100 and n = 1000 the noise is
    about 0.1 posterior sd (it fires above NOISE_DOMINATES = 2; the cold σ calibration at ε = 100
    makes this test slow). Where it fires: test_dpvi_diagnostics (ε = 0.5, n = 300)."""
    torch.set_num_threads(1)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1000, 3))
    y = (rng.random(1000) < special.expit(X @ [1.0, -1.0, 0.5])).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.simplefilter("error", DPVINoiseWarning)
        fit = DPVI(LogisticRegression()).fit(
            X, y, epsilon=100.0, delta=1e-5, seed=0,
            context=ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(1)),
        )
    assert np.max(fit.config["diagnostics"]["noise_dominance"]) < 0.5
