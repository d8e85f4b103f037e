"""The command line: --version and the budget commands."""

import json

import pytest

from dpinfer import __version__
from dpinfer.cli import main
from dpinfer.privacy import LaplaceEvent, Ledger


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_budget_init_show_history(tmp_path, capsys):
    path = str(tmp_path / "b.db")
    assert (
        main(
            [
                "budget",
                "init",
                "--ledger",
                path,
                "--dataset",
                "patients",
                "--epsilon",
                "2",
                "--delta",
                "1e-6",
                "--accountant",
                "pld",
            ]
        )
        == 0
    )
    assert "registered 'patients'" in capsys.readouterr().out
    with Ledger(path).charge("patients", LaplaceEvent(0.5), label="mean age"):
        pass
    assert main(["budget", "show", "--ledger", path, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["dataset"] == "patients"
    assert rows[0]["epsilon_spent"] == pytest.approx(0.5, abs=1e-3)
    assert rows[0]["epsilon_remaining"] == pytest.approx(1.5, abs=1e-3)
    assert main(["budget", "show", "--ledger", path]) == 0
    assert "patients" in capsys.readouterr().out
    assert main(["budget", "history", "--ledger", path, "--dataset", "patients"]) == 0
    out = capsys.readouterr().out
    assert "mean age" in out and "released" in out
    assert main(["budget", "history", "--ledger", path, "--dataset", "patients", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["event"]["type"] == "LaplaceEvent"


def test_budget_errors_are_clear(tmp_path, capsys):
    path = str(tmp_path / "b.db")
    assert main(["budget", "history", "--ledger", path, "--dataset", "nope"]) == 2
    assert "no ledger at" in capsys.readouterr().err
    assert main(["budget", "init", "--ledger", path, "--dataset", "x", "--epsilon", "-1"]) == 1
    assert "positive" in capsys.readouterr().err
    assert not (tmp_path / "b.db").exists()  # nothing created for an invalid budget
    Ledger(path, create=True)
    assert main(["budget", "history", "--ledger", path, "--dataset", "nope"]) == 1
    assert "not registered" in capsys.readouterr().err
    assert (
        main(
            ["budget", "init", "--ledger", path, "--dataset", "x", "--epsilon", "1", "--accountant", "bogus"]
        )
        == 1
    )
    assert "unknown accountant" in capsys.readouterr().err
