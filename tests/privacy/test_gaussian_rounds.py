"""K rounds of M-vector discrete Gaussian releases on a grid (privacy/mechanisms/gaussian_rounds.py)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpinfer.errors import InvalidDataError, InvalidPrivacyParameterError, PrivacyWarning
from dpinfer.privacy import ReleaseContext, get_accountant
from dpinfer.privacy.events import DiscreteGaussianEvent, compose
from dpinfer.privacy.mechanisms.gaussian_rounds import gaussian_rounds, release_gaussian_round
from seeded_privacy_rng import prng


@pytest.mark.parametrize(("M", "K", "eps"), [(1, 1, 1.0), (200, 3, 2.0), (500, 3, 1.0), (1000, 2, 500.0)])
def test_calibration_is_tight_and_accounts_the_rounding(M, K, eps):
    """The K-fold composition meets (ε, δ) under the RDP accountant; 1% less variance does not
    (tight); the event's L2 sensitivity is √M·⌈Δ/γ⌉ grid units (rounding included), at most 1%
    above the unrounded √M·Δ/γ (broken variant: the unrounded sensitivity understates it)."""
    acc, delta, sens = get_accountant("rdp"), 1e-6, 2 / 18
    plan = gaussian_rounds(sens, M, K, eps, delta)
    assert acc.epsilon(plan.event, delta) <= eps
    less = DiscreteGaussianEvent(math.sqrt(plan.sigma2_units * 0.99), plan.round_event.sensitivity, M)
    assert acc.epsilon(compose(*[less] * K), delta) > eps
    units = math.sqrt(M) * math.ceil(sens / plan.gamma)
    assert plan.round_event.sensitivity == pytest.approx(units, rel=1e-12)
    assert math.sqrt(M) * sens / plan.gamma <= units < 1.01 * math.sqrt(M) * sens / plan.gamma
    assert math.log2(plan.gamma) == round(math.log2(plan.gamma))  # a power of two


def test_release_is_on_the_grid_with_the_planned_variance():
    """Released values are γ·(integers); the noise variance matches σ² (1000 coordinates x 4 rounds,
    relative standard error of a variance estimate sqrt(2/4000) = 2.2%: tolerance 5 s.e.)."""
    plan = gaussian_rounds(0.01, 1000, 4, 1.0, 1e-6)
    values = np.linspace(0.0, 1.0, 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        ctx = ReleaseContext(privacy_rng=prng(3))
    noise = []
    for _ in range(4):
        out = release_gaussian_round(values, plan, ctx)
        units = out / plan.gamma
        assert np.all(units == np.round(units))
        noise.append(units - np.round(values / plan.gamma))
    var = float(np.var(np.concatenate(noise)))
    assert var / plan.sigma2_units == pytest.approx(1.0, abs=5 * math.sqrt(2 / 4000))


def test_refusals():
    plan = gaussian_rounds(0.01, 10, 2, 1.0, 1e-6)
    ctx = ReleaseContext(privacy_rng=prng(4))
    with pytest.raises(InvalidPrivacyParameterError, match="too large for noise"):
        plan.check_bound(1e30)
    plan.check_bound(2.0)
    with pytest.raises(InvalidDataError):
        release_gaussian_round(np.zeros(9), plan, ctx)
    with pytest.raises(InvalidDataError):
        release_gaussian_round(np.r_[np.zeros(9), np.nan], plan, ctx)
    with pytest.raises(TypeError):
        release_gaussian_round(np.zeros(10), plan, prng(4))  # a context, never a bare RNG
    for bad in (dict(delta=0.0), dict(dimension=0), dict(rounds=1.5), dict(coordinate_sensitivity=0.0)):
        kw = dict(coordinate_sensitivity=0.01, dimension=10, rounds=2, epsilon=1.0, delta=1e-6) | bad
        with pytest.raises(InvalidPrivacyParameterError):
            gaussian_rounds(**kw)
