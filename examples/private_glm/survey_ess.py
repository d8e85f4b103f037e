"""Importance ESS before/after on a six-feature logistic survey (issue 39, item 2).

A survey-like data set of n = 6366 records (age uniform on 18–90, a 3-level region as two
indicators, smoker and female indicators, a skewed income on [0, 250] thousand), a logistic
outcome, one release at ε = 1 (insecure deterministic PrivacyRNG: reproducible), and on that one
release: main's model (Gaussian covariates) with importance sampling and no fallback, as on main;
the default (moment-matched covariates, importance sampling with the HMC fallback on the same
release); and ``post.resample()`` (HMC) of the default's release. Prints and writes
``survey_ess.json``: importance ESS, Pareto k̂, the sampler that produced the draws, max R-hat,
seconds, and the ledger's spend before/after resampling (nothing is charged again).

Run: ``nice -n 10 .venv/bin/python examples/private_glm/survey_ess.py``.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

from dpinfer.inference.glm import GLMSamplerOptions, glm_posterior  # noqa: E402
from dpinfer.models.data_spec import DataSpec  # noqa: E402
from dpinfer.privacy import Ledger  # noqa: E402
from dpinfer.privacy.context import ReleaseContext  # noqa: E402
from dpinfer.release.glm import release_glm_statistics  # noqa: E402
from seeded_privacy_rng import prng  # noqa: E402


def survey_data() -> tuple[np.ndarray, np.ndarray, list[tuple[float, float]]]:
    """The six-feature survey (n = 6366, seed 6366): features, outcome and their public bounds."""
    rng = np.random.default_rng(6366)
    n = 6366
    age = rng.uniform(18, 90, n)
    region = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    smoker, female = rng.random(n) < 0.22, rng.random(n) < 0.52
    income = np.minimum(rng.gamma(2.0, 25.0, n), 250)
    X = np.column_stack([age, region == 1, region == 2, smoker, female, income]).astype(float)
    bounds = [(18, 90), (0, 1), (0, 1), (0, 1), (0, 1), (0, 250)]
    eta = -2.0 + 0.04 * (age - 50) + 0.5 * (region == 1) - 0.4 * (region == 2) + 1.1 * smoker - 0.3 * female \
        - 0.01 * (income - 50)
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    return X, y, bounds


def main() -> None:
    torch.set_num_threads(1)
    X, y, bounds = survey_data()
    path = Path("/tmp") / "dpinfer-survey-ess.db"
    path.unlink(missing_ok=True)
    ledger = Ledger(path, create=True)
    ledger.register("survey", epsilon=2.0, delta=1e-5, accountant="rdp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release_glm_statistics(X, y, family="logistic", epsilon=1.0, delta=1e-6,
                                     context=ReleaseContext(ledger=ledger, dataset="survey",
                                                            privacy_rng=prng(6366)),
                                     data=DataSpec(bounds=bounds, feature_names=["age", "north", "east",
                                                      "smoker", "female", "income"]))
    rows = {}
    spent = ledger.spent("survey")
    runs = {
        "main (gaussian, importance, no fallback)": dict(covariates="gaussian",
                                                         sampler=GLMSamplerOptions(fallback="none")),
        "default (moment-matched, importance, HMC fallback)": dict(),
    }
    post = None
    for label, kw in runs.items():
        t0 = time.time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            post = glm_posterior(rel, seed=0, **kw)
        dg = post.diagnostics
        rows[label] = {"ess": dg.get("ess"), "pareto_khat": dg.get("pareto_khat"),
                       "sampler": dg.get("method"),
                       "fallback": dg.get("fallback"), "max_rhat": dg.get("max_rhat"),
                       "seconds": time.time() - t0, "warnings": [str(w.message)[:160] for w in caught]}
    assert post is not None
    t0 = time.time()
    again = post.resample(seed=1)
    rows["post.resample() (HMC, same release)"] = {
        "sampler": again.diagnostics["method"], "max_rhat": again.diagnostics["max_rhat"],
        "seconds": time.time() - t0, "charged_again": ledger.spent("survey") - spent}
    (HERE / "survey_ess.json").write_text(json.dumps(rows, indent=1))
    print(json.dumps(rows, indent=1))  # noqa: T201


if __name__ == "__main__":
    main()
