"""``dpinfer smc-abc`` command line."""

from __future__ import annotations

import json

import pytest

from dpinfer.abc.smc_result import SMCABCResult
from dpinfer.cli import main


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
        == 1
    )
    assert "length 1" in capsys.readouterr().err
    assert (
        main(
            ["smc-abc", "--model", "linreg", "--observed", str(obs), "--epsilon", "0", "--backend", "serial"]
        )
        == 1
    )
    assert (
        main(
            ["smc-abc", "--model", "linreg", "--observed", "builtin", "--epsilon", "3", "--backend", "serial"]
        )
        == 1
    )
    assert "available" in capsys.readouterr().err
    assert (
        main(["smc-abc", "--model", "linreg", "--observed", str(tmp_path / "missing.json"), "--epsilon", "1"])
        == 1
    )
    obs.write_text(json.dumps({"observed": [0.5]}))
    assert main(["smc-abc", "--model", "gaussian-mean", "--observed", str(obs), "--backend", "serial"]) == 1
    assert "epsilon" in capsys.readouterr().err
