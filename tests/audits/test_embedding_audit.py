"""Black-box Monte Carlo audit of the ABCDP embedding release (``abcdp(..., release="embedding")``).

Two neighbouring observed data sets (N = 5 records, record 0 replaced by the value that moves the
random-feature mean embedding the most, 0.8-1.0 of the declared L2 sensitivity 2/N) are released
many times each through the public API with OS-entropy privacy noise. The auditor projects every
released embedding on the direction between the two confidential embeddings, fixes a threshold
from a separate pilot of releases, counts exceedances, and turns Clopper-Pearson bounds (one-sided,
α = 10⁻³ each) into a lower confidence bound on the privacy loss,

    ε_lb = log((TPR_lo - δ) / FPR_hi),

which an (ε, δ)-DP release keeps below ε with probability at least 1 - 2·10⁻³. At ε = 1,
δ = 10⁻⁵ the correct release must pass; a variant calibrated to the per-coordinate sensitivity
√(2/D)·2/N (a plausible bug: 5× too little noise with D = 50 features, true ε ≈ 5) must be flagged.

A second auditor reads the released doubles instead of their values (Mironov 2012): its event is
"the release cannot be fl(μ₁ + σ·z) for any doubles z" (tests/float_reachability.py), which a
release ``μ + float Gaussian noise`` from the first data set meets in every run and from the
second never. The grid release (every value a multiple of one data-independent γ) must pass
it; the old float release (known broken) must be flagged.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import beta

import dpinfer.release.embedding as er
from dpinfer.distances import RFFMMD
from dpinfer.privacy import PrivacyRNG, PrivacyWarning, analytic_gaussian_epsilon
from dpinfer.privacy.calibration import composed_gaussian_multiplier
from dpinfer.privacy.context import ReleaseContext
from dpinfer.privacy.mechanisms.embedding import embedding_grid
from dpinfer.release import ABCDPOptions, ArrayDraws, abcdp
from float_reachability import float_consistent
from seeded_privacy_rng import prng

N, EPS, DELTA, ALPHA = 5, 1.0, 1e-5, 1e-3
PILOT, RUNS = 500, 4000


def _setting():
    dist = RFFMMD(0.3, 50, seed=1)
    obs = np.random.default_rng(0).uniform(size=(N, 1))
    mu = dist.fixed_point_mean(obs)  # the mean the release computes (the auditor knows the code)
    best, shift = None, 0.0
    for a in np.linspace(-2, 3, 201):
        nb = obs.copy()
        nb[0, 0] = a
        s = float(np.linalg.norm(dist.fixed_point_mean(nb) - mu))
        if s > shift:
            best, shift = nb, s
    return dist, obs, best, mu, dist.fixed_point_mean(best), shift


def _releases(dist, data, n, seed=None):
    """n releases of ``data``: OS-entropy noise, or the seeded test RNGs seed, seed + 1, ..."""
    rng = np.random.default_rng(1)
    draws = ArrayDraws(rng.uniform(size=(5, 1)), rng.uniform(size=(5, N, 1)))
    out = np.empty((n, dist.n_features))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # unaccounted on purpose: no ledger here
        for i in range(n):
            gen = PrivacyRNG() if seed is None else prng(seed + i)
            res = abcdp(
                data, draws, dist, c=1, epsilon_total=EPS, epsilon_abc=100.0, delta=DELTA,
                options=ABCDPOptions(release="embedding"), context=ReleaseContext(privacy_rng=gen),
            )
            out[i] = res.meta["released_embedding"]
    return out


def _audit():
    dist, d0, d1, mu0, mu1, shift = _setting()
    v = (mu1 - mu0) / np.linalg.norm(mu1 - mu0)
    pilot = _releases(dist, d0, PILOT) @ v
    t = pilot.mean() + 2.0 * pilot.std()
    k0 = int(np.sum(_releases(dist, d0, RUNS) @ v > t))
    k1 = int(np.sum(_releases(dist, d1, RUNS) @ v > t))
    fpr_hi = beta.ppf(1 - ALPHA, k0 + 1, RUNS - k0) if k0 < RUNS else 1.0
    tpr_lo = beta.ppf(ALPHA, k1, RUNS - k1 + 1) if k1 > 0 else 0.0
    eps_lb = math.log(max(tpr_lo - DELTA, 1e-300) / fpr_hi)
    return eps_lb, shift, k0, k1


@pytest.mark.slow
def test_embedding_release_passes_a_black_box_audit_and_a_miscalibrated_one_fails(monkeypatch):
    eps_lb, shift, k0, k1 = _audit()
    sigma = 2.0 / N * composed_gaussian_multiplier(EPS, DELTA, 1, "pld")
    assert analytic_gaussian_epsilon(sigma / shift, DELTA) <= EPS + 1e-6  # the true ε at this shift
    assert eps_lb < EPS, (eps_lb, k0, k1)
    assert k1 > k0  # the test has power: the neighbour is seen more often above the threshold
    per_coordinate = math.sqrt(2.0 / 50)
    monkeypatch.setattr(er, "embedding_sensitivity", lambda n: 2.0 / n * per_coordinate)
    assert analytic_gaussian_epsilon(sigma * per_coordinate / shift, DELTA) > 4.0
    broken_lb, _, b0, b1 = _audit()
    assert broken_lb > EPS, (broken_lb, b0, b1)


REACH_RUNS = 300


def _reachability_audit():
    """ε_lb from the event "not float-reachable from μ₁" (seeded releases, REACH_RUNS per side)."""
    dist, d0, d1, _, mu1, _ = _setting()
    sigma = embedding_grid(2.0 / N, EPS, DELTA, dist.n_features).sigma  # the noise scale (public)
    k0 = sum(not float_consistent(r, mu1, sigma) for r in _releases(dist, d0, REACH_RUNS, seed=10_000))
    k1 = sum(not float_consistent(r, mu1, sigma) for r in _releases(dist, d1, REACH_RUNS, seed=20_000))
    tpr_lo = beta.ppf(ALPHA, k0, REACH_RUNS - k0 + 1) if k0 > 0 else 0.0
    fpr_hi = beta.ppf(1 - ALPHA, k1 + 1, REACH_RUNS - k1) if k1 < REACH_RUNS else 1.0
    return math.log(max(tpr_lo - DELTA, 1e-300) / fpr_hi), k0, k1


def _float_release(mu, plan, context, *, what=""):
    """The old construction (known broken): μ + float Gaussian noise, charged the same way."""

    def draw(rng):
        return mu + np.asarray(rng.normal(plan.sigma, mu.size))

    return context.release(plan.event, draw, what=what)


@pytest.mark.slow
def test_grid_release_passes_the_float_reachability_audit_and_the_float_release_fails(monkeypatch):
    """Measured (seeded, 300 runs per side): grid release k0 = k1 = 300 (no release of the grid
    mechanism is fl(μ₁ + σz), whichever data set produced it), ε_lb = -0.02; the old float
    release k0 = 300, k1 = 0, ε_lb = 3.76 > ε = 1."""
    eps_lb, k0, k1 = _reachability_audit()
    assert eps_lb < EPS, (eps_lb, k0, k1)
    monkeypatch.setattr(er, "release_embedding", _float_release)
    broken_lb, b0, b1 = _reachability_audit()
    assert b1 == 0 and broken_lb > EPS, (broken_lb, b0, b1)
