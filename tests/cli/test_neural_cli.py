"""``dpinfer sppe`` / ``dpinfer sple`` command lines and the SPPE demo section (quick mode)."""

from __future__ import annotations

import json

import pytest

from dpinfer.cli import main
from dpinfer.inference.neural import SPLEPosterior, SPPEPosterior

FAST = [
    "--rounds",
    "1",
    "--simulations",
    "100",
    "--rqmc-points",
    "2",
    "--transforms",
    "2",
    "--hidden",
    "16",
    "--max-epochs",
    "5",
    "--draws",
    "200",
    "--no-progress",
]


@pytest.mark.parametrize("command, klass", [("sppe", SPPEPosterior), ("sple", SPLEPosterior)])
def test_cli_json_and_save(tmp_path, capsys, command, klass):
    obs = tmp_path / "obs.json"
    obs.write_text(json.dumps({"observed": [0.4], "epsilon": 1.0, "model_args": {"n": 30}}))
    out = tmp_path / "post.pt"
    extra = ["--warmup", "20"] if command == "sple" else []
    rc = main(
        [
            command,
            "--model",
            "gaussian-mean",
            "--observed",
            str(obs),
            "--json",
            "--out",
            str(out),
            *FAST,
            *extra,
        ]
    )
    assert rc == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["method"] == command and summary["n_simulations"] == 100
    assert summary["privacy_of_release"]["epsilon"] == pytest.approx(1.0)
    assert len(summary["interval95"]) == 1
    post = klass.load(out)
    assert post.sample(10, seed=0).shape == (10, 1)


def test_cli_progress_per_round_and_bad_input(tmp_path, capsys):
    obs = tmp_path / "obs.json"
    obs.write_text(json.dumps([0.4]))
    assert main(["sppe", "--model", "gaussian-mean", "--epsilon", "1", "--observed", str(obs), *FAST]) == 0
    err = capsys.readouterr().err
    assert "round 1 of 1: 100 simulations so far, elapsed" in err and "ETA 0 s" in err
    rc = main(
        [
            "sppe",
            "--model",
            "gaussian-mean",
            "--epsilon",
            "1",
            "--observed",
            str(obs),
            *FAST,
            "--rqmc-points",
            "3",
        ]
    )
    assert rc != 0 and "power of two" in capsys.readouterr().err
    obs.write_text(json.dumps([0.4, 0.5]))
    rc = main(["sple", "--model", "gaussian-mean", "--epsilon", "1", "--observed", str(obs), *FAST])
    assert rc != 0 and "length 1" in capsys.readouterr().err


def test_demo_section_quick(tmp_path):
    import numpy as np

    from dpinfer.demo import DemoContext
    from dpinfer.demo.neural import section_sppe
    from dpinfer.privacy import Ledger
    from dpinfer.report import DemoReport

    ledger = Ledger(tmp_path / "ledger.db", create=True)
    ctx = DemoContext(tmp_path, ledger, 2026, True, DemoReport(tmp_path))
    section_sppe(ctx)
    assert ledger.spent("mean-demo") <= 0.5
    assert all(h["status"] == "released" for h in ledger.history("mean-demo"))
    quantities = [r.quantity for r in ctx.report.rows]
    assert "theta mean (95% CI)" in quantities
    assert (tmp_path / "sppe_mean_eps05.png").exists()
    assert np.isfinite(float(ctx.report.rows[-1].value))


def test_sppe_help_shows_defaults_once(capsys):
    with pytest.raises(SystemExit):
        main(["sppe", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: auto)" in out and "(default: 0.1)" in out and "(default 10)" not in out
    assert "round, simulations, elapsed, ETA" in out


@pytest.mark.parametrize("proposal", ["apt", "truncated"])
def test_cli_proposal_reaches_the_saved_posterior(tmp_path, capsys, proposal):
    obs = tmp_path / "obs.json"
    obs.write_text(json.dumps({"observed": [0.4], "epsilon": 1.0, "model_args": {"n": 30}}))
    out = tmp_path / "post.pt"
    fast = [a if a != "1" else "2" for a in FAST[:2]] + FAST[2:]  # two rounds
    rc = main(["sppe", "--model", "gaussian-mean", "--observed", str(obs), "--json", "--out", str(out),
               "--proposal", proposal, *fast])  # fmt: skip
    assert rc == 0
    assert SPPEPosterior.load(out).settings["proposal"] == proposal
    with pytest.raises(SystemExit) as exc:
        main(["sppe", "--model", "gaussian-mean", "--observed", str(obs), "--proposal", "x", *FAST])
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err
