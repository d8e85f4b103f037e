"""ABCDP models: mixture of uniforms, COVID polynomial, tuberculosis birth-death simulator."""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer.datasets import data_path
from dpinfer.datasets.abcdp_data import load_covid_nl, load_tb_sanfrancisco
from dpinfer.models.shipped.covid import CovidPolynomial
from dpinfer.models.shipped.mixture_uniform import THETA_TRUE, MixtureOfUniforms
from dpinfer.models.shipped.tuberculosis import THETA_TRUE as TB_TRUE
from dpinfer.models.shipped.tuberculosis import (
    Tuberculosis,
    analytical_means,
    rates_from_theta,
    sanfrancisco_summaries,
    tb_distance,
)


def test_mixture_component_frequencies_match_weights():
    model = MixtureOfUniforms(n_points=200_000)
    y = model.observed(seed=0)[:, 0]
    assert y.min() >= 0 and y.max() <= 5
    freq = np.bincount(np.floor(y).astype(int), minlength=5)[:5] / y.size
    se = np.sqrt(THETA_TRUE * (1 - THETA_TRUE) / y.size)
    assert np.all(np.abs(freq - THETA_TRUE) < 4 * se)
    # within a component the points are uniform: mean offset 1/2
    assert np.mean(y - np.floor(y)) == pytest.approx(0.5, abs=4 * np.sqrt(1 / 12 / y.size))


def test_mixture_prior_is_dirichlet_one():
    th = MixtureOfUniforms().prior_sample(40_000, np.random.default_rng(1))
    np.testing.assert_allclose(th.sum(axis=1), 1.0)
    # Dirichlet(1,...,1) in 5 dims: mean 1/5, variance (1/5)(4/5)/6
    assert np.abs(th.mean(axis=0) - 0.2).max() < 4 * np.sqrt(0.8 / 5 / 6 / 40_000)
    np.testing.assert_allclose(th.var(axis=0), 0.2 * 0.8 / 6, rtol=0.05)


def test_covid_model_and_data():
    day, cases = load_covid_nl()
    assert day.tolist() == list(range(18)) and cases[0] == 1 and cases[-1] == 1705
    assert np.all(np.diff(cases) > 0)  # cumulative counts
    m = CovidPolynomial()
    th = np.array([[1.0, 2.0, 3.0, 0.5]])
    t = np.arange(18)
    np.testing.assert_allclose(m.curve(th)[0], 1 + 2 * t + 3 * t**2 + 0.5 * t**3)
    assert m.simulate(th).shape == (1, 18, 1)
    assert m.prior_sample(5, np.random.default_rng(0)).shape == (5, 4)
    assert data_path("covid19_netherlands_cumulative_abcdp.csv").exists()


def test_tb_sanfrancisco_data_and_summaries():
    sizes, months = load_tb_sanfrancisco()
    assert sizes.sum() == 473 and sizes.size == 326 and sizes.max() == 30 and months.size == 30
    s = sanfrancisco_summaries()[0]
    np.testing.assert_array_equal(Tuberculosis.sanfrancisco()[0], s)
    d = Tuberculosis(n_datasets=1).distance()
    sens = d.sensitivity(len(Tuberculosis.sanfrancisco()))  # C/n plus the rounding of the computed mean
    assert 200.0 <= sens <= 200.0 * (1 + 1e-12)
    np.testing.assert_allclose(s[:6], [473, 326, 30, (30 - 10) / 3, 282, 20])
    assert s[6] == 24 and s[7] == np.unique(months).size


def test_tb_prior_respects_the_joint_constraints():
    m = Tuberculosis()
    th = m.prior_sample(2000, np.random.default_rng(2))
    r1, t1, r2, burden = th.T
    assert np.all((r1 > 1.01) & (r1 < 20) & (t1 > 0.01) & (t1 < 30))
    assert np.all(r2 < (1 - 0.05 * r1) / 0.95) and np.all(r2 > 0)
    rates = rates_from_theta(th)
    assert np.all(rates[:, 3] < 40)
    m_obs = analytical_means(rates)[:, 2]
    assert np.all((m_obs > 0) & (m_obs < 350))
    assert burden.mean() == pytest.approx(200, abs=4 * np.sqrt(30 / 2000))


def test_tb_simulator_matches_the_analytical_mean_and_is_reproducible():
    """At the true θ, E[observed cases in 2 years] = 2·m_obs (equilibrium mean, ELFI formula)."""
    m = Tuberculosis(n_datasets=150)
    obs = m.observed(seed=3)
    again = m.observed(seed=3)
    np.testing.assert_array_equal(obs, again)
    expected = 2 * analytical_means(rates_from_theta(TB_TRUE))[0, 2]
    n_obs = obs[:, 0]
    assert abs(n_obs.mean() - expected) < 4 * n_obs.std(ddof=1) / np.sqrt(n_obs.size)
    # internal consistency of the summaries
    assert np.all(obs[:, 1] <= obs[:, 0]) and np.all(obs[:, 4] + 2 * obs[:, 5] <= obs[:, 0])
    assert np.all(obs[:, 7] <= obs[:, 2]) and np.all(obs[:, 6] <= 24)
    # the SF data look like a draw at the true parameters (the model was fitted to them)
    sf = sanfrancisco_summaries()[0]
    z = (sf[:2] - obs[:, :2].mean(axis=0)) / obs[:, :2].std(axis=0)
    assert np.all(np.abs(z) < 3)


def test_tb_distance_weights():
    obs = np.array([[100, 80, 10, 2.0, 60, 10, 12, 8]], dtype=float)
    assert tb_distance(obs, obs[None])[0, 0] == 0.0
    sim = obs.copy()
    sim[0, 2] += 1  # largest: weight 2
    assert tb_distance(obs, sim[None])[0, 0] == pytest.approx(2.0)
    sim = obs.copy()
    sim[0, 4] = 66  # clusters of size 1: relative error 0.1, weight 100
    assert tb_distance(obs, sim[None])[0, 0] == pytest.approx(10.0)
    dist = Tuberculosis(n_datasets=1).distance(clip=200)
    sim = obs.copy()
    sim[0, 0] = 0  # relative error divides by zero -> clipped at C
    assert dist.batch(dist.prepare(obs), sim[None])[0] == pytest.approx(200.0)


def test_tb_parallel_simulation_equals_serial():
    theta = Tuberculosis().prior_sample(3, np.random.default_rng(4))
    serial = Tuberculosis(n_datasets=6).simulate(theta, np.random.default_rng(5))
    parallel = Tuberculosis(n_datasets=6, parallel=True).simulate(theta, np.random.default_rng(5))
    np.testing.assert_array_equal(serial, parallel)
