"""``family="auto"``: full-rank for small D in mode "theta" (no privacy cost), mean-field otherwise.

The accuracy that motivates it (a probit posterior's sd, which mean-field VI understates at any ε)
is checked by the slow tests of tests/test_dpvi_accuracy.py; here only the choice, its record in
the result and the release (the same rows and noise dimension whatever the family).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpinfer.errors import InvalidDataError
from dpinfer.models.data_spec import DataSpec
from dpinfer.privacy import PrivacyRNG
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, LogisticRegression, PrivacyOptions, TrainingOptions
from dpinfer.release.dpvi.families import AUTO_FULLRANK_MAX_DIM, choose_family


def test_choose_family():
    assert choose_family("auto", 3)[0] == "fullrank"
    assert choose_family("auto", AUTO_FULLRANK_MAX_DIM)[0] == "fullrank"
    assert choose_family("auto", AUTO_FULLRANK_MAX_DIM + 1)[0] == "meanfield"
    # the variational-parameter rows grow as D^2 for the full-rank family: auto keeps mean-field
    assert choose_family("auto", 3, "elbo")[0] == "meanfield"
    assert choose_family("auto", 3, "likelihood")[0] == "meanfield"
    # where the gradient noise dominates (lambda > 0.05, e.g. eps = 1: 0.41) auto is mean-field
    assert choose_family("auto", 3, "theta", 0.05)[0] == "fullrank"
    assert choose_family("auto", 3, "theta", 0.41)[0] == "meanfield"
    assert choose_family("meanfield", 3) == ("meanfield", "requested")
    assert choose_family("fullrank", 100, "elbo") == ("fullrank", "requested")
    with pytest.raises(InvalidDataError, match="family must be one of"):
        choose_family("diagonal", 3)
    with pytest.raises(InvalidDataError, match="family must be one of"):
        DPVI(LogisticRegression(3), "full")


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (rng.random(300) < 1 / (1 + np.exp(-X @ [1.0, -1.0, 0.5]))).astype(float)
    return X, y


def test_default_family_is_recorded_and_follows_the_per_example_mode():
    X, y = _data()
    engine = DPVI(LogisticRegression(3))
    assert engine.requested_family == "auto" and engine.family.name == "fullrank"
    fit = engine.fit(X, y, training=TrainingOptions(steps=20), private=False, seed=0,
        data=DataSpec(intercept=False))
    assert fit.family == "fullrank" and fit.params.shape == (3 + 6,)
    choice = fit.config["family_choice"]
    assert choice["requested"] == "auto" and choice["chosen"] == "fullrank" and "D = 3" in choice["reason"]
    assert "family: auto" in fit.summary()
    # the same engine with the paper's split: mean-field (its rows are the variational gradients)
    paper = engine.fit(
        X,
        y,
        privacy=PrivacyOptions(clip=5.0),
        training=TrainingOptions(steps=20, per_example="elbo"),
        private=False,
        seed=0, data=DataSpec(intercept=False),
    )
    assert paper.family == "meanfield" and paper.config["family_choice"]["chosen"] == "meanfield"
    assert engine.fit(X, y, training=TrainingOptions(steps=20), private=False, seed=0,
        data=DataSpec(intercept=False)).family == "fullrank"
    # an explicit family is kept, whatever the mode
    fixed = DPVI(LogisticRegression(3), "meanfield").fit(
        X, y, training=TrainingOptions(steps=20), private=False, seed=0, data=DataSpec(intercept=False),
    )
    assert fixed.family == "meanfield" and fixed.config["family_choice"]["reason"] == "requested"
    # a family assigned to the engine is kept too
    engine.family = DPVI(LogisticRegression(3), "meanfield").family
    again = engine.fit(
        X,
        y,
        privacy=PrivacyOptions(clip=5.0),
        training=TrainingOptions(steps=20, per_example="elbo"),
        private=False,
        seed=0, data=DataSpec(intercept=False),
    )
    assert again.family == "meanfield"


def test_full_rank_default_releases_the_same_rows_and_noise(monkeypatch):
    """Mode "theta": the clipped rows are the 4·D θ-gradients for either family, so the release
    (rows, clip, noise dimension, event) does not depend on the family."""
    from dpinfer.release.dpvi import optim

    X, y = _data()
    widths: dict[str, set[int]] = {}
    real_noise = optim.DPOptimizer.noise

    def spy(self, summed):
        widths.setdefault(current, set()).add(int(summed.shape[0]))
        return real_noise(self, summed)

    monkeypatch.setattr(optim.DPOptimizer, "noise", spy)
    eps, chosen = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for current, sigma in (("auto", 0.01), ("auto-noisy", 2.0), ("meanfield", 0.01), ("fullrank", 0.01)):
            fit = DPVI(LogisticRegression(3), current.split("-")[0]).fit(
                X,
                y,
                delta=1e-5,
                privacy=PrivacyOptions(noise_multiplier=sigma),
                training=TrainingOptions(steps=10),
                seed=0,
                context=ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(0)),
                data=DataSpec(intercept=False),
            )
            eps[current], chosen[current] = fit.privacy.epsilon, (fit.family, fit.config["lr"])
    assert widths == {k: {12} for k in ("auto", "auto-noisy", "meanfield", "fullrank")}
    assert eps["auto"] == eps["meanfield"] == eps["fullrank"]
    # lambda = sigma sqrt(3) / (0.05 sqrt(300 * 5)): 0.009 at sigma = 0.01, 1.8 at sigma = 2
    # ... and the default AdaGrad step: 0.05 when the noise is small, 0.1 otherwise
    assert chosen == {"auto": ("fullrank", 0.05), "auto-noisy": ("meanfield", 0.1),
                      "meanfield": ("meanfield", 0.05), "fullrank": ("fullrank", 0.05)}
    # under add-remove n is secret: nothing may depend on it (the rule uses n), so the noisy defaults
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        secret_n = DPVI(LogisticRegression(3)).fit(
            X,
            y,
            delta=1e-5,
            privacy=PrivacyOptions(noise_multiplier=0.01, clip=1.0, neighbouring="add-remove"),
            training=TrainingOptions(steps=10),
            seed=0,
            context=ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(0)),
            data=DataSpec(intercept=False),
        )
    assert (secret_n.family, secret_n.config["lr"]) == ("meanfield", 0.1)
    assert "secret" in secret_n.config["family_choice"]["reason"]
