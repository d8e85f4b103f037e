"""Simulation-based calibration and coverage (issue 12 item 7) on three models of our own, a
deliberately mis-specified mechanism caught, the API and ``dpinfer check``."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from dpinfer.cli import main
from dpinfer.diagnostics.calibration import CalibrationResult, sbc
from dpinfer.inference import mechanism_importance_sampling
from dpinfer.inference.entry import calibration_check
from dpinfer.models.shipped.gaussian_mean import GaussianMean
from dpinfer.plots import plot_calibration
from user_problems import PoissonClampedSum, TwoClampedMeans

FAST = dict(n_replicates=50, n_draws=39, bins=8, seed=1)
IS_SMALL = dict(n_theta=500, n_inner=10, proposal="prior")
MODELS = {
    "gaussian-mean": lambda: GaussianMean(n=100, epsilon=0.3),
    "poisson-sum": lambda: PoissonClampedSum(epsilon=0.3),
    "two-means": lambda: TwoClampedMeans(),
}


def _fit(model):
    return lambda obs, seed: mechanism_importance_sampling(model, obs, seed=seed, **IS_SMALL)


def _forgot_most_noise(model):
    """Known-broken analysis: the mechanism's noise scale taken 20x too small."""
    wrong = copy.copy(model)
    wrong.mechanism = copy.copy(model.mechanism)
    wrong.mechanism.scale = model.mechanism.scale / 20
    return wrong


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(MODELS))
def test_exact_importance_sampler_is_calibrated(name):
    model = MODELS[name]()
    res = sbc(model, _fit(model), **FAST)
    assert res.passed, res.verdict()
    assert "no miscalibration detected" in res.verdict()
    cov = res.coverage([0.5, 0.9])
    assert np.all(np.abs(cov - np.array([[0.5], [0.9]])) < 3 * np.sqrt(0.25 / 50) + 0.05)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", ["poisson-sum", "two-means"])
def test_misspecified_mechanism_is_caught(name):
    model = MODELS[name]()
    res = sbc(model, _fit(_forgot_most_noise(model)), **{**FAST, "n_replicates": 30})
    assert not res.passed
    assert res.verdict().startswith("MISCALIBRATED") and "too narrow" in res.verdict()
    assert res.coverage([0.9]).max() < 0.8


def test_verdict_shapes_and_plot(tmp_path):
    rng = np.random.default_rng(0)
    uniform = CalibrationResult(rng.integers(0, 100, (500, 1)), np.zeros((500, 1)), 99, ("a",), 10)
    assert uniform.passed
    cup = np.where(rng.random((500, 1)) < 0.5, rng.integers(0, 10, (500, 1)), rng.integers(90, 100, (500, 1)))
    narrow = CalibrationResult(cup, np.zeros((500, 1)), 99, ("a",), 10)
    assert not narrow.passed and "too narrow" in narrow.shape(0)
    wide = CalibrationResult(rng.integers(40, 60, (500, 1)), np.zeros((500, 1)), 99, ("a",), 10)
    assert "too wide" in wide.shape(0)
    low = CalibrationResult(rng.integers(0, 50, (500, 1)), np.zeros((500, 1)), 99, ("a",), 10)
    assert "biased" in low.shape(0) and "above" in low.shape(0)
    plot_calibration(narrow, tmp_path / "sbc.png")
    assert (tmp_path / "sbc.png").stat().st_size > 1000
    assert json.dumps(narrow.to_dict())


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_api_and_cli(tmp_path, capsys):
    model = MODELS["two-means"]()
    res = calibration_check(model, "importance", 20, 19, seed=2, **IS_SMALL)
    assert res.method == "importance" and res.n_replicates == 20
    bad = calibration_check(model, "importance", 20, 19, seed=2, analysis_model=_forgot_most_noise(model),
                            **IS_SMALL)
    assert not bad.passed
    args = ["check", "--model", "user_problems:TwoClampedMeans", "--model-args", '{"n": 40}',
            "--method", "importance", "--method-args", json.dumps(IS_SMALL), "--replicates", "20",
            "--draws", "19", "--seed", "2", "--plot", str(tmp_path / "c.png"), "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] and out["param_names"] == ["mu_a", "mu_b"] and (tmp_path / "c.png").exists()
    assert main(["check", "--model", "no_such_module:f"]) == 2
    assert "cannot import module" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("method", ["smc-abc", "exact"])
def test_default_methods_are_calibrated(name, method):
    """SBC of the default SMC-ABC and of the tempered exact sampler (100 replicates)."""
    model = MODELS[name]()
    options = {"n_particles": 500} if method == "smc-abc" else {"n_particles": 300, "n_inner": 20}
    res = calibration_check(model, method, 100, 49, seed=3, **options)
    assert res.passed, res.verdict()
