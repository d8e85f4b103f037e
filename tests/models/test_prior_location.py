"""The shipped models take a prior location and scale (issue 39 item 3): prior_mean / prior_sd of
gaussian-mean, linreg and sir reach the prior, the closed-form posteriors and the baselines."""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer.errors import InvalidDataError
from dpinfer.models.shipped.gaussian_mean import GaussianMean
from dpinfer.models.shipped.linreg import LinearRegression
from dpinfer.models.shipped.registry import build_model
from dpinfer.models.shipped.sir import SIR


def test_gaussian_mean_prior_location_moves_the_prior_and_the_exact_posterior():
    model = GaussianMean(n=50, clamp=(15.0, 45.0), epsilon=1.0, prior_mean=30.0, prior_sd=30.0, noise_sd=7.5)
    assert model.prior.mean.tolist() == [30.0] and model.prior.sd.tolist() == [30.0]
    post = model.exact_posterior([26.9], grid_size=201, bins=50)
    assert abs(post.mean - 26.9) < 2 * post.sd and post.sd < 3.0
    # the naive conjugate posterior: a prior so tight that it wins returns its mean
    tight = GaussianMean(n=50, epsilon=1.0, prior_mean=5.0, prior_sd=1e-4)
    assert tight.naive_posterior([0.0]).mean[0] == pytest.approx(5.0, abs=1e-3)
    with pytest.raises(InvalidDataError, match="prior_mean"):
        GaussianMean(prior_mean=float("nan"))


def test_linreg_prior_mean_reaches_the_conjugate_posterior():
    model = LinearRegression(epsilon=1.0, prior_mean=[1.0, -2.0, 3.0], prior_sd=1e-4)
    s = model.simulate_confidential(np.zeros((1, 3)), 0)[0]
    np.testing.assert_allclose(model.conjugate_posterior(s).mean, [1.0, -2.0, 3.0], atol=1e-3)
    assert build_model("linreg", 1.0, prior_mean=2.0).prior.mean.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(InvalidDataError, match="prior_mean"):
        LinearRegression(prior_mean=[1.0, 2.0])


def test_sir_prior_mean_and_sd_keep_the_named_priors_correlation():
    model = SIR(population=1000, prior_mean=[-1.0, -2.0], prior_sd=0.5)
    assert model.prior.mean.tolist() == [-1.0, -2.0]
    np.testing.assert_allclose(model.prior.sd, [0.5, 0.5])
    assert SIR(population=1000).prior.mean.tolist() == SIR(population=1000, prior_sd=2.0).prior.mean.tolist()
    with pytest.raises(InvalidDataError, match="prior_sd"):
        SIR(population=1000, prior_sd=-1.0)
