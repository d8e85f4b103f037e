"""The discrete Gaussian's PLD with its buckets in numpy is dp-accounting's, to the bit: every
bucket and mass (sparse and dense PMFs), ε and δ; the run sums add in dp-accounting's order; an
optimistic rounding (floor instead of ceil) is caught."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from dpinfer.privacy import discrete_gaussian_pld as dgp


def _same_pmf(a, b) -> bool:
    def eq(u, v):
        if isinstance(u, np.ndarray):
            return isinstance(v, np.ndarray) and u.shape == v.shape and np.array_equal(u, v)
        return u == v

    va, vb = vars(a), vars(b)
    return type(a) is type(b) and va.keys() == vb.keys() and all(eq(va[k], vb[k]) for k in va)


@pytest.mark.parametrize(("sigma", "sensitivity", "step"), [
    (0.6, 1, 1e-4), (3.3, 3, 1e-2), (17.9, 40, 1e-3), (50.0, 2, 1e-4), (301.7, 256, 1e-4), (2000.5, 1, 1e-4),
])
def test_the_pld_is_dp_accountings(sigma, sensitivity, step):
    kw = {"sensitivity": sensitivity, "value_discretization_interval": step}
    ours = dgp.discrete_gaussian_pld(sigma=sigma, **kw)
    ref = pld_lib.from_discrete_gaussian_mechanism(sigma, **kw)
    assert ours._symmetric and ref._symmetric
    assert _same_pmf(ours._pmf_remove, ref._pmf_remove)
    for delta in (1e-9, 1e-6, 1e-3):
        assert ours.get_epsilon_for_delta(delta) == ref.get_epsilon_for_delta(delta)
    assert ours.get_delta_for_epsilon(0.5) == ref.get_delta_for_epsilon(0.5)


def test_run_sums_add_one_by_one_from_the_left():
    rng = np.random.default_rng(0)
    values = rng.random(5000) * 10.0 ** rng.integers(-12, 0, 5000)
    starts = np.sort(rng.choice(np.arange(1, 5000), 60, replace=False))
    starts = np.r_[0, starts]
    got = dgp._run_sums(values, starts)
    ends = np.r_[starts[1:], values.size]
    for g, a, b in zip(got, starts, ends, strict=True):
        total = 0
        for v in values[a:b].tolist():
            total += v
        assert g == total


def test_an_optimistic_rounding_is_caught(monkeypatch):
    ref = pld_lib.from_discrete_gaussian_mechanism(50.0, sensitivity=2, value_discretization_interval=1e-3)
    monkeypatch.setattr(dgp.np, "ceil", np.floor)  # known-broken: buckets rounded down
    broken = dgp.discrete_gaussian_pld(sigma=50.0, sensitivity=2, value_discretization_interval=1e-3)
    assert not _same_pmf(broken._pmf_remove, ref._pmf_remove)
    assert broken.get_epsilon_for_delta(1e-6) < ref.get_epsilon_for_delta(1e-6)
    assert math.isfinite(ref.get_epsilon_for_delta(1e-6))
