"""The diagnostics of dpinfer.diagnostics.checks (issue 12 item 8): each flags its problem and
stays quiet on a healthy case."""

from __future__ import annotations

import numpy as np

from dpinfer.diagnostics import checks
from dpinfer.errors import (
    ConvergenceWarning,
    PriorBoundaryWarning,
    WeightDegeneracyWarning,
)
from dpinfer.inference.neural.mcmc import split_rhat

RNG = np.random.default_rng(0)


def test_weights():
    assert checks.check_weights(np.ones(2000)) == []
    assert checks.check_weights(RNG.uniform(0.5, 1.5, 2000)) == []
    few = np.r_[np.ones(10), np.full(1990, 1e-6)]
    found = checks.check_weights(few)
    assert found and all(f.category is WeightDegeneracyWarning for f in found)
    assert "effective sample size" in found[0].message
    heavy = RNG.pareto(0.8, 5000) + 1  # tail index 0.8: k ≈ 1.25
    assert any("Pareto k" in f.message for f in checks.check_weights(heavy))
    assert checks.pareto_khat(np.log(RNG.pareto(5.0, 5000) + 1)) < 0.5


def test_rhat():
    good = RNG.standard_normal((500, 4, 2))
    assert checks.check_rhat(split_rhat(good), ["a", "b"]) == []
    bad = good + np.array([0.0, 0.0, 0.0, 1.0])[None, :, None]  # one chain stuck elsewhere
    found = checks.check_rhat(split_rhat(bad), ["a", "b"])
    assert found[0].category is ConvergenceWarning and "a (" in found[0].message


def test_prior_bounds():
    flat = RNG.uniform(0, 1, (4000, 1))
    assert checks.check_prior_bounds(flat, [0.0], [1.0]) == []
    piled = RNG.exponential(0.005, (4000, 1))
    found = checks.check_prior_bounds(piled, [0.0], [1.0], ["rate"])
    assert found[0].category is PriorBoundaryWarning and "lower bound" in found[0].message
    assert checks.check_prior_bounds(RNG.standard_normal((4000, 2)), -np.inf, np.inf) == []




def test_prior_bound_warning_only_when_the_bound_binds():
    """Issue 39 item 6: a posterior whose density falls to 0 at the bound (Beta(2, 100): 26% of its
    mass within 0.01 of 0, 33% in the next band) is not truncated by it; one whose density rises
    to the bound (Beta(1, 30)) is. The old rule (mass in the band alone) flagged both."""
    rng = np.random.default_rng(4)
    near = rng.beta(2.0, 100.0, (4000, 1))
    assert np.mean(near <= 0.01) > 0.05  # what the mass-only rule flagged
    assert checks.check_prior_bounds(near, [0.0], [1.0], ["kappa"]) == []
    binding = rng.beta(1.0, 30.0, (4000, 1))
    found = checks.check_prior_bounds(binding, [0.0], [1.0], ["kappa"])
    assert found and "does not fall towards it" in found[0].message
