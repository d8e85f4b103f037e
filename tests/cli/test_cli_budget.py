"""The command line: --version and the budget commands."""

import json
import re

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
                "--unbound",
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
    assert main(["budget", "init", "--ledger", path, "--dataset", "x", "--epsilon", "-1", "--unbound"]) == 2
    assert "positive" in capsys.readouterr().err
    assert not (tmp_path / "b.db").exists()  # nothing created for an invalid budget
    Ledger(path, create=True)
    assert main(["budget", "history", "--ledger", path, "--dataset", "nope"]) == 2
    assert "not registered" in capsys.readouterr().err
    assert (
        main(
            ["budget", "init", "--ledger", path, "--dataset", "x", "--epsilon", "1", "--accountant", "bogus",
             "--unbound"]
        )
        == 2
    )
    assert "unknown accountant" in capsys.readouterr().err


# ---- defaults that fit what is charged, and what to do when they do not ------------------------
def _records(path, n=200, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = (rng.random(n) < 0.5).astype(int)
    path.write_text("a,b,label\n" + "".join(f"{a:.5f},{b:.5f},{t}\n" for (a, b), t in zip(X, y, strict=True)))
    return path


def _dpvi(data, ledger, dataset, out):
    return main(["dpvi", "--data", str(data), "--target", "label", "--epsilon", "1", "--delta", "1e-6",
                 "--steps", "20", "--sampling-rate", "0.2", "--no-progress", "--out", str(out),
                 "--ledger", str(ledger), "--dataset", dataset])


def test_budget_init_defaults_account_dpvi_and_laplace(tmp_path, capsys):
    ledger = tmp_path / "b.db"
    data = _records(tmp_path / "r.csv")
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "r", "--epsilon", "3",
                 "--data", str(data)]) == 0
    b = Ledger(ledger).budget("r")
    assert (b.accountant, b.delta) == ("pld", 1e-6)
    assert _dpvi(data, ledger, "r", tmp_path / "fit.json") == 0
    with Ledger(ledger).charge("r", LaplaceEvent(0.5)):
        pass
    assert len(Ledger(ledger).history("r")) == 2


def test_pure_budget_charged_with_dpvi_says_what_to_do(tmp_path, capsys):
    ledger = tmp_path / "b.db"
    data = _records(tmp_path / "r.csv")
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "r", "--epsilon", "3",
                 "--delta", "0", "--accountant", "pure", "--data", str(data)]) == 0
    capsys.readouterr()
    # refused (exit 1): the budget's accountant cannot account it
    assert _dpvi(data, ledger, "r", tmp_path / "fit.json") == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "Nothing was charged" in err and "pure" in err
    # never advice that splits one data set across budgets or ledgers (issue 35, point 7)
    assert "NEW" not in err and "new ledger" not in err and "--dataset" not in err
    assert Ledger(ledger).history("r") == []  # nothing charged
    assert not (tmp_path / "fit.json").exists()


def test_pld_with_delta_zero_is_refused_at_init(tmp_path, capsys):
    ledger = tmp_path / "b.db"
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "r", "--epsilon", "1",
                 "--delta", "0", "--accountant", "pld", "--unbound"]) == 2
    assert "delta > 0" in capsys.readouterr().err
    assert not ledger.exists()


# ---- --help: every option explained, with its default ----------------------------------------
MY_COMMANDS = ("budget init", "budget show", "budget history", "simulate", "abcdp", "dpvi", "smc-abc",
               "exact-posterior", "sppe", "sple", "data path", "synthesize")


def _subparser(parser, words):
    import argparse

    for word in words.split():
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


@pytest.mark.parametrize("command", MY_COMMANDS)
def test_every_option_has_help_and_its_default(command):
    import argparse

    from dpinfer.cli import build_parser
    from dpinfer.cli.common import shows_default

    parser = _subparser(build_parser(), command)
    text = parser.format_help()
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        assert action.help, f"{command} {action.option_strings or action.dest} has no help"
        if shows_default(action, action.help) or (action.option_strings and "default" in action.help.lower()
                                                  and action.default not in (None, False)):
            # a meaningful default is stated once: by --help's "(default: X)" or by the help itself
            shown = f"(default: {action.default})" in " ".join(text.split())
            assert shown != ("default" in action.help.lower()), (command, action.dest)


def test_budget_init_help_explains_the_accountant(capsys):
    with pytest.raises(SystemExit):
        main(["budget", "init", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "budgets cannot be changed later" in out and "pld (default)" in out
    assert "(default: 1e-6, or 0 with --accountant pure" in out


# ---- input files: blank lines and missing values are refused, never dropped --------------------
@pytest.mark.parametrize(
    "body,match",
    [("a,b,label\n1,2,0\n\n3,4,1\n", "line 3 is blank"),
     ("a,b,label\n1,2,0\n3,,1\n", "line 3, column 'b': missing value"),
     ("a,b,label\n1,2,0\n3,x,1\n", "line 3, column 'b': not a number")],
)
def test_dpvi_csv_errors_name_file_and_line(tmp_path, capsys, body, match):
    data = tmp_path / "bad.csv"
    data.write_text(body)
    assert main(["dpvi", "--data", str(data), "--target", "label", "--epsilon", "1", "--no-ledger",
                 "--steps", "5", "--no-progress", "--out", str(tmp_path / "f.json")]) == 2
    err = capsys.readouterr().err
    assert match in err and "bad.csv" in err and "'x'" not in err  # a record's cell is never shown


def test_dpvi_without_delta_uses_the_budgets_delta(tmp_path, capsys):
    ledger = tmp_path / "b.db"
    data = _records(tmp_path / "r.csv")
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "r", "--epsilon", "1",
                 "--unbound"]) == 0
    assert main(["dpvi", "--data", str(data), "--target", "label", "--epsilon", "1", "--steps", "20",
                 "--sampling-rate", "0.2", "--no-progress", "--out", str(tmp_path / "f.json"),
                 "--ledger", str(ledger), "--dataset", "r"]) == 0
    # sigma is calibrated to rtol 1e-3 from the conservative side: (0.9995, 1e-06)-DP, say
    assert re.search(r"\((0\.99\d*|1), 1e-06\)-DP", capsys.readouterr().out)
    assert 0.999 <= Ledger(ledger).spent("r") <= 1.0
