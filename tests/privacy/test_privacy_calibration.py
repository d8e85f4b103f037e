"""Noise calibration and the Gaussian mechanism's privacy curve."""

import math

import pytest

from dpinfer.errors import InvalidPrivacyParameterError
from dpinfer.privacy import (
    CalibrationError,
    GaussianEvent,
    PoissonSubsampledGaussianEvent,
    analytic_gaussian_delta,
    analytic_gaussian_epsilon,
    analytic_gaussian_sigma,
    calibrate_noise_multiplier,
    classical_gaussian_sigma,
    get_accountant,
)


@pytest.mark.parametrize("accountant", ["pld", "rdp", "advanced"])
@pytest.mark.parametrize("target", [0.5, 2.0])
def test_calibration_round_trip(accountant, target):
    def make(s):
        return PoissonSubsampledGaussianEvent(0.05, s, 300)

    delta = 1e-5
    sigma = calibrate_noise_multiplier(make, target, delta, accountant)
    acc = get_accountant(accountant)
    eps = acc.epsilon(make(sigma), delta)
    assert eps <= target
    assert target - eps <= 1e-3
    assert acc.epsilon(make(0.999 * sigma), delta) > target


def test_impossible_targets_are_refused_clearly():
    with pytest.raises(CalibrationError, match="Relax the target"):
        calibrate_noise_multiplier(lambda s: GaussianEvent(s), 1.0, 0.0, "pld")
    with pytest.raises(InvalidPrivacyParameterError):
        calibrate_noise_multiplier(lambda s: GaussianEvent(s), -1.0, 1e-5, "pld")
    with pytest.raises(InvalidPrivacyParameterError):
        calibrate_noise_multiplier(lambda s: GaussianEvent(s), 1.0, 1.5, "pld")


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (1.0, 1e-5), (5.0, 1e-8)])
def test_analytic_gaussian_is_exact(eps, delta):
    sigma = analytic_gaussian_sigma(eps, delta)
    assert analytic_gaussian_delta(sigma, eps) <= delta
    assert analytic_gaussian_delta(sigma * 0.999, eps) > delta
    assert analytic_gaussian_epsilon(sigma, delta) == pytest.approx(eps, rel=1e-6)
    # dp-accounting's PLD of the same Gaussian certifies the same epsilon (to discretisation)
    assert get_accountant("pld").epsilon(GaussianEvent(sigma), delta) == pytest.approx(eps, abs=2e-3)


def test_classical_gaussian_only_below_one():
    eps, delta = 0.5, 1e-5
    classical = classical_gaussian_sigma(eps, delta)
    assert classical == pytest.approx(math.sqrt(2 * math.log(1.25 / delta)) / eps)
    assert analytic_gaussian_sigma(eps, delta) < classical
    with pytest.raises(InvalidPrivacyParameterError, match="analytic"):
        classical_gaussian_sigma(1.0, delta)
