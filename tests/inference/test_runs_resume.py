"""Runs that resume: an SMC-ABC run killed mid-way and resumed equals an uninterrupted one.

The run store is a SQLite file or a PostgreSQL database (the session's server, tests/pg_server.py;
skipped with the reason where none can be started). A subprocess runs ``smc_abc(..., runs=STORE)``
and is SIGKILLed in the middle of population 2; ``smc_abc(..., runs=STORE, resume=RUN_ID)`` then
finishes it, and particles, weights, distances, tolerances and simulation counts must equal an
uninterrupted run's bit for bit. Known-broken variant: a resume that restarts the population
count (so draws population 2 with population 0's seeds) must be caught by the same comparison.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from dpinfer.cli import main
from dpinfer.errors import InvalidDataError, RunStoreError
from dpinfer.execution.runstate import decode_state, encode_state
from dpinfer.execution.runstore import RunStore
from dpinfer.inference.smc.schedule import FixedSchedule
from dpinfer.inference.smc.smc_abc import smc_abc
from dpinfer.models.shipped.gaussian_mean import GaussianMean
from kill_helpers import kill_at_flag

OBS = [1.3]
TOLERANCES = (1.0, 0.6, 0.4, 0.3, 0.2)
KW = dict(n_particles=300, batch_size=200, backend="serial", seed=7)

CHILD = """
import sys, time
from pathlib import Path
from dpinfer.inference.smc.schedule import FixedSchedule
from dpinfer.inference import RunOptions, smc_abc
from dpinfer.models.shipped.gaussian_mean import GaussianMean

store, flag = sys.argv[1], Path(sys.argv[2])

def stall(diag):
    if diag.t == 2:  # population 2 done, its checkpoint not yet written: die mid-way
        flag.write_text("2")
        time.sleep(120)

model = GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5, prior_sd=1.0, noise_sd=1.0)
smc_abc(model, [1.3], n_particles=300, batch_size=200, backend="serial", seed=7,
        schedule=FixedSchedule(TOLERANCES), runs=store, run=RunOptions(callback=stall))
""".replace("TOLERANCES", repr(TOLERANCES))


def _model():
    return GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5, prior_sd=1.0, noise_sd=1.0)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    return request.getfixturevalue("pg_server").new_database()


@pytest.fixture(scope="module")
def uninterrupted():
    return smc_abc(_model(), OBS, schedule=FixedSchedule(TOLERANCES), **KW)


def _same(a, b) -> bool:
    return (
        np.array_equal(a.particles, b.particles)
        and np.array_equal(a.weights, b.weights)
        and np.array_equal(a.distances, b.distances)
        and [p.tolerance for p in a.populations] == [p.tolerance for p in b.populations]
        and [p.n_simulations for p in a.populations] == [p.n_simulations for p in b.populations]
        and all(np.array_equal(x[0], y[0]) for x, y in zip(a.history, b.history, strict=True))
    )


def _killed_run(store, tmp_path) -> str:
    flag = tmp_path / "flag"
    kill_at_flag(CHILD, [store, str(flag)], flag, timeout=60)
    [run] = RunStore(store).runs()
    assert run["status"] == "running" and run["steps"] == 2  # checkpoint: the start of population 2
    return run["id"]


@pytest.fixture(scope="module")
def killed_sqlite(tmp_path_factory):
    """One SQLite store holding a run SIGKILLed in population 2 (a child process each costs about
    2 s of start-up): the tests below resume copies of it."""
    folder = tmp_path_factory.mktemp("killed")
    store = folder / "runs.db"
    return store, _killed_run(str(store), folder)


def _copy_of_killed(killed, tmp_path) -> tuple[str, str]:
    """A fresh copy of the killed run's store in ``tmp_path`` (with any -wal/-shm files), its run id."""
    store, run_id = killed
    for f in store.parent.glob(store.name + "*"):
        shutil.copy2(f, tmp_path / f.name)
    return str(tmp_path / store.name), run_id


def test_a_killed_run_resumes_to_the_uninterrupted_result(store, tmp_path, uninterrupted, capsys,
                                                          killed_sqlite):
    if store.startswith("postgresql"):
        run_id = _killed_run(store, tmp_path)
    else:  # the same kind of run, killed the same way once for the module
        store, run_id = _copy_of_killed(killed_sqlite, tmp_path)
        assert RunStore(store).run(run_id)["status"] == "running"
    resumed = smc_abc(_model(), OBS, schedule=FixedSchedule(TOLERANCES), runs=store, resume=run_id,
                      **{**KW, "seed": None})  # the recorded seed is used
    assert _same(resumed, uninterrupted) and resumed.settings["run_id"] == run_id
    record = RunStore(store).run(run_id)
    assert record["status"] == "finished" and record["steps"] == len(TOLERANCES)
    assert record["model"]["model"] == "gaussian-mean" and record["settings"]["n_particles"] == 300
    assert record["privacy"]["epsilon"] == pytest.approx(0.5) and record["observed"] == OBS
    assert record["wall_s"] > 0 and record["cpu_s"] > 0 and record["seed"] == "7"
    with pytest.raises(RunStoreError, match="already finished"):
        smc_abc(_model(), OBS, schedule=FixedSchedule(TOLERANCES), runs=store, resume=run_id, **KW)
    assert main(["runs", "list", "--runs", store]) == 0
    assert run_id in capsys.readouterr().out
    assert main(["runs", "show", run_id, "--runs", store, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["seed_entropy"] == "7"


def test_a_resume_that_restarts_the_count_is_caught(tmp_path, uninterrupted, monkeypatch, killed_sqlite):
    """Known-broken variant: population 2 redrawn with population 0's seeds differs."""
    from dpinfer.inference.smc import runs as smc_runs

    store, run_id = _copy_of_killed(killed_sqlite, tmp_path)
    begin = smc_runs.SMCRunHook.begin

    def restart_count(self, *args):
        state = begin(self, *args)
        return (*state[:-1], 0)

    monkeypatch.setattr(smc_runs.SMCRunHook, "begin", restart_count)
    broken = smc_abc(_model(), OBS, schedule=FixedSchedule(TOLERANCES), runs=store, resume=run_id, **KW)
    assert not _same(broken, uninterrupted)


def test_resume_refuses_other_inputs(tmp_path, killed_sqlite):
    store = str(tmp_path / "runs.db")
    first = smc_abc(_model(), OBS, schedule=FixedSchedule((1.0, 0.6)), runs=store, **KW)
    run_id = first.settings["run_id"]
    RunStore(store).run(run_id)  # recorded
    with pytest.raises(InvalidDataError, match="needs runs="):
        smc_abc(_model(), OBS, schedule=FixedSchedule((1.0, 0.6)), resume=run_id, **KW)
    with pytest.raises(RunStoreError, match="no run 'nope'"):
        smc_abc(_model(), OBS, runs=store, resume="nope", **KW)
    # an interrupted run, resumed with other settings or data: refused, naming what differs
    (tmp_path / "killed").mkdir()
    store2, run2 = _copy_of_killed(killed_sqlite, tmp_path / "killed")
    with pytest.raises(RunStoreError, match=r"settings\.n_particles, observed differ"):
        smc_abc(_model(), [0.2], schedule=FixedSchedule(TOLERANCES), runs=store2, resume=run2,
                **{**KW, "n_particles": 200})
    with pytest.raises(RunStoreError, match="seed_entropy"):
        smc_abc(_model(), OBS, schedule=FixedSchedule(TOLERANCES), runs=store2, resume=run2,
                **{**KW, "seed": 8})


def test_checkpoint_state_round_trips_exactly_without_pickle():
    rng = np.random.default_rng(0)
    state = {"a": rng.normal(size=(3, 2)), "t": 3, "tol": 0.1 + 0.2, "x": [1, (np.arange(3), None)],
             "f": float("inf"), "s": "é", "i": np.int64(5)}
    back = decode_state(encode_state(state))
    assert np.array_equal(back["a"], state["a"]) and back["tol"] == 0.1 + 0.2 and back["f"] == float("inf")
    assert isinstance(back["x"][1], tuple) and np.array_equal(back["x"][1][0], np.arange(3))
    assert back["i"] == 5 and back["s"] == "é"
    with pytest.raises(InvalidDataError, match="object arrays"):
        encode_state({"o": np.array([object()])})
    with pytest.raises(InvalidDataError, match="cannot hold a set"):
        encode_state({"o": {1}})


def test_runs_cli_refuses_a_missing_store(tmp_path, capsys):
    assert main(["runs", "list", "--runs", str(tmp_path / "none.db")]) == 2
    assert "no run store" in capsys.readouterr().err
    assert not Path(tmp_path / "none.db").exists()


def test_smc_abc_command_records_and_resumes(tmp_path, capsys, monkeypatch):
    from dpinfer.inference.smc import runs as smc_runs

    obs = tmp_path / "obs.json"
    obs.write_text(json.dumps({"observed": [0.7], "epsilon": 1.0, "model_args": {"n": 30}}))
    store = str(tmp_path / "runs.db")
    argv = ["smc-abc", "--model", "gaussian-mean", "--observed", str(obs), "--particles", "200",
            "--schedule", "1,0.5,0.3", "--backend", "serial", "--batch-size", "200", "--seed", "4", "--json"]
    assert main(argv) == 0
    whole = json.loads(capsys.readouterr().out)
    assert whole["run_id"] is None  # not recorded without --runs
    checkpoint = smc_runs.SMCRunHook.checkpoint

    def interrupted(self, *args):
        checkpoint(self, *args)
        raise KeyboardInterrupt  # Ctrl-C right after the checkpoint of population 1

    monkeypatch.setattr(smc_runs.SMCRunHook, "checkpoint", interrupted)
    assert main([*argv, "--runs", store]) == 130
    capsys.readouterr()
    monkeypatch.undo()
    [run] = RunStore(store).runs()
    assert run["status"] == "interrupted" and run["steps"] == 1
    assert main([*argv, "--runs", store, "--resume", run["id"]]) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert resumed["mean"] == whole["mean"] and resumed["interval95"] == whole["interval95"]
    assert resumed["run_id"] == run["id"]
    assert main([*argv, "--runs", store, "--resume", run["id"]]) == 2  # finished: one-line usage error
    assert "already finished" in capsys.readouterr().err


def test_a_postgresql_run_store_never_shows_its_password(pg_server):
    from pg_server import PASSWORD

    db = pg_server.new_database().rsplit("/", 1)[1]
    with pytest.raises(RunStoreError, match="password authentication failed") as err:
        RunStore(pg_server.url(db, user="secret", password=PASSWORD + "x"))
    assert PASSWORD not in str(err.value)
    store = RunStore(pg_server.url(db, password=PASSWORD))  # trust user: the password is ignored
    assert PASSWORD not in repr(store) and store.runs() == []
