"""Issue 27: ``rounds="auto"`` (stopping by evidence within a simulation budget) and the warnings a
careful user needs after an SPPE / SPLE fit. Each warning has a seeded run that must trigger it
and one that must not (tiny flows and simulation counts; the SIR run of the issue is slow)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpinfer.errors import (
    ConvergenceWarning,
    InferenceWarning,
    InvalidDataError,
    ObservedOutsideSimulationsWarning,
    PriorBoundaryWarning,
)
from dpinfer.inference.neural import SPLE, SPPE, NeuralRunOptions
from dpinfer.inference.neural.mcmc import effective_sample_size
from dpinfer.inference.neural.sple import rhat_threshold
from dpinfer.models import GaussianMean
from dpinfer.models.prior_families import UniformPrior

TINY = {"rqmc_points": 2, "flow": {"transforms": 2, "hidden": 16}, "seed": 0}


def _model(prior=None):
    model = GaussianMean(n=30, clamp=(-2.0, 2.0), epsilon=1.0)
    if prior is not None:
        model.prior = prior
    return model


def _fit(klass, obs, model=None, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        post = klass(model or _model(), **{**TINY, **kw}).fit(obs)
    return post, [w for w in caught if issubclass(w.category, InferenceWarning)]


def _messages(caught, category, text):
    return [str(w.message) for w in caught if issubclass(w.category, category) and text in str(w.message)]


# -- sizes ----------------------------------------------------------------------------------------
def test_sizes_auto_budget_and_paper():
    m = _model()
    est = SPPE(m)
    assert (est.rounds, est.simulations_per_round, est.budget, est.max_rounds) == ("auto", 1000, 5000, 5)
    est = SPPE(m, simulations=3000)
    assert (est.simulations_per_round, est.max_rounds) == (1000, 3)
    est = SPPE(m, simulations=600)  # at most half the budget per round: two rounds can be compared
    assert (est.simulations_per_round, est.max_rounds) == (300, 2)
    est = SPPE(m, rounds=10, simulations_per_round=1000)  # the paper
    assert (est.rounds, est.simulations_per_round, est.budget) == (10, 1000, 10_000)
    est = SPLE(m, rounds=3, simulations=900)
    assert (est.rounds, est.simulations_per_round) == (3, 300)
    assert est.settings()["simulations"] == 900
    for bad in ({"rounds": "many"}, {"rounds": 0}, {"simulations": 10}, {"simulations": 500,
                "simulations_per_round": 600}, {"rounds": 30, "simulations": 100},
                {"stop_tolerance": 0}):  # fmt: skip
        with pytest.raises(InvalidDataError):
            SPPE(m, **bad)


@pytest.mark.slow
def test_auto_stops_when_a_round_no_longer_moves_the_posterior():
    kw = {"simulations": 150, "simulations_per_round": 50, "training": {"patience": 1, "max_epochs": 3}}
    post, _ = _fit(SPPE, [0.3], stop_tolerance=10.0, **kw)  # any move is small: stop after two rounds
    assert post.settings["stopped"] == "converged" and len(post.rounds) == 2
    post, caught = _fit(SPPE, [0.3], stop_tolerance=1e-9, **kw)  # nothing is small: spend the budget
    assert post.settings["stopped"] == "budget" and len(post.rounds) == 3
    assert post.n_simulations == 150
    assert _messages(caught, ConvergenceWarning, "spent its budget of 150 simulations") or _messages(
        caught, ConvergenceWarning, "the last round (round 3) moved"
    )


def _budget_findings(stopped, shift, change=0.0):
    """SPPE's findings for a run whose last round moved the posterior by ``shift`` sd."""
    from types import SimpleNamespace

    from dpinfer.inference.neural.training import RoundInfo, SimulationPool

    est = SPPE(_model(), simulations=3000, stop_tolerance=0.1)
    rounds = [RoundInfo(0, 1000, 1000, 5, 0, 0, 0, 0, {}),
              RoundInfo(1, 1000, 2000, 5, 0, 0, 0, 0, {"shift_sd": shift, "sd_change": change})]  # fmt: skip
    post = SimpleNamespace(rounds=rounds, settings={"stopped": stopped}, param_names=["mu"])
    return [str(f.message) for f in est.diagnostics(post, np.array([0.3]), SimulationPool())]


def test_budget_spent_before_the_rounds_settled_warns():
    """rounds='auto' stopped by the budget with the last round still above stop_tolerance warns
    even below move_warning; a converged run, a fixed number of rounds and a large move (the
    stronger 'moved' warning) do not give it."""
    found = _budget_findings("budget", 0.15)
    assert len(found) == 1 and "spent its budget of 3000 simulations" in found[0]
    assert "0.15 posterior sd" in found[0] and "raise simulations=" in found[0]
    assert _budget_findings("budget", 0.05, change=0.12)  # the sd still changing counts too
    assert not _budget_findings("converged", 0.05)
    assert not _budget_findings("budget", 0.05)  # within the tolerance (the rule would have stopped)
    assert not _budget_findings("rounds", 0.15)  # an integer number of rounds: no stop rule
    moved = _budget_findings("budget", 0.4)
    assert len(moved) == 1 and "moved the posterior mean by 0.40" in moved[0]


def test_auto_rule_reads_the_round_summaries():
    est = SPPE(_model(), stop_tolerance=0.1)
    from dpinfer.inference.neural.training import RoundInfo

    def info(shift, change):
        return RoundInfo(1, 10, 20, 3, 0.0, 0.0, 0.0, 0.0, {"shift_sd": shift, "sd_change": change})

    assert est._converged(info(0.05, 0.09)) and not est._converged(info(0.11, 0.0))
    assert not est._converged(info(0.0, 0.2)) and not est._converged(RoundInfo(0, 10, 10, 3, 0, 0, 0, 0))


# -- warnings -------------------------------------------------------------------------------------
def test_epoch_cap_warning():
    _, caught = _fit(SPPE, [0.3], rounds=1, simulations_per_round=100, training={"max_epochs": 2})
    assert _messages(caught, ConvergenceWarning, "epoch cap (max_epochs=2)")
    post, caught = _fit(SPPE, [0.3], rounds=1, simulations_per_round=100, training={"patience": 2})
    assert not _messages(caught, ConvergenceWarning, "epoch cap") and post.rounds[0].epochs > 2
    assert "epoch_cap" not in post.rounds[0].extra


def test_last_round_moved_warning():
    # release in the prior's tail, 40 simulations per round: round 2 still moves the answer
    post, caught = _fit(SPPE, [1.8], rounds=2, simulations_per_round=40, training={"patience": 3})
    assert post.rounds[-1].extra["shift_sd"] > SPPE.move_warning
    assert _messages(caught, ConvergenceWarning, "the last round (round 2) moved the posterior")
    post, caught = _fit(SPPE, [0.3], rounds=2, simulations_per_round=100, training={"patience": 2})
    assert post.settings["stopped"] == "rounds" and len(post.rounds) == 2  # integer rounds: all run
    assert max(post.rounds[-1].extra["shift_sd"], post.rounds[-1].extra["sd_change"]) < SPPE.move_warning
    assert not _messages(caught, ConvergenceWarning, "moved the posterior")


def test_prior_bound_warning():
    prior = UniformPrior([0.0], [10.0])  # a release below the clamp range's middle: mass piles on 0
    post, caught = _fit(SPPE, [-0.3], _model(prior), rounds=1, simulations_per_round=200,
                        training={"patience": 3})  # fmt: skip
    assert _messages(caught, PriorBoundaryWarning, "lower bound 0")
    assert post.settings["diagnostics"][0]["category"] == "PriorBoundaryWarning"
    _, caught = _fit(SPPE, [1.0], _model(UniformPrior([0.0], [10.0])), rounds=1,
                     simulations_per_round=200, training={"patience": 3})  # fmt: skip
    assert not caught


def test_observed_outside_simulations_warning():
    _, caught = _fit(SPPE, [50.0], rounds=1, simulations_per_round=100, training={"patience": 2})
    assert _messages(caught, ObservedOutsideSimulationsWarning, "50 not in")
    _, caught = _fit(SPPE, [0.3], rounds=1, simulations_per_round=100, training={"patience": 2})
    assert not caught


def test_warn_false_keeps_the_findings():
    with warnings.catch_warnings():
        warnings.simplefilter("error", InferenceWarning)
        post = SPPE(_model(), rounds=1, simulations_per_round=100, run=NeuralRunOptions(warn=False),
                    training={"patience": 2}, **TINY).fit([50.0])  # fmt: skip
    assert [d["category"] for d in post.settings["diagnostics"]] == ["PriorDataConflictWarning"]


def test_sple_mcmc_ess_warning():
    kw = {"rounds": 1, "simulations_per_round": 100, "training": {"patience": 2, "max_epochs": 10}}
    post, caught = _fit(SPLE, [0.3], posterior_draws=100, chains=10, warmup=5, **kw)
    assert post.mcmc["ess"][0] < SPLE.min_ess
    assert _messages(caught, ConvergenceWarning, "effective sample size below 400")


@pytest.mark.slow
def test_sple_mcmc_no_warning_when_mixed():
    kw = {"rounds": 1, "simulations_per_round": 100, "training": {"patience": 2, "max_epochs": 10}}
    post, caught = _fit(SPLE, [0.3], chains=20, warmup=15, posterior_draws=1000, **kw)
    assert post.mcmc["ess"][0] >= SPLE.min_ess and post.mcmc["max_rhat"] > 1.01  # short chains
    assert not _messages(caught, ConvergenceWarning, "R-hat")
    assert not _messages(caught, ConvergenceWarning, "effective sample size")


def test_rhat_threshold_and_ess():
    # Vehtari's 1.01 for a few long chains; wider for many short autocorrelated ones
    assert rhat_threshold(4, 1000, [4000.0]) == 1.01
    assert rhat_threshold(100, 20, [2000.0]) > 1.01
    assert rhat_threshold(100, 20, [400.0]) > rhat_threshold(100, 20, [2000.0])
    est = SPLE(_model())
    post = type("P", (), {"param_names": ("theta",), "draws": np.zeros((40, 1))})()
    post.mcmc = {"rhat": [1.5], "ess": [4000.0], "chains": 4, "draws_per_chain": 1000}
    assert [f.category for f in est._own_diagnostics(post)] == [ConvergenceWarning]
    post.mcmc = {"rhat": [1.001], "ess": [4000.0], "chains": 4, "draws_per_chain": 1000}
    assert est._own_diagnostics(post) == []
    # ESS of independent draws is about their number; of AR(1) with φ = 0.9 about n(1-φ)/(1+φ)
    rng = np.random.default_rng(0)
    iid = effective_sample_size(rng.normal(size=(500, 8, 1)))[0]
    assert 3000 < iid < 5000
    x = np.zeros((2000, 4, 1))
    for t in range(1, 2000):
        x[t] = 0.9 * x[t - 1] + rng.normal(size=(4, 1))
    assert 300 < effective_sample_size(x)[0] < 600  # 421 expected; MC sd about 60


@pytest.mark.slow
def test_cli_sir_three_short_rounds_warns(capsys):
    """The issue's run: SIR SPPE, 3 rounds x 300 simulations, epochs capped at 30."""
    from dpinfer.cli import main

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc = main(["sppe", "--model", "sir", "--epsilon", "10", "--observed", "builtin", "--rounds", "3",
                   "--simulations", "300", "--max-epochs", "30", "--json", "--no-progress", "--draws", "500"])
    assert rc == 0
    texts = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert any("epoch cap" in t for t in texts), texts


def test_flow_defaults_and_paper_preset():
    from dpinfer.inference.neural import FlowConfig

    assert FlowConfig.from_any("nsf").transforms == 5 and FlowConfig.from_any("maf").transforms == 5
    paper = FlowConfig.from_any("paper")
    assert (paper.kind, paper.transforms, paper.hidden, paper.bins) == ("nsf", 8, 50, 10)


def test_unknown_flow_option_is_a_clear_error():
    from dpinfer.inference.neural import FlowConfig

    with pytest.raises(InvalidDataError, match="unknown flow option"):
        FlowConfig.from_any({"layers": 3})
    with pytest.raises(InvalidDataError, match="unknown flow option"):
        SPPE(GaussianMean(n=50, epsilon=1.0), flow={"transform": 3})
