"""Dequantization of lattice releases for the neural estimators
(:mod:`dpinfer.inference.neural.dequantize`)."""

import numpy as np
import pytest
from scipy import stats

from dpinfer.errors import InvalidDataError
from dpinfer.inference.neural import SPLE, SPPE
from dpinfer.inference.neural.dequantize import dequantize, mechanism_lattice
from dpinfer.inference.neural.training import SimulationPool
from dpinfer.models import SIR, GaussianMean, GaussianPrior, GeometricMechanism, LaplaceMechanism
from dpinfer.models.contract import PrivateDataModel
from dpinfer.privacy.mechanisms.composed import ComposedMechanism
from dpinfer.privacy.mechanisms.counts import RandomizedResponseMechanism


def test_lattices_of_the_shipped_mechanisms():
    assert mechanism_lattice(LaplaceMechanism(2, 1.0, 1.0)) is None
    assert np.array_equal(mechanism_lattice(GeometricMechanism(3, 1, 1.0)), np.ones(3))
    assert np.array_equal(mechanism_lattice(RandomizedResponseMechanism(50, 1.0, 2)), np.ones(2))
    sir = SIR.real_outbreak(population=1000)
    assert np.allclose(mechanism_lattice(sir.mechanism), np.full(sir.obs_dim, 1 / 100))
    both = ComposedMechanism([LaplaceMechanism(1, 1.0, 1.0), GeometricMechanism(2, 1, 1.0)])
    assert np.array_equal(mechanism_lattice(both), [0.0, 1.0, 1.0])


def test_dequantized_values_fill_their_cell_uniformly_and_leave_continuous_coordinates_alone():
    x = np.tile([[3.0, 0.07, 1.234]], (20000, 1))
    h = np.array([1.0, 0.01, 0.0])
    out = dequantize(x, h, np.random.default_rng(0))
    assert np.all(out[:, 2] == 1.234)
    for j in (0, 1):
        v = (out[:, j] - x[:, j]) / h[j] + 0.5
        assert np.all((v >= 0) & (v < 1))
        assert stats.kstest(v, "uniform").pvalue > 1e-3
    # known-broken: noise of a full cell on each side would leave the cell
    wide = x[:, 0] + 2 * h[0] * (np.random.default_rng(0).random(20000) - 0.5)
    assert np.any(np.abs(wide - 3.0) > 0.5)


def _counts_model():
    def sim(theta, rng):
        return rng.binomial(20, 1 / (1 + np.exp(-theta[:, 0])))[:, None].astype(float)

    return PrivateDataModel(GaussianPrior([0.0], [1.0]), sim, GeometricMechanism(1, 1, 2.0), name="counts")


def test_simulated_releases_are_dequantized_by_default_and_recorded():
    model = _counts_model()
    for dq, expect in (("auto", True), (False, False)):
        est = SPPE(model, rounds=1, simulations_per_round=50, seed=0, dequantize=dq)
        assert est.settings()["dequantize"] is expect
        pool = SimulationPool()
        est._simulate(pool, None, 0)
        _, x = pool.arrays()
        off = np.abs(x - np.round(x))
        assert bool(off.max() > 0.05) == expect and off.max() <= 0.5
        # the same seed gives the same dequantization noise
        again = SimulationPool()
        SPPE(model, rounds=1, simulations_per_round=50, seed=0, dequantize=dq)._simulate(again, None, 0)
        assert np.array_equal(again.arrays()[1], x)
    assert SPPE(GaussianMean(n=20), rounds=1, simulations_per_round=50).settings()["dequantize"] is False


@pytest.mark.parametrize(
    ("model", "value", "match"),
    [
        (GaussianMean(n=20), True, "declares no lattice"),
        (None, "yes", "dequantize must be"),
    ],
)
def test_bad_dequantize_settings_are_rejected(model, value, match):
    with pytest.raises(InvalidDataError, match=match):
        SPLE(model or _counts_model(), rounds=1, simulations_per_round=50, dequantize=value)


def test_auto_given_as_a_built_string_is_accepted():
    """'auto' from a config file or the command line is not the interned literal: compared by value."""
    built = "".join(["au", "to"])
    est = SPPE(_counts_model(), rounds=1, simulations_per_round=50, dequantize=built)
    assert est.settings()["dequantize"] is True
