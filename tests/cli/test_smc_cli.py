"""``dpinfer smc-abc`` command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpinfer.cli import main
from dpinfer.inference.smc.result import SMCABCResult


def test_smc_abc_cli_json_and_save(tmp_path, capsys):
    obs = tmp_path / "obs.json"
    obs.write_text(json.dumps({"observed": [0.7], "epsilon": 1.0, "model_args": {"n": 30}}))
    out = tmp_path / "res.npz"
    rc = main(
        [
            "smc-abc",
            "--model",
            "gaussian-mean",
            "--observed",
            str(obs),
            "--particles",
            "200",
            "--schedule",
            "1,0.3",
            "--backend",
            "serial",
            "--batch-size",
            "200",
            "--json",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["populations"] == 2 and summary["privacy_of_release"]["epsilon"] == pytest.approx(1.0)
    assert SMCABCResult.load(out).particles.shape == (200, 1)


def test_smc_abc_cli_sir_builtin_reports_r0(capsys):
    rc = main(
        [
            "smc-abc",
            "--model",
            "sir",
            "--observed",
            "builtin",
            "--epsilon",
            "10",
            "--model-args",
            '{"population": 20000}',
            "--particles",
            "50",
            "--schedule",
            "1,0.5",
            "--backend",
            "serial",
            "--batch-size",
            "50",
            "--json",
        ]
    )
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert "R0_mean" in summary and summary["R0_interval95"][0] < summary["R0_interval95"][1]


def test_smc_abc_cli_errors(tmp_path, capsys):
    obs = tmp_path / "obs.json"
    obs.write_text(json.dumps([0.1, 0.2]))
    assert (
        main(
            [
                "smc-abc",
                "--model",
                "gaussian-mean",
                "--observed",
                str(obs),
                "--epsilon",
                "1",
                "--backend",
                "serial",
            ]
        )
        == 2
    )
    assert "length 1" in capsys.readouterr().err
    assert (
        main(
            ["smc-abc", "--model", "linreg", "--observed", str(obs), "--epsilon", "0", "--backend", "serial"]
        )
        == 2
    )
    assert (
        main(
            ["smc-abc", "--model", "linreg", "--observed", "builtin", "--epsilon", "3", "--backend", "serial"]
        )
        == 2
    )
    assert "available" in capsys.readouterr().err
    assert (
        main(["smc-abc", "--model", "linreg", "--observed", str(tmp_path / "missing.json"), "--epsilon", "1"])
        == 2
    )
    obs.write_text(json.dumps({"observed": [0.5]}))
    assert main(["smc-abc", "--model", "gaussian-mean", "--observed", str(obs), "--backend", "serial"]) == 2
    assert "epsilon" in capsys.readouterr().err


# ---- --model-args, the observed file, --help and progress --------------------------------------
@pytest.mark.parametrize("command", ["smc-abc", "exact-posterior", "sppe", "sple"])
def test_wrong_model_args_key_is_one_line(command, capsys):
    code = main([command, "--model", "sir", "--observed", "builtin", "--epsilon", "10",
                 "--model-args", '{"pop": 10000}'])
    assert code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "'pop'" in err and "population" in err


def test_model_args_not_json_is_one_line(capsys):
    assert main(["smc-abc", "--model", "sir", "--observed", "builtin", "--epsilon", "10",
                 "--model-args", "population=1"]) == 2
    err = capsys.readouterr().err
    assert "--model-args is not JSON" in err and len(err.strip().splitlines()) == 1


def test_non_json_observed_file_is_named(tmp_path, capsys):
    bad = tmp_path / "obs.csv"
    bad.write_text("0.1,0.2\n")
    assert main(["smc-abc", "--model", "gaussian-mean", "--observed", str(bad), "--epsilon", "1"]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "not JSON" in err and "line 1" in err


def test_help_lists_models_model_args_and_observed_format(capsys):
    from dpinfer.models.shipped.registry import MODELS, model_args

    with pytest.raises(SystemExit):
        main(["smc-abc", "--help"])
    out = " ".join(capsys.readouterr().out.split()).replace("- ", "-")
    for name in MODELS:
        assert f"{name}:" in out
    for key in model_args("sir"):
        assert key in out
    assert '{"observed": [...]' in out and "(default: 2000)" in out


def test_population_reporter_says_k_of_k_simulations_elapsed_eta():
    import argparse
    import io
    from types import SimpleNamespace

    from dpinfer.cli.smc import PopulationReporter, max_populations

    assert max_populations(argparse.Namespace(schedule="paper")) == 6
    assert max_populations(argparse.Namespace(schedule="1,0.5,0.2")) == 3
    assert max_populations(argparse.Namespace(schedule="adaptive", max_populations=4)) == 4
    buf = io.StringIO()
    rep = PopulationReporter(3, file=buf)
    for t in range(3):
        rep(SimpleNamespace(t=t, tolerance=1.0, n_simulations=100, n_simulations_run=120,
                            n_simulations_total=100 * (t + 1), acceptance_rate=0.5, ess=80.0, wall_time=2.0))
    lines = buf.getvalue().splitlines()
    # the simulations the result depends on (the 20 discarded speculative ones per population are not)
    assert lines[0].startswith("population 1 of 3") and "100 simulations (100 so far)" in lines[0]
    assert "elapsed" in lines[0] and "ETA >= 4 s" in lines[0]
    assert "(300 so far)" in lines[2] and "last population" in lines[2]


def test_population_counters_add_up_to_the_results_total():
    """Issue 26: "300 simulations (1000 so far)" then 3660 in total after "6000 so far". A batch
    larger than a population leaves discarded speculative simulations; the per-population and
    cumulative counts must both be those of the result's total."""
    import io
    import re

    from dpinfer.cli.smc import PopulationReporter
    from dpinfer.inference import RunOptions, smc_abc
    from dpinfer.models.shipped.gaussian_mean import GaussianMean

    buf = io.StringIO()
    rep = PopulationReporter(4, file=buf)
    res = smc_abc(GaussianMean(n=30, epsilon=1.0), [0.4], n_particles=300, batch_size=1000, seed=0,
                  schedule=[1.0, 0.5, 0.3, 0.2], backend="serial", run=RunOptions(callback=rep))
    assert res.n_simulations_run > res.n_simulations  # the case of the issue: discarded batches
    per = [int(m) for m in re.findall(r"(\d+) simulations \(", buf.getvalue())]
    so_far = [int(m) for m in re.findall(r"\((\d+) so far\)", buf.getvalue())]
    assert per == [p.n_simulations for p in res.populations]
    assert so_far == list(np.cumsum(per)) and so_far[-1] == res.n_simulations
    assert [p.n_simulations_total for p in res.populations] == so_far


def test_short_sir_run_reports_populations(capsys):
    assert main(["smc-abc", "--model", "sir", "--observed", "builtin", "--epsilon", "10", "--model-args",
                 '{"population": 10000}', "--particles", "100", "--schedule", "adaptive",
                 "--max-populations", "2", "--backend", "serial", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "population 1 of 2" in err and "population 2 of 2" in err and "ETA" in err


def test_cli_defaults_are_the_librarys_scale_free_ones():
    """smc-abc's command-line defaults: the adaptive schedule (AdaptiveSchedule, no units) and the
    auto backend; the paper's schedule on request."""
    from dpinfer.cli import build_parser
    from dpinfer.cli.smc import _schedule
    from dpinfer.inference.smc.adaptive_schedule import AdaptiveSchedule

    argv = ["smc-abc", "--model", "sir", "--observed", "builtin", "--epsilon", "10"]
    args = build_parser().parse_args(argv)
    assert args.backend == "auto"
    assert isinstance(_schedule(args), AdaptiveSchedule)
    args.schedule = "paper"
    assert _schedule(args) == "paper"
