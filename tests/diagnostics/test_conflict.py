"""The shared prior–data conflict check (issue 39 item 3): equation (1) of
dpinfer.diagnostics.conflict, its false-alarm rate under the model, and what each method does
with it on the BMI case (a release in the data's units read with a standardised prior)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpinfer.diagnostics import conflict
from dpinfer.errors import PriorDataConflictWarning
from dpinfer.inference.exact.importance import mechanism_importance_sampling
from dpinfer.models.shipped.gaussian_mean import GaussianMean, prior_from_clamp

BMI = 26.9  # a mean body-mass index, released from 500 records clamped to [15, 45] at ε = 1


def test_tail_probability_is_the_two_sided_monte_carlo_p_value():
    sims = np.arange(1.0, 100.0)[:, None]  # 99 simulations 1..99
    chk = conflict.tail_probabilities([0.0], sims)
    assert chk.tail_probability[0] == pytest.approx(2 * 1 / 100)  # none at or below: (1+0)/(M+1), x2
    chk = conflict.tail_probabilities([50.0], sims)
    assert chk.tail_probability[0] == 1.0 and not chk.conflict
    chk = conflict.tail_probabilities([99.0], sims)  # one at or above: 2·(1+1)/100
    assert chk.tail_probability[0] == pytest.approx(0.04)
    assert conflict.needed_simulations(1) == 1000 and conflict.needed_simulations(9) == 1800


def _false_alarm_rate(bonferroni: bool, reps: int = 2000, dim: int = 3) -> float:
    """Replicates in which a release drawn from the prior predictive itself is flagged."""
    rng = np.random.default_rng(5)
    m = conflict.needed_simulations(dim)
    hits = 0
    for _ in range(reps):
        sims = rng.standard_normal((m, dim))
        chk = conflict.tail_probabilities(rng.standard_normal(dim), sims)
        level = chk.threshold if bonferroni else chk.alpha  # the broken variant: no Bonferroni
        hits += bool(np.any(chk.tail_probability <= level))
    return hits / reps


def test_false_alarm_rate_under_the_model_is_at_most_alpha():
    se = np.sqrt(conflict.ALPHA * (1 - conflict.ALPHA) / 2000)
    assert _false_alarm_rate(True) <= conflict.ALPHA + 3 * se
    # known-broken variant: the per-coordinate test at alpha over 3 coordinates alarms ~3x as often
    assert _false_alarm_rate(False) > conflict.ALPHA + 3 * se


def test_a_too_small_range_is_topped_up_only_when_the_release_is_outside_it():
    model = GaussianMean(n=30, clamp=(-2.0, 2.0), epsilon=1.0)
    calls = []

    class Counting(GaussianMean):
        def simulate(self, theta, seed=None, u=None):
            calls.append(theta.shape[0])
            return super().simulate(theta, seed, u)

    counting = Counting(n=30, clamp=(-2.0, 2.0), epsilon=1.0)
    found, chk = conflict.prior_data_conflict(counting, [0.1], span=([-1.0], [1.0], 100), seed=0)
    assert found == [] and calls == [] and chk is not None and not chk.resolvable
    found, chk = conflict.prior_data_conflict(counting, [50.0], span=([-1.0], [1.0], 100), seed=0)
    assert calls == [1000] and chk.n == 1000 and found[0].category is PriorDataConflictWarning
    assert "50 not in" in found[0].message
    # range of enough simulations: decided without simulating
    found, _ = conflict.prior_data_conflict(model, [50.0], span=([-2.5], [2.5], 5000), seed=0)
    assert found and "outside the range of 5000" in found[0].message


def test_bmi_release_with_the_standardised_prior_warns_and_names_the_prior_arguments():
    model = GaussianMean(n=500, clamp=(15.0, 45.0), epsilon=1.0)  # prior N(0, 1): standardised data
    with pytest.warns(PriorDataConflictWarning, match="prior_mean") as rec:
        res = mechanism_importance_sampling(model, [BMI], n_theta=500, n_inner=5, pilot_theta=200, seed=0)
    assert "--prior-mean" in str(rec[0].message) and "not in" in str(rec[0].message)
    assert res.settings["findings"][0]["category"] == "PriorDataConflictWarning"
    assert abs(res.mean()[0]) < 0.3  # the symptom: the prior comes back, ESS and k look fine
    assert res.khat < 0.7 and res.ess > 0.8 * 500


def test_bmi_release_with_the_prior_from_the_clamp_bounds_gives_the_posterior_silently():
    args = prior_from_clamp((15.0, 45.0))
    assert args == {"prior_mean": 30.0, "prior_sd": 30.0, "noise_sd": 7.5}
    model = GaussianMean(n=200, clamp=(15.0, 45.0), epsilon=1.0, **args)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PriorDataConflictWarning)
        res = mechanism_importance_sampling(model, [BMI], n_theta=2000, n_inner=10, pilot_theta=1000, seed=0)
    exact = model.exact_posterior([BMI], grid_size=201, bins=100)
    assert res.settings["findings"] == []
    se = exact.sd / np.sqrt(res.ess)  # Monte Carlo error of the weighted mean
    assert abs(res.mean()[0] - exact.mean) < 4 * se + 0.02 * exact.sd
    assert exact.sd < 0.05 * args["prior_sd"]  # the data, not the prior, decide
