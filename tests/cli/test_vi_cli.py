"""`dpinfer dpvi` end to end: CSV input, ledger charge, output file, clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpinfer.cli import main
from dpinfer.privacy import Ledger
from dpinfer.release.dpvi import DPVIResult


def _write_csv(path, X, y, bad_row=None):
    lines = ["a,b,label"]
    for i, (row, t) in enumerate(zip(X, y, strict=True)):
        vals = [f"{v:.6f}" for v in row] + [f"{t:g}"]
        if i == bad_row:
            vals[1] = "oops"
        lines.append(",".join(vals))
    path.write_text("\n".join(lines) + "\n")


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ np.array([2.0, -1.0]))))).astype(float)
    return X, y


def test_cli_fits_a_csv_and_charges_the_ledger(tmp_path, capsys):
    X, y = _data()
    _write_csv(tmp_path / "d.csv", X, y)
    ledger = tmp_path / "l.db"
    Ledger(ledger, create=True).register("d", epsilon=3.0, delta=1e-5, accountant="pld")
    out = tmp_path / "fit.json"
    code = main(
        [
            "dpvi",
            "--data",
            str(tmp_path / "d.csv"),
            "--target",
            "label",
            "--epsilon",
            "2",
            "--delta",
            "1e-5",
            "--clip",
            "1",
            "--sampling-rate",
            "0.2",
            "--steps",
            "1000",
            "--ledger",
            str(ledger),
            "--seed",
            "1",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    fit = DPVIResult.load(out)
    assert fit.privacy.epsilon <= 2.0 and fit.privacy.neighbouring == "replace-one"
    # an intercept by default, as dpinfer glm (issue 40)
    assert fit.config["feature_names"] == ["intercept", "a", "b"]
    assert np.sign(fit.mean()[1:]).tolist() == [1.0, -1.0]
    hist = Ledger(ledger).history("d")
    assert [h["status"] for h in hist] == ["released"]
    assert "charged to 'd'" in capsys.readouterr().out


def test_cli_abalone_non_private_reports_accuracy(tmp_path, capsys):
    out = tmp_path / "fit.json"
    assert (
        main(
            [
                "dpvi",
                "--data",
                "abalone",
                "--non-private",
                "--no-ledger",
                "--steps",
                "300",
                "--sampling-rate",
                "0.05",
                "--seed",
                "0",
                "--no-progress",
                "--json",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["privacy"] is None and last["test_accuracy"] > 0.7
    assert last["private"] is False and last["privacy_warning"].startswith("NON-PRIVATE")


def test_cli_non_private_fit_needs_an_explicit_no_ledger_and_is_marked(tmp_path, capsys):
    """Issue 23: a non-private fit of confidential data is the same explicit, loud choice as an
    unaccounted release. Without --no-ledger it is refused before the data are read (exit 2, no
    file; the old CLI wrote the fit, exit 0); --ledger is refused; with --no-ledger the fit runs,
    its file says NON-PRIVATE and a notice on standard error says so again."""
    X, y = _data(200)
    _write_csv(tmp_path / "d.csv", X, y)
    out = tmp_path / "fit.json"
    argv = ["dpvi", "--data", str(tmp_path / "d.csv"), "--target", "label", "--non-private",
            "--steps", "20", "--seed", "0", "--no-progress", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--no-ledger" in err and "WITHOUT noise" in err
    assert not out.exists() and not out.with_suffix(".npz").exists()
    ledger = tmp_path / "l.db"
    Ledger(ledger, create=True).register("d", epsilon=3.0, delta=1e-5, accountant="pld")
    assert main([*argv, "--ledger", str(ledger)]) == 2
    assert "not releases" in capsys.readouterr().err
    assert not out.exists() and Ledger(ledger).history("d") == []
    assert main([*argv, "--no-ledger"]) == 0
    err = capsys.readouterr().err
    assert "notice: NON-PRIVATE" in err
    fit = DPVIResult.load(out)
    assert fit.privacy is None and fit.config["private"] is False
    assert fit.config["privacy_warning"].startswith("NON-PRIVATE")
    assert json.loads(out.read_text())["config"]["privacy_warning"].startswith("NON-PRIVATE")


def test_cli_bad_input_is_a_clear_error_and_nothing_is_charged(tmp_path, capsys):
    X, y = _data(50)
    _write_csv(tmp_path / "bad.csv", X, y, bad_row=3)
    ledger = tmp_path / "l.db"
    Ledger(ledger, create=True).register("bad", epsilon=3.0, delta=1e-5, accountant="pld")
    args = [
        "dpvi",
        "--data",
        str(tmp_path / "bad.csv"),
        "--target",
        "label",
        "--epsilon",
        "1",
        "--ledger",
        str(ledger),
        "--no-progress",
        "--out",
        str(tmp_path / "o.json"),
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "line 5" in err and "not a number" in err and "oops" not in err  # the cell is a record's
    _write_csv(tmp_path / "bad.csv", X, y + 1)  # labels 1/2: not binary
    assert main(args) == 2
    assert "binary" in capsys.readouterr().err
    assert main([*args[:-2], "--target", "nope", "--out", "x.json"]) == 2
    assert "not in" in capsys.readouterr().err
    assert Ledger(ledger).history("bad") == []
    assert not (tmp_path / "o.json").exists()


def _logistic_csv(path, n=2000, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    p = 1 / (1 + np.exp(-(X @ np.array([1.5, -2.0, 0.5]))))
    y = (rng.random(n) < p).astype(int)
    with open(path, "w") as fh:
        fh.write("a,b,c,label\n")
        for row, lab in zip(X, y, strict=True):
            fh.write(",".join(f"{v:.6f}" for v in row) + f",{lab}\n")


@pytest.mark.slow
def test_cli_defaults_fit_the_posterior_not_a_clipping_artefact(tmp_path):
    """Issue #13: the CLI's defaults are the library's (per-example θ-gradients clipped, clip auto, tail
    average). At ε = 1000 the default fit lies within 1 posterior sd of the non-private fit; the
    paper's split (--per-example elbo --clip 5), the old CLI default, is the known-broken variant
    (about 20 sd away) that the same check must reject."""
    data = tmp_path / "d.csv"
    _logistic_csv(data)

    def fit(*extra):
        out = tmp_path / f"fit{len(extra)}.json"
        argv = ["dpvi", "--data", str(data), "--target", "label", "--seed", "2", "--no-progress",
                "--out", str(out), *extra]
        assert main(argv) == 0
        return DPVIResult.load(out)

    ref = fit("--non-private", "--no-ledger")
    default = fit("--epsilon", "1000", "--no-ledger")
    paper = fit("--epsilon", "1000", "--no-ledger", "--per-example", "elbo", "--clip", "5", "--last-iterate")
    z_default = np.abs(default.mean() - ref.mean()) / ref.std
    z_paper = np.abs(paper.mean() - ref.mean()) / ref.std
    assert z_default.max() < 1.0, z_default
    assert z_paper.max() > 5.0, z_paper
    assert default.privacy.details["per_example"] == "theta"


def test_cli_defaults_are_the_librarys(tmp_path):
    """The CLI's defaults: theta clipping (4 draws), the private adaptive clip, tail averaging; the
    paper's split on request; a bad --clip is refused and nothing is released."""
    data = tmp_path / "d.csv"
    _logistic_csv(data, n=300)
    base = ["dpvi", "--data", str(data), "--target", "label", "--seed", "2", "--no-progress", "--steps", "20",
            "--epsilon", "1", "--no-ledger"]
    assert main([*base, "--out", str(tmp_path / "a.json")]) == 0
    fit = DPVIResult.load(tmp_path / "a.json")
    assert fit.privacy.details["per_example"] == "theta" and fit.config["mc_samples"] == 4
    assert fit.privacy.details["clip"] == "auto" or "clip_trace" in str(fit.privacy.details) or (
        "adaptive" in str(fit.privacy.details)
    )
    assert fit.config["average"] is True
    # --family auto: mean-field here (eps = 1, 20 steps: the noise dominates), full-rank on request
    assert fit.family == "meanfield" and fit.config["family_choice"]["requested"] == "auto"
    assert "noise dominates" in fit.config["family_choice"]["reason"]
    assert main([*base, "--family", "fullrank", "--out", str(tmp_path / "m.json")]) == 0
    assert DPVIResult.load(tmp_path / "m.json").family == "fullrank"
    assert main([*base, "--per-example", "elbo", "--clip", "5", "--last-iterate", "--out",
                 str(tmp_path / "b.json")]) == 0
    paper = DPVIResult.load(tmp_path / "b.json")
    assert paper.privacy.details["per_example"] == "elbo" and paper.privacy.details["clip"] == 5.0
    assert paper.config["average"] is False and paper.config["mc_samples"] == 1
    assert paper.family == "meanfield"
    for bad in ("0", "-1", "inf", "big"):
        assert main([*base, "--clip", bad, "--out", str(tmp_path / "c.json")]) == 2
    assert not (tmp_path / "c.npz").exists()


def test_cli_bounds_and_intercept_flags_match_dpinfer_glm(tmp_path, capsys):
    """Issue 40: ``--bounds`` (LO:HI for all or NAME=LO:HI,... per column) scales the features as
    ``dpinfer glm`` reads it, ``--no-intercept`` drops the intercept (``--intercept`` is the
    default); a value outside the bounds or an unknown column is refused and nothing is charged."""
    X, y = _data(n=300)
    _write_csv(tmp_path / "d.csv", X, y)
    ledger = tmp_path / "l.db"
    Ledger(ledger, create=True).register("d", epsilon=5.0, delta=1e-5, accountant="pld")
    base = ["dpvi", "--data", str(tmp_path / "d.csv"), "--target", "label", "--steps", "20", "--seed", "1",
            "--no-progress", "--epsilon", "1", "--ledger", str(ledger)]
    assert main([*base, "--bounds", "a=-5:5,b=-6:6", "--out", str(tmp_path / "f.json")]) == 0
    fit = DPVIResult.load(tmp_path / "f.json")
    assert fit.param_names == ("intercept", "a", "b")
    assert fit.config["design"]["bounds"] == [[-5.0, 5.0], [-6.0, 6.0]]
    assert main([*base, "--bounds=-6:6", "--no-intercept", "--out", str(tmp_path / "g.json")]) == 0
    g = DPVIResult.load(tmp_path / "g.json")
    assert g.param_names == ("a", "b") and g.config["design"]["bounds"] == [[-6.0, 6.0]] * 2
    assert main([*base, "--intercept", "--out", str(tmp_path / "h.json")]) == 0
    assert DPVIResult.load(tmp_path / "h.json").param_names == ("intercept", "a", "b")
    spent = Ledger(ledger).spent("d")
    capsys.readouterr()
    assert main([*base, "--bounds=-0.1:0.1", "--out", str(tmp_path / "x.json")]) == 2
    assert main([*base, "--bounds=a=-5:5,zz=0:1", "--out", str(tmp_path / "x.json")]) == 2  # data errors
    err = capsys.readouterr().err
    assert "outside the declared public bounds" in err and "not features" in err and "Traceback" not in err
    assert Ledger(ledger).spent("d") == spent
