"""SMC-ABC says when not to trust it (issue 26): a run that stops while its spread still shrinks,
one that stops on its budget, and an observation outside the simulated statistics each warn; a
converged default run on a user problem with an exact posterior does not, and matches it.

The thresholds (:mod:`dpinfer.inference.smc.convergence`): a last-population sd ratio below
``min(0.9, 1 - 4·se)``; measured on 15 default runs (five problems with exact references, seeds
1-3) the ratio was 0.90-1.07 and the sd 0.92-1.06x the exact one.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpinfer.errors import ABCConvergenceWarning, InferenceWarning, ObservedOutsideSimulationsWarning
from dpinfer.inference import smc_abc
from dpinfer.inference.smc.adaptive_schedule import AdaptiveSchedule
from dpinfer.inference.smc.convergence import shrink_threshold, width_factor
from dpinfer.models.shipped.gaussian_mean import GaussianMean
from user_problems import PoissonClampedSum

POIS_OBS = [110.0]


@pytest.fixture(scope="module")
def issue_case():
    """Issue 12's clamped mean with Laplace noise of scale 0.015: the spread shrinks for ~6 populations."""
    model = GaussianMean(n=100, clamp=(-1.5, 1.5), epsilon=2.0)
    return model, model.exact_posterior([0.4], grid_size=301, bins=100)


@pytest.fixture(scope="module")
def poisson():
    m = PoissonClampedSum()
    return m, m.exact_posterior(POIS_OBS)


def test_converged_default_run_is_silent_and_matches_the_exact_posterior(poisson):
    model, exact = poisson
    with warnings.catch_warnings():
        warnings.simplefilter("error", InferenceWarning)
        res = smc_abc(model, POIS_OBS, seed=1, backend="serial", n_particles=1000)
    assert "converged" in res.settings["schedule_stop"] and res.settings["findings"] == []
    # seeds 1-5 at 1000 particles: sd 0.92-1.12x exact, no warning (Monte Carlo error at ESS ~950)
    assert abs(res.sd()[0] / exact.sd - 1) < 0.15 and abs(res.mean()[0] - exact.mean) < 0.15 * exact.sd
    last, prev = res.populations[-1], res.populations[-2]
    assert last.sd[0] / prev.sd[0] > shrink_threshold(last.ess, prev.ess)


def test_acceptance_floor_stop_warns(issue_case):
    """Known-broken variant: an acceptance floor of 0.3 stops the schedule on the budget while the
    spread still shrinks (seeds 1-3 measured: sd 1.03-1.09x the exact one, both warnings)."""
    model, exact = issue_case
    with pytest.warns(ABCConvergenceWarning, match="stopped on its budget") as rec:
        res = smc_abc(model, [0.4], seed=1, backend="serial", n_particles=1000,
                      schedule=AdaptiveSchedule(min_acceptance_rate=0.3))
    assert res.settings["schedule_stop"].startswith("acceptance rate")
    assert any("still shrinking" in str(w.message) for w in rec)
    assert any("final tolerance" in str(w.message) for w in rec)  # the kernel is still wide
    assert len(res.settings["findings"]) == 3 and res.sd()[0] > exact.sd


def test_simulation_budget_stop_warns(issue_case):
    """A budget stop warns whether or not the spread has settled (here it nearly has: sd 0.99x)."""
    model, exact = issue_case
    with pytest.warns(ABCConvergenceWarning, match="max_simulations=20000"):
        res = smc_abc(model, [0.4], seed=1, backend="serial", n_particles=1000, max_simulations=20_000)
    assert not res.complete and res.settings["findings"]


def test_observation_outside_the_prior_predictive_warns_once():
    model = GaussianMean(n=30, clamp=(-2.0, 2.0), epsilon=1.0)  # the clamped mean is in [-2, 2]
    with pytest.warns(ObservedOutsideSimulationsWarning, match="range of 300 simulations") as rec:
        res = smc_abc(model, [50.0], n_particles=300, batch_size=300, seed=0)
    assert sum(issubclass(w.category, ObservedOutsideSimulationsWarning) for w in rec) == 1
    assert res.settings["findings"][0]["category"] == "PriorDataConflictWarning"


def test_threshold_and_width_factor():
    assert shrink_threshold(2000, 2000) == 0.9
    assert shrink_threshold(100, 100) == pytest.approx(1 - 4 * np.sqrt(0.01))
    # v = v0 + c eps^2 with v0 = 1, c eps_T^2 = 0.21 (sd 1.1x) and eps_T/eps_{T-1} = 0.5
    r = np.sqrt(1.21 / (1 + 0.21 / 0.25))
    assert width_factor(float(r), 0.5) == pytest.approx(1.1)
    assert width_factor(0.95, 1.0) is None and width_factor(0.3, 0.5) is None


def test_summary_is_a_short_table_with_the_warnings(issue_case):
    model, _ = issue_case
    with pytest.warns(ABCConvergenceWarning):
        res = smc_abc(model, [0.4], seed=1, backend="serial", n_particles=1000, schedule="paper")
    text = res.summary()
    assert len(text.splitlines()) == 4 and "warning: SMC-ABC's posterior was still shrinking" in text
    assert "warning: SMC-ABC's final tolerance" in text
    assert len(text) < 2000 and len(repr(res)) < 200 and "array" not in repr(res)


@pytest.mark.slow
def test_five_dimensional_release_too_wide_and_says_so():
    """The issue's case (~30-50 s): five Poisson rates released together (5-D statistic). The
    default stops on its acceptance floor with sds 1.11-1.23x the exact ones (2000 particles, seeds
    1-3, benchmarks/results/smc_abc_warnings.json; 1000 particles here) and must warn."""
    from dpinfer.models import GammaPrior, GeometricMechanism, PrivateDataModel
    from user_model_reference import poisson_geometric_posterior

    n, cap, d = 50, 10, 5
    mech = GeometricMechanism(d, d * cap, float(d), bounds=([0] * d, [n * cap] * d))

    def simulate(theta, rng):
        return np.minimum(rng.poisson(theta[:, None, :], size=(theta.shape[0], n, d)), cap).sum(axis=1) * 1.0

    model = PrivateDataModel(GammaPrior([2.0] * d, [0.5] * d), simulate, mech)
    obs = [190.0, 150.0, 240.0, 120.0, 200.0]
    one = GeometricMechanism(1, cap, 1.0, bounds=([0], [n * cap]))
    grid = np.linspace(1e-3, 12, 3000)
    sd = np.array([poisson_geometric_posterior(o, n, cap, one, GammaPrior(2.0, 0.5), grid)[1] for o in obs])
    with pytest.warns(ABCConvergenceWarning, match="stopped on its budget"):
        res = smc_abc(model, obs, seed=1, backend="serial", n_particles=1000)
    assert np.mean(res.sd() / sd) > 1.05  # the warning is right: too wide on average


def _feed(sched, rates, sds, ess=1000.0):
    """Drive an AdaptiveSchedule through populations with the given acceptance rates and sds;
    the population index at which it stops (None: it did not)."""
    from dpinfer.inference.smc.adaptive_schedule import AdaptiveSchedule  # noqa: F401

    tol = sched.initial()
    d = np.linspace(0.0, 1.0, 101)
    w = np.full(101, 1 / 101)
    for t, (a, sd) in enumerate(zip(rates, sds, strict=True)):
        sched.observe(t, sd, ess)
        nxt = sched.next(t, tol, d * (0.9**t), w, a)
        if nxt is None:
            return t
        tol = nxt
    return None


def test_the_adaptive_schedule_does_not_stop_while_the_spread_still_shrinks():
    """Acceptance rates that halve every population (the rule's "converged" signature) while the
    sd still falls by 20% per population: the default keeps going; once the sd settles (ratio
    0.99, within 4 se at ESS 1000) it stops. The rule without the spread check (the behaviour
    before, the known-broken variant) stops while the sd still falls."""
    from dpinfer.inference.smc.adaptive_schedule import AdaptiveSchedule

    rates = [0.5**t for t in range(8)]
    shrinking = [[1.0 * 0.8**t] for t in range(len(rates))]
    settled = [[1.0 * 0.8 ** min(t, 4) * 0.99 ** max(t - 4, 0)] for t in range(len(rates))]
    assert _feed(AdaptiveSchedule(spread_check=False, min_acceptance_rate=0.0), rates, shrinking) == 4
    assert _feed(AdaptiveSchedule(min_acceptance_rate=0.0), rates, shrinking) is None
    assert _feed(AdaptiveSchedule(min_acceptance_rate=0.0), rates, settled) == 5
    # a resumed run rebuilds the same state from its populations
    s = AdaptiveSchedule(min_acceptance_rate=0.0)
    _feed(s, rates[:6], shrinking[:6])
    r = AdaptiveSchedule(min_acceptance_rate=0.0)
    r.initial()
    from types import SimpleNamespace

    r.replay([SimpleNamespace(acceptance_rate=a, sd=sd, ess=1000.0)
              for a, sd in zip(rates[:6], shrinking[:6], strict=True)])  # fmt: skip
    assert r.rates == s.rates
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(r.spreads, s.spreads, strict=True))


def test_tolerance_wider_than_the_release_spread_is_warned():
    """The hierarchical beta-binomial groups (tests/hierarchical_problem.py): the default schedule
    converges (its sd stopped shrinking) at a tolerance 0.96x the release's own spread, and κ's sd
    is 2.36x the exact one (seed 1); the tolerance check must say so. Known-broken variant: the
    checks before it (still shrinking, stopped on the budget), silent on this run."""
    import hierarchical_problem as hp

    with pytest.warns(ABCConvergenceWarning, match="final tolerance") as rec:
        res = smc_abc(hp.make_model(), hp.OBSERVED, seed=1, backend="serial", n_particles=500)
    assert not any("still shrinking" in str(w.message) for w in rec)  # the old checks were silent
    rho, factor = res.settings["tolerance_over_spread"], res.settings["tolerance_width_factor"]
    assert rho > 0.5 and factor > 1.1


def test_tolerance_check_is_quiet_where_the_run_is_right(issue_case):
    """The issue-12 case with the default schedule: sd 0.97x the exact one, ρ = 0.08 (seed 1)."""
    from dpinfer.inference.smc.convergence import TOLERANCE_WIDTH, tolerance_width

    model, exact = issue_case
    res = smc_abc(model, [0.4], seed=1, backend="serial", n_particles=1000)
    assert res.settings["tolerance_width_factor"] < TOLERANCE_WIDTH
    assert not any("final tolerance" in f["message"] for f in res.settings["findings"])
    assert abs(res.sd()[0] / exact.sd - 1) < 0.1
    # the formula: ρ = 1 in one dimension adds 2/3 of the release's variance
    assert tolerance_width(1.0, 1.0, 1)[1] == pytest.approx((1 + 2 / 3) ** 0.5)
