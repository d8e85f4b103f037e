"""PrivateDataModel built from plain functions: defaults, shape checks with clear messages."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpinfer.errors import InvalidDataError
from dpinfer.inference.exact.importance import mechanism_importance_sampling
from dpinfer.inference.neural.training import simulate_round
from dpinfer.models import (
    GammaPrior,
    GaussianMean,
    GaussianPrior,
    LaplaceMechanism,
    PrivateDataModel,
    UniformPrior,
    clamped_release,
)

MECH = clamped_release("mean", 0.0, 10.0, 1.0, n=20)


def _poisson_mean(theta, rng):
    return MECH.statistic(rng.poisson(theta[:, :1], size=(theta.shape[0], 20)))


def test_model_from_functions_defaults_and_simulation():
    model = PrivateDataModel(prior=GammaPrior(2.0, 0.5), simulator=_poisson_mean, mechanism=MECH)
    assert model.param_names == ("theta_0",) and model.theta_dim == 1 and model.obs_dim == 1
    theta = model.prior.sample(6, 0)
    s = model.simulate_confidential(theta, 1)
    assert s.shape == (6, 1) and np.all((s >= 0) & (s <= 10))
    np.testing.assert_array_equal(model.simulate(theta, 5), model.simulate(theta, 5))  # seeded
    assert model.simulate(theta, 5).shape == (6, 1)
    assert "theta_0" in repr(model) and model.describe()["param_names"] == ["theta_0"]
    # a 1-d return is accepted when stat_dim is 1; scipy priors and names are accepted
    flat = PrivateDataModel(stats.gamma(2.0, scale=2.0), lambda t, rng: _poisson_mean(t, rng)[:, 0], MECH,
                            param_names="rate")
    assert flat.param_names == ("rate",) and flat.simulate_confidential(theta, 1).shape == (6, 1)


def test_shape_mistakes_name_the_expected_and_returned_shapes():
    two = PrivateDataModel(GaussianPrior([0.0, 0.0], [1.0, 1.0]), lambda t, rng: t, MECH)
    with pytest.raises(InvalidDataError, match=r"returned shape \(4, 2\).*expected \(4, 1\)"):
        two.simulate(np.zeros((4, 2)), 0)
    transposed = PrivateDataModel(UniformPrior(0, 1), lambda t, rng: np.zeros((1, t.shape[0])), MECH)
    with pytest.raises(InvalidDataError, match=r"returned shape \(1, 3\).*expected \(3, 1\)"):
        transposed.simulate_confidential(np.full((3, 1), 0.5))
    nan = PrivateDataModel(UniformPrior(0, 1), lambda t, rng: np.where(t > 0.5, np.nan, t), MECH)
    with pytest.raises(InvalidDataError, match="NaN or inf in 1 of 2 rows"):
        nan.simulate(np.array([[0.2], [0.7]]), 0)
    with pytest.raises(InvalidDataError, match=r"theta must have shape \(n, 1\)"):
        nan.simulate(np.zeros((2, 3)), 0)
    with pytest.raises(InvalidDataError, match="param_names must be 2 distinct names"):
        PrivateDataModel(GaussianPrior([0.0, 0.0], [1.0, 1.0]), lambda t, rng: t, MECH, param_names=["a"])
    with pytest.raises(InvalidDataError, match="mechanism must be a dpinfer Mechanism"):
        PrivateDataModel(UniformPrior(0, 1), _poisson_mean, "laplace")
    with pytest.raises(InvalidDataError, match="simulator must be a function"):
        PrivateDataModel(UniformPrior(0, 1), None, MECH)


class _BadSubclass(GaussianMean):
    """A subclass whose simulator loses a row."""

    def simulate_confidential(self, theta, seed=None):
        return super().simulate_confidential(theta, seed)[:-1]


class _FlatSubclass(GaussianMean):
    """A subclass returning shape (n,) for its one summary: a raw IndexError in SPPE before."""

    def simulate_confidential(self, theta, seed=None):
        return super().simulate_confidential(theta, seed)[:, 0]


def test_subclass_shape_mistake_is_a_clear_error_in_sppe_and_importance_sampling_paths():
    bad = _BadSubclass(n=10)
    theta = bad.prior.sample(8, 0)
    # SPPE's simulation step used to fail with a raw IndexError deep in the mechanism
    with pytest.raises(InvalidDataError, match=r"_BadSubclass.simulate_confidential returned shape \(7, 1\)"):
        simulate_round(bad, theta, 4, np.random.SeedSequence(0), 0)
    with pytest.raises(InvalidDataError, match=r"expected \(\d+, 1\)"):
        mechanism_importance_sampling(bad, [0.1], n_theta=50, n_inner=4, seed=0, proposal="prior")
    s, x = simulate_round(_FlatSubclass(n=10), theta, 4, np.random.SeedSequence(0), 0)
    assert s.shape == (8, 1) and x.shape == (8, 4, 1)
    # subclassing keeps working: the shipped model is unchanged
    good = GaussianMean(n=10)
    s, x = simulate_round(good, theta, 4, np.random.SeedSequence(0), 0)
    assert s.shape == (8, 1) and x.shape == (8, 4, 1)


def test_a_model_without_a_simulator_says_what_to_do():
    class Half(PrivateDataModel):
        def __init__(self):
            self.prior, self.param_names = UniformPrior(0, 1), ("p",)
            self.mechanism = LaplaceMechanism(1, 1.0, 1.0)

    with pytest.raises(NotImplementedError, match="simulate_confidential"):
        Half().simulate(np.array([[0.5]]))


def test_sppe_on_a_user_gaussian_mechanism_finishes_with_its_report():
    """SPPE built the result's report after training with the mechanism's default accountant,
    "pure", which refuses a Gaussian event: the whole fit was lost (~1 s here)."""
    from dpinfer.inference.neural import SPPE
    from dpinfer.models import Mechanism
    from dpinfer.privacy import GaussianEvent

    class UserGaussian(Mechanism):
        stat_dim = out_dim = noise_dim = 1
        neighbouring = "replace-one"
        delta = 1e-5
        name = "my gaussian"

        def G(self, s, u):
            return np.asarray(s) + 0.5 * stats.norm.ppf(u)

        def event(self):
            return GaussianEvent(2.0)

    def simulate(theta, rng):
        return theta + 0.2 * rng.standard_normal(theta.shape)

    model = PrivateDataModel(GaussianPrior([0.0], [1.0]), simulate, UserGaussian())
    flow = {"kind": "nsf", "transforms": 2, "hidden": 16, "blocks": 1, "bins": 8}
    post = SPPE(model, flow=flow, rounds=1, simulations_per_round=200, rqmc_points=2,
                training={"max_epochs": 10, "patience": 5}, seed=0).fit([0.3])
    assert post.privacy is not None and np.isfinite(post.privacy.epsilon)
    assert post.privacy.mechanism == "my gaussian"
