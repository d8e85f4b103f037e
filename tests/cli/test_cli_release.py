"""``dpinfer release``: the data owner's CLI step, end to end with the analyst's commands."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpinfer.cli import main
from dpinfer.privacy import Ledger


def _csv(path, values, header="x"):
    path.write_text(header + "\n" + "\n".join(values) + "\n")
    return path


@pytest.fixture()
def data(tmp_path):
    x = np.random.default_rng(0).normal(0.4, 1.0, 60)
    return _csv(tmp_path / "x.csv", [f"{v:.4f}" for v in x])


def _release(data, out, *extra):
    return main([
        "release", "--model", "gaussian-mean", "--data", str(data), "--epsilon", "1",
        "--model-args", '{"clamp": [-2, 2]}', "--out", str(out), *extra,
    ])


def test_release_then_analyse_from_the_command_line_alone(tmp_path, data, capsys):
    ledger = tmp_path / "b.db"
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "xs", "--epsilon", "2",
                 "--data", str(data)]) == 0
    out = tmp_path / "rel.json"
    assert _release(data, out, "--ledger", str(ledger), "--dataset", "xs") == 0
    doc = json.loads(out.read_text())
    assert doc["model"] == "gaussian-mean" and doc["model_args"]["n"] == 60
    assert doc["privacy"]["accounted"] is True and len(doc["observed"]) == 1
    assert [h["status"] for h in Ledger(ledger).history("xs")] == ["released"]
    res = tmp_path / "post.npz"
    assert main(["exact-posterior", "--model", "gaussian-mean", "--observed", str(out), "--theta", "2000",
                 "--inner", "5", "--out", str(res)]) == 0
    from dpinfer.diagnostics import load_result

    post = load_result(res)
    assert abs(float(post.mean()[0]) - doc["observed"][0]) < 1.0


@pytest.mark.parametrize(
    "rows,match",
    [
        (["0.1", "", "0.3"], "line 3 is blank"),
        (["0.1", " ", "0.3"], "line 3 is blank"),
        (["0.1", "abc", "0.3"], "not a number"),
    ],
)
def test_bad_files_are_refused_with_file_line_and_reason(tmp_path, rows, match, capsys):
    bad = _csv(tmp_path / "bad.csv", rows)
    ledger = tmp_path / "b.db"
    Ledger.create(ledger).register("xs", 2.0)
    assert _release(bad, tmp_path / "r.json", "--ledger", str(ledger), "--dataset", "xs") == 2
    err = capsys.readouterr().err
    assert match in err and "bad.csv" in err and "Traceback" not in err
    assert Ledger(ledger).history("xs") == [] and not (tmp_path / "r.json").exists()


def test_missing_value_and_unknown_column(tmp_path, capsys):
    bad = tmp_path / "m.csv"
    bad.write_text("x,y\n0.1,1\n,2\n")
    assert _release(bad, tmp_path / "r.json", "--no-ledger") == 2
    assert "missing value" in capsys.readouterr().err
    assert _release(bad, tmp_path / "r.json", "--no-ledger", "--columns", "zz") == 2
    assert "not in" in capsys.readouterr().err


def test_release_needs_a_ledger_decision_and_says_when_unaccounted(tmp_path, data, capsys):
    out = tmp_path / "r.json"
    assert _release(data, out) == 2 and not out.exists()
    assert _release(data, out, "--no-ledger") == 0
    assert json.loads(out.read_text())["privacy"]["accounted"] is False
    assert "NOT ACCOUNTED" in capsys.readouterr().err


def test_a_different_file_than_the_registered_one_is_refused(tmp_path, data):
    ledger = tmp_path / "b.db"
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "xs", "--epsilon", "2",
                 "--data", str(data)]) == 0
    other = _csv(tmp_path / "other.csv", ["0.5"] * 60)
    assert _release(other, tmp_path / "r.json", "--ledger", str(ledger), "--dataset", "xs") == 2
    assert Ledger(ledger).history("xs") == []


def test_a_file_bound_to_another_budget_is_refused(tmp_path, data, capsys):
    """Finding 6 as reported: `a` registered with --data x.csv, `b` without; `dpinfer release
    --data x.csv` against `b` was accepted (1 charge on b). Now refused: 0 charges, no file."""
    ledger = tmp_path / "b.db"
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "a", "--epsilon", "2",
                 "--data", str(data)]) == 0
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "b", "--epsilon", "2",
                 "--unbound"]) == 0
    capsys.readouterr()
    out = tmp_path / "r.json"
    assert _release(data, out, "--ledger", str(ledger), "--dataset", "b") == 2
    err = capsys.readouterr().err
    assert "registered as dataset 'a'" in err and "Nothing was charged" in err
    assert Ledger(ledger).history("b") == [] and not out.exists()
    assert _release(data, out, "--ledger", str(ledger), "--dataset", "a") == 0
    assert len(Ledger(ledger).history("a")) == 1


def test_a_bmi_release_read_with_the_recommended_command_gives_the_posterior(tmp_path, capsys):
    """Issue 39 item 3: the release file of data in their own units (BMI, clamp [15, 45]) carries
    a prior from the public clamp bounds, so the command it recommends gives the posterior; the
    same release read with the standardised prior warns instead of returning the prior silently."""
    from dpinfer.models.shipped.gaussian_mean import GaussianMean

    bmi = np.random.default_rng(3).normal(27.0, 5.0, 200)
    data = _csv(tmp_path / "bmi.csv", [f"{v:.2f}" for v in bmi], header="bmi")
    out = tmp_path / "rel.json"
    assert main(["release", "--model", "gaussian-mean", "--data", str(data), "--columns", "bmi", "--epsilon",
                 "1", "--model-args", '{"clamp": [15, 45]}', "--no-ledger", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "N(30, 30^2)" in said and "--prior-mean" in said
    doc = json.loads(out.read_text())
    assert doc["model_args"] == {"clamp": [15, 45], "n": 200, "prior_mean": 30.0, "prior_sd": 30.0,
                                 "noise_sd": 7.5}
    sampler = ["--theta", "2000", "--inner", "10", "--pilot-theta", "1000", "--json"]
    assert main(["exact-posterior", "--model", "gaussian-mean", "--observed", str(out), *sampler]) == 0
    run = capsys.readouterr()
    assert "prior-data conflict" not in run.err
    summary = json.loads(run.out)
    exact = GaussianMean(epsilon=1.0, **doc["model_args"]).exact_posterior(doc["observed"], 201, 100)
    assert abs(summary["mean"][0] - exact.mean) < 0.3 * exact.sd and exact.sd < 1.0
    # the same release read with the standardised prior (what a file without the keys gave): warned
    args = '{"prior_mean": 0, "prior_sd": 1, "noise_sd": 1}'
    assert main(["exact-posterior", "--model", "gaussian-mean", "--observed", str(out), "--model-args", args,
                 *sampler]) == 0
    err = capsys.readouterr().err
    assert "prior-data conflict" in err and "--prior-mean" in err
    # --prior-mean / --prior-sd move the prior from the command line
    assert main(["exact-posterior", "--model", "gaussian-mean", "--observed", str(out), "--model-args", args,
                 "--prior-mean", "25", "--prior-sd", "10", *sampler]) == 0
    assert "prior-data conflict" not in capsys.readouterr().err
