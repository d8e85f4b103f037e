"""The ledger's incremental composition (issue #35, item 5): a charge composes one event into the
stored state, the fold agrees with the accountants' full recomposition, ledgers without a state
rebuild it, and ``recompute`` catches a state that went wrong."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from dpinfer.privacy import (
    GaussianEvent,
    LaplaceEvent,
    Ledger,
    PoissonSubsampledGaussianEvent,
    compose,
    get_accountant,
)
from dpinfer.privacy import ledger_state as ls


def _mixed(n: int, seed: int = 3) -> list:
    """``n`` distinct releases: Laplace and Gaussian at varying ε."""
    rng = np.random.default_rng(seed)
    return [
        LaplaceEvent(float(rng.uniform(0.02, 0.06))) if i % 2 else GaussianEvent(float(rng.uniform(20, 40)))
        for i in range(n)
    ]


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_the_fold_agrees_with_the_accountants_full_recomposition(accountant):
    events = _mixed(40)
    state = ls.build(accountant, events)
    fold = state.epsilon(1e-6)
    full = get_accountant(accountant).epsilon(compose(*events), 1e-6)
    if accountant == "pld":  # the same grid and leaves, composed in another order: within Δ per event
        assert full - 40 * 1e-4 <= fold <= full + 40 * 1e-4 and fold == pytest.approx(full, rel=1e-3)
    else:  # the same curves; the fold's order grid includes every order the accountant extends to
        assert fold <= full * (1 + 1e-12) and fold == pytest.approx(full, rel=1e-6)
    # known-broken variant: a fold that drops an event is far off
    assert ls.build(accountant, events[:-1]).epsilon(1e-6) < full - 1e-3


def test_the_pure_fold_is_exact_and_the_serialisation_lossless():
    pure = ls.build("pure", [LaplaceEvent(0.1), LaplaceEvent(0.25)])
    assert pure.epsilon(0.0) == pytest.approx(0.35)
    for accountant in ("pld", "rdp", "pure"):
        state = ls.build(accountant, _mixed(6) if accountant != "pure" else [LaplaceEvent(0.2)])
        again = ls.loads(ls.dumps(state))
        assert again.epsilon(1e-6) == state.epsilon(1e-6) and again.count == state.count
        assert again.add(LaplaceEvent(0.1)).epsilon(1e-6) == state.add(LaplaceEvent(0.1)).epsilon(1e-6)
    with pytest.raises(ValueError):
        ls.loads(b"something else")
    assert ls.empty("advanced") is None


def test_the_vectorised_epsilon_is_dp_accountings():
    """The state's ε is dp-accounting's get_epsilon_for_delta of the same PLD, computed with
    cumulative sums (both directions of an asymmetric PLD, several δ, a state with mass at +inf)."""
    states = [ls.build("pld", _mixed(30)), ls.build("pld", [PoissonSubsampledGaussianEvent(0.1, 1.0, 5)])]
    states.append(ls.build("pld", [LaplaceEvent(0.3), GaussianEvent(0.8)]))
    for state in states:
        pld = state._pld()
        for delta in (1e-9, 1e-6, 1e-3, 0.3):
            # equal up to the float error of dp-accounting's running loss (repeated subtraction of the grid)
            expected = pld.get_epsilon_for_delta(delta)
            assert state.epsilon(delta) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    inf = ls.loads(ls.dumps(states[0]))
    inf.remove = (inf.remove[0], inf.remove[1] * (1 - 1e-5), 1e-5)
    assert inf.epsilon(1e-6) == math.inf and inf.epsilon(1e-4) == pytest.approx(
        inf._pld().get_epsilon_for_delta(1e-4), rel=1e-9
    )


def test_coarsening_rounds_losses_up():
    """Merging grid points onto the upper one never lowers ε (pessimistic), and costs at most the
    coarse grid's spacing; the known-broken variant rounds down and lowers it."""
    state = ls.build("pld", _mixed(10))
    fine = state.epsilon(1e-6)
    coarse = ls.loads(ls.dumps(state))
    coarse._coarsen(4)
    assert coarse.vdi == pytest.approx(4e-4)
    assert fine <= coarse.epsilon(1e-6) <= fine + 4e-4
    down = ls.loads(ls.dumps(state))
    lower, probs, inf_mass = down.remove
    index = lower + np.arange(probs.size)
    floor = index // 4
    down.remove = (int(floor[0]), np.bincount(floor - floor[0], weights=probs), inf_mass)
    down.vdi *= 4
    assert down.epsilon(1e-6) < fine


def test_a_leaf_that_needs_a_coarser_grid_coarsens_the_state():
    state = ls.build("pld", [LaplaceEvent(0.5), GaussianEvent(0.01)])  # tiny multiplier: grid 0.3
    acc = get_accountant("pld")
    assert state.vdi >= acc.leaf_resolution(GaussianEvent(0.01))
    full = acc.epsilon(compose(LaplaceEvent(0.5), GaussianEvent(0.01)), 1e-6)
    assert state.epsilon(1e-6) >= full - 1e-9


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "ledger.db")
    return request.getfixturevalue("pg_server").new_database()


def test_a_charge_reads_the_state_not_the_history(target, monkeypatch):
    """After the first charge, charging and spent() never read or recompose the history."""
    ledger = Ledger.create(target)
    ledger.register("d", 5.0, accountant="pld")
    events = _mixed(12)
    with ledger.charge("d", events[0]):
        pass

    def refuse(tx, dataset):
        raise AssertionError("the history was read")

    monkeypatch.setattr(Ledger, "_events", staticmethod(refuse))
    for event in events[1:]:
        with ledger.charge("d", event):
            pass
    full = get_accountant("pld").epsilon(compose(*events), 1e-6)
    assert ledger.spent("d") == pytest.approx(full, rel=1e-3)
    monkeypatch.undo()
    report = ledger.recompute("d")
    assert report["ok"] and report["recomputed"] == report["recorded"] == report["stored"]
    assert abs(report["full_gap"]) <= 12 * 1e-4


def test_a_ledger_without_a_state_rebuilds_it(tmp_path):
    """A ledger written by an earlier version (no state) or charged by one (state older than the
    last charge) rebuilds the state from the recorded events at its next charge."""
    path = tmp_path / "l.db"
    ledger = Ledger.create(path)
    ledger.register("d", 5.0, accountant="rdp")
    events = _mixed(6)
    for event in events[:3]:
        with ledger.charge("d", event):
            pass
    old_spend = get_accountant("rdp").epsilon(compose(*events[:3], events[0]), 1e-6)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM budget_state")
        # and a charge by an older client, which recomposed everything and stored no state
        conn.execute(
            "INSERT INTO charges (dataset, event, label, epsilon_spent, status, created, pid)"
            " SELECT dataset, event, 'old client', ?, 'released', created, 1 FROM charges WHERE id = 1",
            (old_spend,),
        )
    for event in events[3:]:
        with ledger.charge("d", event):
            pass
    recorded = [*events[:3], events[0], *events[3:]]
    full = get_accountant("rdp").epsilon(compose(*recorded), 1e-6)
    assert ledger.spent("d") == pytest.approx(full, rel=1e-9)
    assert ledger.recompute("d")["ok"]


def test_recompute_finds_a_corrupted_state(tmp_path):
    """Known-broken variant: a state that lost charges (here: replaced by an empty one under the
    last charge's id) lets later charges record too little; recompute names them."""
    path = tmp_path / "l.db"
    ledger = Ledger.create(path)
    ledger.register("d", 5.0, accountant="pld")
    for event in _mixed(4):
        with ledger.charge("d", event):
            pass
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE budget_state SET state = ?", (ls.dumps(ls.empty("pld")),))
    with ledger.charge("d", LaplaceEvent(0.5)):
        pass
    report = ledger.recompute("d")
    # the spend never falls (the recorded one counts), but the last charge added only ~0.5 to it
    assert not report["ok"] and [u["id"] for u in report["understated"]] == [5]


@pytest.mark.slow
def test_a_subsampled_gaussian_state_stays_bounded():
    """A DP-SGD event's wide loss support is merged pessimistically to at most MAX_POINTS."""
    event = PoissonSubsampledGaussianEvent(0.05, 1.0, 200, "add-remove")
    state = ls.build("pld", [event, event])
    assert max(state.remove[1].size, state.add_pmf[1].size) <= ls.MAX_POINTS
    full = get_accountant("pld").epsilon(compose(event, event), 1e-6)
    assert full <= state.epsilon(1e-6) <= full + 2 * state.vdi
