"""SPPE and SPLE runs that resume: interrupted (KeyboardInterrupt in the round callback) or
killed (SPPE, a SIGKILLed subprocess; slow tier) after a round began, resumed from the run
store, equal to an uninterrupted fit bit for bit (flow weights, round losses, SPLE's MCMC
draws). Known-broken variant: a resume that does not restore the training generator's state
trains differently, and the comparison catches it.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from dpinfer.execution.runstore import RunStore
from dpinfer.inference.neural import SPLE, SPPE, NeuralRunOptions
from dpinfer.models import GaussianMean
from kill_helpers import kill_at_flag

SMALL = {"kind": "nsf", "transforms": 2, "hidden": 16, "blocks": 1, "bins": 6}
FAST = {"max_epochs": 15, "patience": 5}
OBS = [0.6]
KW = dict(flow=SMALL, rounds=3, simulations_per_round=80, rqmc_points=2, training=FAST, seed=3)

CHILD = """
import sys, time
from pathlib import Path
from dpinfer.models import GaussianMean
from dpinfer.inference.neural import SPPE, NeuralRunOptions

store, flag = sys.argv[1], Path(sys.argv[2])

def stall(info, posterior):
    if info.round == 1:  # round 1 done, its checkpoint not yet written
        flag.write_text("1")
        time.sleep(120)

SPPE(GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5), run=NeuralRunOptions(callback=stall), atoms=4,
     **KW).fit([0.6], runs=store)
""".replace("**KW", ", ".join(f"{k}={v!r}" for k, v in KW.items()))


def _model():
    return GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5)


def _same(a, b) -> bool:
    sa, sb = a.flow.state_dict(), b.flow.state_dict()
    return (
        sa.keys() == sb.keys()
        and all(torch.equal(sa[k], sb[k]) for k in sa)
        and [r.best_validation_loss for r in a.rounds] == [r.best_validation_loss for r in b.rounds]
        and [r.epochs for r in a.rounds] == [r.epochs for r in b.rounds]
    )


@pytest.fixture(scope="module")
def sppe_uninterrupted():
    return SPPE(_model(), atoms=4, **KW).fit(OBS)


@pytest.mark.slow
def test_a_killed_sppe_run_resumes_bit_for_bit(tmp_path, sppe_uninterrupted):
    store, flag = str(tmp_path / "runs.db"), tmp_path / "flag"
    kill_at_flag(CHILD, [store, str(flag)], flag, timeout=120)
    [run] = RunStore(store).runs()
    assert run["status"] == "running" and run["steps"] == 1
    resumed = SPPE(_model(), atoms=4, **KW).fit(OBS, runs=store, resume=run["id"])
    assert _same(resumed, sppe_uninterrupted) and len(resumed.rounds) == 3
    assert np.array_equal(resumed.sample(50, seed=1), sppe_uninterrupted.sample(50, seed=1))
    record = RunStore(store).run(run["id"])
    assert record["status"] == "finished" and record["kind"] == "sppe" and record["privacy"]["epsilon"] == 0.5


def test_an_interrupted_sppe_run_resumes_and_a_broken_resume_is_caught(
    tmp_path, sppe_uninterrupted, monkeypatch
):
    from dpinfer.inference.neural.resume import RoundsHook

    store = str(tmp_path / "runs.db")

    def stop(info, posterior):
        if info.round == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        SPPE(_model(), atoms=4, run=NeuralRunOptions(callback=stop), **KW).fit(OBS, runs=store)
    [run] = RunStore(store).runs()
    assert run["status"] == "interrupted" and run["steps"] == 1
    begin = RoundsHook.begin

    def without_generator(self, settings, posterior, gen, pool):
        first = begin(self, settings, posterior, gen, pool)
        gen.manual_seed(0)  # broken: the training generator's state is not restored
        return first

    copy = str(tmp_path / "copy.db")
    shutil.copy(store, copy)  # the same interrupted run, for the broken variant
    monkeypatch.setattr(RoundsHook, "begin", without_generator)
    broken = SPPE(_model(), atoms=4, **KW).fit(OBS, runs=copy, resume=run["id"])
    assert not _same(broken, sppe_uninterrupted)
    monkeypatch.undo()
    resumed = SPPE(_model(), atoms=4, **KW).fit(OBS, runs=store, resume=run["id"])
    assert _same(resumed, sppe_uninterrupted)


def test_an_interrupted_sple_run_resumes_bit_for_bit(tmp_path):
    kw = dict(KW, rounds=2, warmup=20)
    whole = SPLE(_model(), posterior_draws=40, **kw).fit(OBS)
    store = str(tmp_path / "runs.db")

    def stop(info, posterior):
        if info.round == 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        SPLE(_model(), posterior_draws=40, run=NeuralRunOptions(callback=stop), **kw).fit(OBS, runs=store)
    [run] = RunStore(store).runs()
    resumed = SPLE(_model(), posterior_draws=40, **kw).fit(OBS, runs=store, resume=run["id"])
    assert _same(resumed, whole) and np.array_equal(resumed.draws, whole.draws)
