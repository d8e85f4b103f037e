"""The command line shows each warning as one ``dpinfer: warning: Category: message`` line, never
Python's ``path/to/dpinfer/module.py:LINE: Category: message`` and the offending source line."""

from __future__ import annotations

import argparse
import subprocess
import sys
import warnings

import pytest

from dpinfer.cli.common import run_command
from dpinfer.errors import ConvergenceWarning


def _warn_twice(args: argparse.Namespace) -> int:
    warnings.warn("first line\n  second line", ConvergenceWarning, stacklevel=2)
    warnings.warn("a plain one", RuntimeWarning, stacklevel=2)
    return 0


def test_run_command_shows_warnings_on_one_line(capsys):
    with warnings.catch_warnings():  # shown as Python shows them to a user (pytest records them)
        warnings.simplefilter("always")
        warnings.showwarning = lambda m, c, f, n, file=None, line=None: sys.stderr.write(
            warnings.formatwarning(m, c, f, n, line)
        )
        assert run_command(_warn_twice, argparse.Namespace()) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "dpinfer: warning: ConvergenceWarning: first line second line",
        "dpinfer: warning: RuntimeWarning: a plain one",
    ]
    # restored afterwards: library warnings outside a command keep Python's format
    assert warnings.formatwarning("m", UserWarning, "f.py", 3).startswith("f.py:3: UserWarning: m")


@pytest.mark.slow  # ~11 s of SPPE training; the one-warning rule is tested on cheap commands too
def test_sppe_command_warning_is_one_line(tmp_path):
    """A real command whose fit warns (rounds='auto' with a budget too small for its tolerance)."""
    obs = tmp_path / "obs.json"
    obs.write_text("[0.6]")
    cmd = [sys.executable, "-m", "dpinfer", "sppe", "--model", "gaussian-mean", "--observed", str(obs),
           "--epsilon", "0.5", "--budget", "120", "--simulations", "60", "--stop-tolerance", "1e-6",
           "--transforms", "1", "--hidden", "8", "--rqmc-points", "2", "--max-epochs", "3",
           "--no-progress", "--draws", "50"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = [x for x in out.stderr.splitlines() if "Warning" in x]
    assert any(x.startswith("dpinfer: warning: ConvergenceWarning: ") for x in lines), out.stderr
    assert not any(".py:" in x for x in lines) and "return self._run" not in out.stderr
    # in the command's flags: the API's simulations= is the budget, --simulations is per round
    budget = [x for x in lines if "spent its budget" in x]
    assert budget and "raise --budget" in budget[0] and "--rounds auto" in budget[0]
    assert "simulations=" not in budget[0] and "--stop-tolerance 1e-06" in budget[0]


def test_neural_errors_name_the_flags(capsys):
    from dpinfer.cli import main

    rc = main(["sppe", "--model", "sir", "--observed", "builtin", "--epsilon", "10",
               "--budget", "500", "--simulations", "600"])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err == "dpinfer: error: --simulations 600 exceeds the simulation budget --budget 500."


def test_rephrase_leaves_longer_names_alone():
    from dpinfer.cli import neural
    from dpinfer.cli.common import rephrase

    msg = "max_simulations=10, n_simulations=5, x.simulations=3; raise simulations=..."
    text = rephrase(msg, neural.HINTS)
    assert text == "max_simulations=10, n_simulations=5, x.simulations=3; raise --budget ..."


def test_smc_and_dpvi_messages_in_their_flags():
    from dpinfer.cli import dpvi, smc
    from dpinfer.cli.common import rephrase
    from dpinfer.inference.smc.convergence import stop_findings

    (finding,) = stop_findings("max_simulations reached", complete=False, adaptive=True)
    text = rephrase(finding.message, smc.HINTS)
    assert "Raise --max-simulations" in text and "raise --max-populations" in text
    assert "`dpinfer exact-posterior`" in text and "max_simulations" not in text
    msg = ("Raise training=TrainingOptions(steps=...) (privately this re-calibrates the noise), scale "
           "the features (bounds=...) or raise the learning rate; a larger sampling_rate or fewer steps.")
    text = rephrase(msg, dpvi.HINTS)
    assert text.startswith("Raise --steps (privately") and "raise --lr" in text and "--sampling-rate" in text
    # the phrases are the library's own (a hint that matches nothing would silently do nothing)
    import inspect

    from dpinfer.release.dpvi import diagnostics

    source = inspect.getsource(diagnostics)
    assert all(api in source for api, _ in dpvi.HINTS)


def test_smc_abc_adaptive_options_and_the_shrinking_advice():
    """The advice of SMC-ABC's 'still shrinking' and budget warnings names flags the command has."""
    import inspect

    from dpinfer.cli import build_parser, smc
    from dpinfer.cli.common import rephrase
    from dpinfer.inference.smc import convergence

    ns = build_parser().parse_args(["smc-abc", "--model", "sir", "--observed", "builtin", "--epsilon", "10",
                                    "--patience", "6", "--min-acceptance-rate", "0.001"])  # fmt: skip
    sched = smc._schedule(ns)
    assert (sched.patience, sched.min_acceptance_rate) == (6, 0.001)
    default = smc._schedule(build_parser().parse_args(["smc-abc", "--model", "sir", "--observed", "builtin"]))
    from dpinfer.inference.smc.adaptive_schedule import AdaptiveSchedule

    assert default == AdaptiveSchedule()  # the flags' defaults are the library's
    source = inspect.getsource(convergence)
    assert all(api in source for api, _ in smc.HINTS)
    text = rephrase(
        "Run more populations: with schedule='adaptive' (the default), schedule=AdaptiveSchedule(patience=6) "
        "(dpinfer.inference.smc.adaptive_schedule) waits 6 populations; lower "
        "AdaptiveSchedule(min_acceptance_rate=...) or raise max_populations; patience and max_populations "
        "must be >= 1.", smc.HINTS)  # fmt: skip
    assert text == (
        "Run more populations: with --schedule adaptive (the default), --patience 6 waits 6 populations; "
        "lower --min-acceptance-rate or raise --max-populations; --patience and --max-populations must be "
        ">= 1."
    )
