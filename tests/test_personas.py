"""The three personas of issue 26 (``examples/personas/``): each task in at most 15 non-blank lines,
from the README and docstrings alone. Fast tests check the scripts' size and syntax and the small
fixes the personas needed (synthetic records of a GLM / an intercept design, CSV integers, arviz
order, the stuck-population warning); slow tests run the scripts, and the census script is compared
with its exact posterior."""

from __future__ import annotations

import ast
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PERSONAS = ROOT / "examples" / "personas"
SCRIPTS = ("data_owner.py", "census_analyst.py", "epidemiologist.py")
RELEASED = [412, 958, 1187, 806, 391]
SIGMA = 10.0


def code_lines(path: Path) -> int:
    """Non-blank lines (imports and comments included)."""
    return sum(1 for line in path.read_text().splitlines() if line.strip())


@pytest.mark.parametrize("name", SCRIPTS)
def test_each_persona_script_parses_and_has_at_most_15_lines(name):
    path = PERSONAS / name
    ast.parse(path.read_text())
    assert code_lines(path) <= 15
    readme = (PERSONAS / "README.md").read_text()
    assert f"`{name}`" in readme and f"{code_lines(path)} lines" in readme


# ---- the fixes, fast ---------------------------------------------------------------------------
def _glm_stub(theta, bounds, target="outcome"):
    theta = np.asarray(theta, float)
    release = SimpleNamespace(family="logistic", feature_bounds=np.asarray(bounds, float), intercept=True,
                              has_offset=False)
    return SimpleNamespace(release=release, settings={"target": target}, privacy=None,
                           sample=lambda n, rng, scale="scaled": np.tile(theta, (n, 1)))


def test_glm_synthesis_scales_by_the_bounds_adds_the_intercept_and_keeps_the_names():
    from dpinfer.models.synthesis import PublicCovariates, glm_synthesize

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(18, 91, 400), rng.uniform(15, 50, 400)])
    bounds = [(18, 90), (15, 50)]
    theta = [-0.5, 1.5, -1.0]  # intercept, age, bmi on the [-1, 1] scale
    cov = PublicCovariates(X, source="test", columns=("age", "bmi"))
    out = glm_synthesize(_glm_stub(theta, bounds), 20_000, cov, seed=1)
    assert out.columns == ("age", "bmi", "outcome")
    x = out.records[:, :2]
    scaled = 2 * (x - np.array(bounds)[:, 0]) / np.ptp(bounds, axis=1) - 1
    p = 1 / (1 + np.exp(-(theta[0] + scaled @ theta[1:])))  # the exact P(y = 1) of each record
    se = np.sqrt(np.mean(p * (1 - p)) / out.n)
    assert abs(out.records[:, 2].mean() - p.mean()) < 4 * se
    p_raw = 1 / (1 + np.exp(-(theta[0] + x @ theta[1:])))  # broken: θ applied to unscaled x
    assert abs(out.records[:, 2].mean() - p_raw.mean()) > 10 * se


def test_dpvi_style_design_is_applied_before_theta():
    from dpinfer.models.synthesis import PublicCovariates, synthesize_from

    X = np.array([[0.0], [10.0]])
    post = SimpleNamespace(sample=lambda n, rng: np.tile([0.0, 50.0], (n, 1)), privacy=None,
                           config={"design": {"intercept": True, "bounds": [[0.0, 10.0]], "n_columns": 1}})
    from dpinfer.release.dpvi import LogisticRegression

    model = LogisticRegression(2)  # synthesis finds its records through the protocol, not its name
    out = synthesize_from(post, 2000, 0, model, covariates=PublicCovariates(X, source="t", columns=("x",)))
    y_at = {v: out.records[out.records[:, 0] == v, 1] for v in (0.0, 10.0)}
    assert y_at[0.0].max() == 0.0 and y_at[10.0].min() == 1.0  # x = 0 -> scaled -1, x = 10 -> +1


def test_synthetic_csv_writes_whole_number_columns_as_integers(tmp_path):
    from dpinfer.models.synthesis import SyntheticData

    data = SyntheticData(np.array([[60.0, 27.5, 1.0], [41.0, 30.25, 0.0]]), ("age", "bmi", "y"),
                         np.zeros((2, 1)), None)
    text = data.to_csv(tmp_path / "s.csv").read_text().splitlines()
    assert text == ["age,bmi,y", "60,27.5,1", "41,30.25,0"]


@pytest.mark.slow  # importing arviz takes ~4 s on its own
def test_to_arviz_keeps_the_parameters_order():
    from dpinfer.results.format import draws_to_arviz

    idata = draws_to_arviz(np.zeros((2, 5, 3)), ("intercept", "age", "bmi"), None, method="m")
    assert list(idata.posterior.data_vars) == ["intercept", "age", "bmi"]
    assert idata.posterior.attrs["method"] == "m"


def test_stuck_population_is_flagged_and_a_mixing_one_is_not():
    from dpinfer.inference.exact.tempered import stuck_population

    rng = np.random.default_rng(0)
    mixing = rng.normal(size=(1000, 2))
    assert stuck_population(mixing, np.full(1000, 1.6), 2.0, 50, 0.08) is None  # the census case
    stuck = np.repeat(rng.normal(size=(2, 2)), 500, axis=0)
    msg = stuck_population(stuck, np.zeros(1000), 2.0, 50, 0.0)
    assert msg is not None and "2 distinct" in msg and "n_inner" in msg
    assert stuck_population(mixing, np.full(1000, 0.1), 2.0, 50, 0.005) is not None  # never moved


# ---- the scripts, slow -------------------------------------------------------------------------
def _run(script: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PERSONAS / script)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def exact_count_posterior(z: int) -> tuple[float, float]:
    """Mean and sd of the true count c given z: p(c | z) ∝ p(c) N_Z(z - c; σ²), with p(c) the
    Gamma(1, 0.001)-Poisson marginal, ∝ (1/1.001)^c (a sum over the integers)."""
    c = np.arange(max(z - 200, 0), z + 201)
    logp = -c * np.log(1.001) - (z - c) ** 2 / (2 * SIGMA**2)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    m = float(w @ c)
    return m, float(np.sqrt(w @ (c - m) ** 2))


def meets(mean, sd, exact, rounding=1 / 12) -> bool:
    em, es = np.array(exact).T
    es = np.sqrt(es**2 + rounding)  # θ = c + U(-1/2, 1/2): the continuous θ adds the rounding's 1/12
    ok_mean = np.all(np.abs(np.asarray(mean) - em) / es <= 0.15)
    return bool(ok_mean and np.all(np.abs(np.asarray(sd) / es - 1) <= 0.08))


def test_the_census_check_catches_the_expected_count_posterior():
    exact = [exact_count_posterior(z) for z in RELEASED]
    em, es = np.array(exact).T
    assert meets(em, np.sqrt(es**2 + 1 / 12), exact)
    # the README's posterior of the Poisson rates (sd ~22, not ~10) is not that of the counts
    assert not meets(em, np.sqrt(np.array(RELEASED) + SIGMA**2), exact)


@pytest.mark.slow
def test_census_persona_matches_the_exact_posterior_of_the_true_counts():
    import dpinfer
    from dpinfer.models import GammaPrior, GaussianMechanism, PrivateDataModel

    census = GaussianMechanism.known(sigma=SIGMA, stat_dim=5, discrete=True, sensitivity=1)
    model = PrivateDataModel(GammaPrior([1.0] * 5, [0.001] * 5), lambda t, rng: np.round(t), census,
                             param_names=["0-17", "18-34", "35-54", "55-74", "75+"])
    post = dpinfer.infer(model, RELEASED, seed=0)  # what census_analyst.py runs
    assert post.method == "exact" and not post.findings
    assert meets(post.mean(), post.sd(), [exact_count_posterior(z) for z in RELEASED])


@pytest.mark.slow
def test_census_persona_script_runs(tmp_path):
    res = _run("census_analyst.py", tmp_path)
    assert res.returncode == 0, res.stderr
    assert "0-17" in res.stdout and "75+" in res.stdout and (tmp_path / "census_counts.png").is_file()


@pytest.mark.slow
def test_data_owner_persona_runs_keeps_the_names_and_refuses_a_second_fit(tmp_path):
    subprocess.run([sys.executable, str(PERSONAS / "make_patients_csv.py"), "patients.csv"], cwd=tmp_path,
                   check=True)
    res = _run("data_owner.py", tmp_path)
    assert res.returncode == 0, res.stderr
    for name in ("intercept", "age", "bmi", "smoker", "systolic_bp"):
        assert name in res.stdout
    assert "['intercept', 'age', 'bmi', 'smoker', 'systolic_bp']" in res.stdout
    header = (tmp_path / "synthetic.csv").read_text().splitlines()[0]
    assert header == (tmp_path / "patients.csv").read_text().splitlines()[0]
    from dpinfer.privacy import Ledger

    assert 0 < Ledger(tmp_path / "budget.db").remaining("patients") < 0.3
    again = _run("data_owner.py", tmp_path)  # the same fit again: the budget refuses it
    assert again.returncode != 0 and "BudgetExceededError" in again.stderr
    assert "Nothing was charged or released" in again.stderr
    assert len(Ledger(tmp_path / "budget.db").history("patients")) == 2  # nothing more charged


@pytest.mark.slow
def test_epidemiologist_persona_runs_and_auto_falls_back_when_exact_smc_is_stuck(tmp_path):
    res = _run("epidemiologist.py", tmp_path)
    assert res.returncode == 0, res.stderr
    assert "R0 95% credible interval" in res.stdout and (tmp_path / "r0_posterior.png").is_file()
    import dpinfer
    from dpinfer.errors import WeightDegeneracyWarning
    from dpinfer.models import LaplaceMechanism, PrivateDataModel, UniformPrior

    ns: dict = {}
    exec(compile((PERSONAS / "epidemiologist.py").read_text().split("\nlaplace = ")[0], "epi", "exec"), ns)
    laplace = LaplaceMechanism(stat_dim=12, sensitivity=1, epsilon=1.0, neighbouring="add-remove")
    model = PrivateDataModel(UniformPrior([1, 0.3], [5, 1.5]), ns["weekly_cases"], laplace)
    released = laplace.G(ns["weekly_cases"](np.array([[2.5, 0.7]]), np.random.default_rng(1)),
                         np.full((1, 12), 0.5))[0]  # u = 1/2: no noise, a public test value
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        post = dpinfer.infer(model, released, seed=0, method="exact")
    # asked for by name, the stuck exact sampler is returned with its warning ...
    assert post.method == "exact"
    assert any(issubclass(w.category, WeightDegeneracyWarning) and "stuck" in str(w.message) for w in caught)
    assert any("stuck" in f["message"] for f in post.findings) and "stuck" in post.summary()
    # ... and "auto", which chose it, runs SMC-ABC instead and says why
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = dpinfer.infer(model, released, seed=0)
    assert auto.method == "smc-abc" and "stuck" in auto.reason and "SMC-ABC ran instead" in auto.reason
