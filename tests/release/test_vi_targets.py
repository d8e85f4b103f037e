"""The DPVI paper's Abalone targets (slow: 10 fits per setting, about 20 s in all)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from dpinfer.datasets import load_abalone
from dpinfer.models.data_spec import DataSpec
from dpinfer.privacy import PrivacyRNG
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import (
    DPVI,
    LogisticRegression,
    OptimizerOptions,
    PrivacyOptions,
    TrainingOptions,
    plan_privacy,
)

pytestmark = pytest.mark.slow

T, Q, C, DELTA = 1000, 0.05, 5.0, 1e-3
PAPER = {"per_example": "elbo", "average": False}  # the paper's split and last iterate (1 draw)
SIGMA_EPS012 = 47.529022216796875  # PLD, replace-one, q = 0.05, T = 1000, delta = 1e-3: eps = 0.12


def _grouped(kw):
    """The flat settings of these tests routed to fit's keywords and its three option groups
    (``DPVI.fit`` takes each setting in one place since its keyword-only signature)."""
    groups = {"privacy": PrivacyOptions, "optimizer": OptimizerOptions, "training": TrainingOptions}
    out, parts = {}, {name: {} for name in groups}
    for key, value in kw.items():
        owner = [name for name, cls in groups.items() if key in {f.name for f in dataclasses.fields(cls)}]
        if key in ("delta", "private") or not owner:
            out[key] = value
        else:
            parts[owner[0]][key] = value
    return {**out, **{name: groups[name](**v) for name, v in parts.items() if v}}


def _mean_accuracy(runs=10, **kw):
    d = load_abalone()
    engine = DPVI(LogisticRegression(8))
    fit_kw = _grouped(kw)
    accs = []
    for r in range(runs):
        ctx = {} if kw.get("private") is False else {
            "context": ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(100 + r))
        }
        accs.append(engine.fit(d.X_train, d.y_train, seed=r, **fit_kw, **ctx,
            data=DataSpec(intercept=False)).accuracy(d.X_test, d.y_test))
    return float(np.mean(accs)), float(np.std(accs, ddof=1) / np.sqrt(runs))


def test_non_private_accuracy_over_10_runs():
    m, _ = _mean_accuracy(private=False, clip=None, sampling_rate=0.01, steps=2000, lr=0.1)
    assert m >= 0.76  # paper 0.767


def test_pld_calibrated_eps_012_beats_the_paper_target():
    plan = plan_privacy(sampling_rate=Q, steps=T, delta=DELTA, epsilon=0.12)
    m, se = _mean_accuracy(
        noise_multiplier=plan.noise_multiplier, delta=DELTA, clip=C, sampling_rate=Q, steps=T, **PAPER
    )
    assert m >= 0.74  # paper 0.744 at its moments-accountant eps = 0.121 (with 2.1x more noise)


def test_paper_noise_and_sampling_reproduce_the_paper_accuracy():
    warnings.filterwarnings("ignore", message="sampling='with-replacement'")
    m, se = _mean_accuracy(
        noise_multiplier=2 * 51.077,
        delta=DELTA,
        clip=C,
        sampling_rate=Q,
        steps=T,
        sampling="with-replacement",
        paper_accounting=True,
        delta_prime=4e-5,
        **PAPER,
    )
    # paper: 0.7440 +- 0.0025 (10 runs); allow 3 combined standard errors
    assert abs(m - 0.744) < 3 * np.hypot(se, 0.0025)


def test_defaults_at_eps_012_reach_the_paper_accuracy():
    """The library's defaults (theta split, 4 draws, adaptive clip, tail average) at eps = 0.12.

    Measured over these 10 deterministic noise streams: 0.7358 (se 0.0099) since the default
    learning rate's 4x burn-in (issue 29, which brought non-private fits on correlated designs
    within 0.53 sd of the exact posterior); 0.7429 (se 0.0053) before it, and 0.7335 (0.0058) with
    the defaults before that (likelihood split, 1 draw, quantile 0.98, fixed clip learning rate
    0.2). The paper reports 0.744 +- 0.0025 over 10 runs at its eps = 0.121 (moments accountant,
    2.1x more noise); the test allows two combined standard errors, as a 10-run mean can tell.
    """
    d = load_abalone()
    accs = []
    for r in range(10):
        fit = DPVI(LogisticRegression(8)).fit(
            d.X_train,
            d.y_train,
            delta=DELTA,
            privacy=PrivacyOptions(noise_multiplier=SIGMA_EPS012),
            seed=r,
            context=ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(100 + r)),
            data=DataSpec(intercept=False),
        )
        accs.append(fit.accuracy(d.X_test, d.y_test))
    m, se = float(np.mean(accs)), float(np.std(accs, ddof=1) / np.sqrt(len(accs)))
    assert m >= 0.744 - 2 * np.hypot(se, 0.0025), (m, se)
