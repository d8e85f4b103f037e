"""``dpinfer glm``: a CSV fit charged to a ledger, an offset model, and bad input refused in one line
(exit 2, nothing charged)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpinfer.cli import main
from dpinfer.inference.glm import GLMPosterior
from dpinfer.privacy import Ledger


def _csv(path, n=300, seed=0, bad=None):
    rng = np.random.default_rng(seed)
    age = rng.uniform(20, 80, n)
    bmi = rng.uniform(18, 40, n)
    expo = rng.uniform(0.5, 2.0, n)
    event = (rng.random(n) < 0.3).astype(int)
    count = rng.poisson(expo)
    rows = ["age,bmi,logexpo,event,count"]
    rows += [f"{a:.3f},{b:.3f},{np.log(e):.4f},{v},{c}" for a, b, e, v, c in zip(age, bmi, expo, event, count,
                                                                               strict=True)]
    if bad is not None:
        rows[3] = bad
    path.write_text("\n".join(rows) + "\n")
    return path


def _ledger(tmp_path):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("patients", epsilon=5.0, delta=1e-5, accountant="rdp")
    return ledger


@pytest.mark.slow
def test_glm_fits_a_csv_and_charges_the_ledger_once(tmp_path, capsys):
    data = _csv(tmp_path / "p.csv")
    ledger = _ledger(tmp_path)
    code = main(["glm", "--data", str(data), "--target", "event", "--features", "age,bmi",
                 "--bounds", "age=18:90,bmi=15:50", "--epsilon", "1", "--ledger", str(tmp_path / "l.db"),
                 "--dataset", "patients", "--seed", "0", "--out", str(tmp_path / "fit"), "--json",
                 "--proposals", "500"])
    out = capsys.readouterr().out
    assert code == 0, out
    info = json.loads(out.strip().splitlines()[-1])
    assert info["param_names"] == ["intercept", "age", "bmi"]
    fit = GLMPosterior.load(tmp_path / "fit.npz")
    assert fit.param_names == ("intercept", "age", "bmi") and fit.privacy.accounted
    assert len(ledger.history("patients")) == 1 and ledger.spent("patients") > 0
    # the user's units by default (issue 39): the printed and JSON coefficients are the features' own
    assert info["scale"] == "original" and "features' own units" in out
    assert info["mean"] == pytest.approx(fit.mean().tolist())
    assert info["scaled"]["mean"] == pytest.approx(fit.mean(scale="scaled").tolist())
    assert info["mean"][1] == pytest.approx(info["scaled"]["mean"][1] * 2 / 72)
    assert fit.settings["sampler"]["fallback"] == "hmc"  # the default


def test_fallback_flag_reaches_the_sampler(tmp_path, capsys):
    data = _csv(tmp_path / "p.csv")
    code = main(["glm", "--data", str(data), "--target", "event", "--features", "age,bmi",
                 "--bounds", "age=18:90,bmi=15:50", "--epsilon", "1", "--seed", "0", "--fallback", "none",
                 "--no-ledger", "--out", str(tmp_path / "fit"),
                 "--proposals", "500"])  # the flag reaching the sampler is the check, not the sampling
    assert code == 0, capsys.readouterr()
    fit = GLMPosterior.load(tmp_path / "fit.npz")
    assert fit.settings["sampler"]["fallback"] == "none" and "fallback" not in fit.diagnostics


@pytest.mark.parametrize("argv,match", [
    (["--bounds", "18:50"], "outside the declared public bounds"),  # bmi/age values above 50
    (["--bounds", "age=18:90"], "no \\(lower, upper\\) for column"),
    (["--bounds", "oops"], "LO:HI"),
    (["--bounds", "0:100", "--family", "poisson"], "y_bounds"),
    (["--bounds", "0:100", "--target", "nope"], "not in"),
])
def test_bad_input_is_refused_in_one_line_and_charges_nothing(tmp_path, capsys, argv, match):
    data = _csv(tmp_path / "p.csv", n=50)
    ledger = _ledger(tmp_path)
    base = ["glm", "--data", str(data), "--target", "event", "--features", "age,bmi", "--epsilon", "1",
            "--ledger", str(tmp_path / "l.db"), "--dataset", "patients", "--out", str(tmp_path / "fit")]
    if "--target" in argv:
        i = base.index("--target")
        base[i + 1] = argv[argv.index("--target") + 1]
        argv = [a for j, a in enumerate(argv) if a != "--target" and (j == 0 or argv[j - 1] != "--target")]
    code = main(base + argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("dpinfer:")
    import re
    assert re.search(match, err[0]), err[0]
    assert ledger.history("patients") == [] and not (tmp_path / "fit.npz").exists()


def test_a_non_number_cell_is_refused_without_showing_it(tmp_path, capsys):
    data = _csv(tmp_path / "p.csv", n=20, bad="secret-value,20,0,1,1")
    code = main(["glm", "--data", str(data), "--target", "event", "--features", "age,bmi",
                 "--bounds", "0:100", "--epsilon", "1", "--no-ledger", "--out", str(tmp_path / "fit")])
    err = capsys.readouterr().err
    assert code == 2 and "not a number" in err and "secret-value" not in err


def test_a_missing_cell_or_a_blank_line_is_refused(tmp_path, capsys):
    """The GLM command reads CSVs with the DPVI command's reader: 'nan' (which float() accepts)
    and blank lines (which would change n) are refused before anything is charged."""
    for name, text, match in [("nan.csv", "age,bmi,event\n30,20,1\nnan,21,0\n40,22,1\n", "missing value"),
                              ("blank.csv", "age,bmi,event\n30,20,1\n\n40,22,1\n", "is blank")]:
        data = tmp_path / name
        data.write_text(text)
        code = main(["glm", "--data", str(data), "--target", "event", "--bounds", "0:100", "--epsilon", "1",
                     "--no-ledger", "--out", str(tmp_path / "fit")])
        err = capsys.readouterr().err
        assert code == 2 and match in err and err.count("\n") == 1
