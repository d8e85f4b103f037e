"""One command line (issue #40 item 3): plain-text ``--help`` for every command, one table of exit
statuses, ``dpinfer infer``, one ``--model`` loader, each warning shown once in the command's terms."""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings

import numpy as np
import pytest

from dpinfer.cli import build_parser, main
from dpinfer.cli.common import EXIT_STATUSES, plain_text, run_command
from dpinfer.privacy import Ledger


def _parsers(parser=None, path=()):
    """Every (command path, parser) of the ``dpinfer`` parser tree, the root's included."""
    parser = parser or build_parser()
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


PATHS = [path for path, _ in _parsers()]


def _run(argv, capsys):
    """``dpinfer ARGV`` in this process: (exit status, stdout, stderr); argparse's exits included."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


# ---- --help: plain text in one style ---------------------------------------------------------
def test_every_help_is_plain_text_with_each_default_once(capsys):
    assert len(PATHS) > 30  # the whole tree: commands and their subcommands
    for path in PATHS:
        code, out, _ = _run([*path, "--help"], capsys)
        assert code == 0 and out.startswith("usage: dpinfer"), path
        for markup in ("``", ":func:", ":class:", ":mod:", ":meth:", "::\n", "(default: None)",
                       "(default: )"):
            assert markup not in out, (path, markup)
        flat = " ".join(out.split())
        assert not re.search(r"\(default:[^()]*\) \(default:", flat), path
    for path, parser in _parsers():
        formatter = parser._get_formatter()
        for action in parser._actions:
            if not action.help or action.help is argparse.SUPPRESS:
                continue
            text = formatter._expand_help(action)
            assert text.count("(default:") <= 1, (path, action.dest, text)
            if "(default:" in text and "(default:" not in action.help:  # added by --help
                assert "default" not in action.help.lower(), (path, action.dest, text)  # said once


def test_plain_text_strips_rest():
    doc = """``dpinfer glm``: see :func:`dpinfer.infer` and :class:`~dpinfer.data.Schema`.

    Example::

        dpinfer glm --out fit.npz

    Then ::

        more
    """
    text = plain_text(doc)
    assert text.startswith("dpinfer glm: see dpinfer.infer and Schema.")
    assert "Example:\n" in text and "Then\n" in text and "``" not in text and "::" not in text


def test_exit_statuses_are_in_the_top_help(capsys):
    _, out, _ = _run(["--help"], capsys)
    for code, _meaning in EXIT_STATUSES:
        assert re.search(rf"^\s+{code}\s+\S", out, re.M), code


# ---- exit statuses ---------------------------------------------------------------------------
def test_a_bad_flag_exits_2_for_every_command(capsys):
    for path in PATHS:
        code, _, err = _run([*path, "--no-such-flag-w40"], capsys)
        assert code == 2 and "Traceback" not in err, path


@pytest.fixture()
def tiny(tmp_path):
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, 30), rng.integers(0, 2, 30)
    csv = tmp_path / "d.csv"
    csv.write_text("x,y\n" + "".join(f"{a:.3f},{b}\n" for a, b in zip(x, y, strict=True)))
    return csv


def test_data_errors_exit_2_without_traceback(tmp_path, tiny, capsys):
    gone, out = str(tmp_path / "missing.csv"), str(tmp_path / "o" / "out.json")
    release = ["--epsilon", "1", "--no-ledger", "--out", out]
    cases = {
        "glm missing file": ["glm", "--data", gone, "--target", "y", "--bounds", "0:1", "--fallback", "none",
                             *release],
        "glm missing column": ["glm", "--data", str(tiny), "--target", "nope", "--bounds", "0:1",
                               "--fallback", "none", *release],
        "dpvi missing file": ["dpvi", "--data", gone, "--target", "y", *release],
        "dpvi missing column": ["dpvi", "--data", str(tiny), "--target", "nope", *release],
        "release missing file": ["release", "--model", "gaussian-mean", "--data", gone, *release],
        "release missing column": ["release", "--model", "gaussian-mean", "--data", str(tiny), "--columns",
                                   "zz", *release],
        "abcdp missing file": ["abcdp", "--observed", gone, "--simulations", gone, "-c", "1",
                               "--epsilon-abc", "0.5", *release],
        "synthesize missing file": ["synthesize", "--release", gone, "--n", "5", "--out", out],
        "schema check missing file": ["schema", "check", "--schema", gone],
        "budget init missing file": ["budget", "init", "--ledger", str(tmp_path / "l.db"), "--dataset", "d",
                                     "--epsilon", "1", "--data", gone],
        "check missing module": ["check", "--model", "no_such_module_w40:f"],
        "runs missing store": ["runs", "list", "--runs", str(tmp_path / "none.db")],
    }
    for command in ("smc-abc", "exact-posterior", "sppe", "sple", "infer"):
        cases[f"{command} missing file"] = [command, "--model", "gaussian-mean", "--observed", gone,
                                            "--epsilon", "1"]
    for name, argv in cases.items():
        code, _, err = _run(argv, capsys)
        assert code == 2, (name, err)
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert "Traceback" not in err and lines[-1].startswith("dpinfer: error:"), (name, err)
    assert not (tmp_path / "l.db").exists() and not (tmp_path / "o").exists()


def test_an_exhausted_budget_exits_1_and_nothing_is_charged(tmp_path, tiny, capsys):
    ledger = str(tmp_path / "l.db")
    assert main(["budget", "init", "--ledger", ledger, "--dataset", "d", "--epsilon", "0.01",
                 "--delta", "1e-5", "--data", str(tiny)]) == 0
    charged = ["--ledger", ledger, "--dataset", "d", "--out", str(tmp_path / "out.json")]
    cases = {
        "release": ["release", "--model", "gaussian-mean", "--data", str(tiny), "--columns", "x",
                    "--model-args", '{"clamp": [0, 1]}', "--epsilon", "1", *charged],
        "glm": ["glm", "--data", str(tiny), "--target", "y", "--bounds", "0:1", "--epsilon", "1",
                "--fallback", "none", "--proposals", "200", *charged],
        # a fixed sigma (its charge, like any, exceeds the 0.01 budget): the refusal is the check,
        # not the calibration's PLD search (most of this test's time with --epsilon)
        "dpvi": ["dpvi", "--data", str(tiny), "--target", "y", "--noise-multiplier", "2", "--steps", "5",
                 "--no-progress", *charged],
    }
    for name, argv in cases.items():
        code, _, err = _run(argv, capsys)
        assert code == 1, (name, err)
        assert "Traceback" not in err and "dpinfer: error:" in err, (name, err)
    assert Ledger(ledger).spent("d") == 0 and not (tmp_path / "out.json").exists()


def test_ctrl_c_exits_130_in_one_line(capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    assert run_command(interrupted, argparse.Namespace()) == 130
    err = capsys.readouterr().err
    assert err.strip() == "dpinfer: interrupted (Ctrl-C)." and "Traceback" not in err


# ---- dpinfer infer ---------------------------------------------------------------------------
def test_infer_on_a_released_statistic_says_what_it_chose_and_saves(tmp_path, capsys):
    from dpinfer.inference.posterior import InferenceResult

    x = np.random.default_rng(1).normal(0.4, 1.0, 60)
    data = tmp_path / "x.csv"
    data.write_text("x\n" + "".join(f"{v:.4f}\n" for v in x))
    rel = tmp_path / "rel.json"
    assert main(["release", "--model", "gaussian-mean", "--data", str(data), "--epsilon", "1", "--model-args",
                 '{"clamp": [-2, 2]}', "--no-ledger", "--out", str(rel)]) == 0
    capsys.readouterr()
    post = tmp_path / "post.dpinfer"
    code, out, err = _run(["infer", "--model", "gaussian-mean", "--observed", str(rel), "--seed", "1",
                           "--method-args", '{"n_particles": 300}', "--out", str(post)], capsys)
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith("method: exact (chosen: ") and "expected" in first and "budget" in first  # why
    assert f"saved to {post}" in out
    saved = InferenceResult.load(post)
    observed = json.loads(rel.read_text())["observed"][0]
    assert saved.method == "exact" and abs(float(saved.mean()[0]) - observed) < 1


# ---- one --model loader ----------------------------------------------------------------------
def test_every_model_command_imports_a_factory_from_the_current_folder(tmp_path, tiny, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    (tmp_path / "mymodels_w40.py").write_text("def factory(n=10):\n    raise ValueError('reached w40')\n")
    monkeypatch.delitem(sys.modules, "mymodels_w40", raising=False)
    spec = "mymodels_w40:factory"
    commands = [["check", "--model", spec]]
    commands += [[c, "--model", spec, "--observed", "[0.1]", "--epsilon", "1"]
                 for c in ("smc-abc", "exact-posterior", "sppe", "sple", "infer")]
    commands[1:] = [[*c[:4], str(tmp_path / "obs.json"), *c[5:]] for c in commands[1:]]
    (tmp_path / "obs.json").write_text("[0.1]")
    commands.append(["release", "--model", spec, "--data", str(tiny), "--columns", "x", "--epsilon", "1",
                     "--no-ledger", "--out", str(tmp_path / "r.json")])
    for argv in commands:
        code, _, err = _run(argv, capsys)
        assert code == 2 and "calling the factory raised ValueError: reached w40" in err, (argv[0], err)
    sys.modules.pop("mymodels_w40", None)


# ---- each warning once, in the command's terms -----------------------------------------------
class _HintedWarning(UserWarning):
    cli_hint = ("post.widen(level=...)", "--widen LEVEL")


def test_run_command_shows_each_warning_once_with_its_cli_hint(capsys):
    def warns(args):
        for _ in range(2):  # the same finding from two places, twice each
            warnings.warn("noisy: call post.widen(level=...)", _HintedWarning, stacklevel=1)
            warnings.warn("noisy: call post.widen(level=...)", _HintedWarning, stacklevel=2)
        warnings.warn("unreliable; resample: post.resample(sampler=GLMSamplerOptions(method='hmc'))",
                      UserWarning, stacklevel=1)
        return 0

    with warnings.catch_warnings():  # shown as on the real command line
        warnings.simplefilter("always")
        warnings.showwarning = lambda m, c, f, n, file=None, line=None: sys.stderr.write(
            warnings.formatwarning(m, c, f, n, line)
        )
        assert run_command(warns, argparse.Namespace()) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "dpinfer: warning: _HintedWarning: noisy: call --widen LEVEL"
    assert len(err) == 2 and "--fallback hmc" in err[1] and "post.resample" not in err[1].split(" or ")[0]


def test_a_command_prints_its_warning_once(tmp_path, capsys):
    far = tmp_path / "far.json"
    far.write_text("[3.0]")
    code, _, err = _run(["exact-posterior", "--model", "gaussian-mean", "--observed", str(far),
                         "--epsilon", "1", "--model-args", '{"n": 50}', "--theta", "1000", "--inner", "5",
                         "--pilot-theta", "500", "--pilot-inner", "5"], capsys)
    assert code in (0, 3), err
    assert sum("prior-data conflict" in ln for ln in err.splitlines()) == 1, err
    assert [ln for ln in err.splitlines() if "conflict" in ln][0].startswith("dpinfer: warning: ")


def _parses_are_independent(parser, argv, option="allowance") -> bool:
    """Two parses of ``argv`` plus one value of the repeatable ``option`` each hold only their own
    value, and a parse without it sees the default again: parsing left no state in ``parser``."""
    first = parser.parse_args([*argv, f"--{option}", "d=1"])
    second = parser.parse_args([*argv, f"--{option}", "f=3"])
    return (getattr(first, option) == ["d=1"] and getattr(second, option) == ["f=3"]
            and getattr(parser.parse_args(argv), option) is None)


def test_main_reuses_one_parser_and_parsing_leaves_no_state_in_it():
    """``main`` builds the parser once per process (``dpinfer.cli._parser``), so parsing must not
    change it: the repeatable ``--allowance`` holds only the values of its own parse. Known-broken
    variant: an action that keeps the values in the parser (its default) is caught."""
    from dpinfer.cli import _parser

    assert _parser() is _parser()
    assert _parses_are_independent(_parser(), ["remote", "--url", "https://h", "add-analyst", "--name", "a"])

    class KeepsValues(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            self.default = [*(self.default or []), values]
            setattr(namespace, self.dest, self.default)

    broken = argparse.ArgumentParser()
    broken.add_argument("--allowance", action=KeepsValues)
    assert not _parses_are_independent(broken, [])
