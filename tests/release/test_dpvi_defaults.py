"""DPVI right by default: the posterior of the user's model, not a clipping artefact.

Logistic regression, n = 2000, three standardised features, truth (1.5, -2, 0.5), prior N(0, I):
the default fit (per-example likelihood θ-gradients clipped before the 1/q scaling and pulled back
to the variational parameters after the noise, 4 Monte Carlo draws, adaptive private clip at the
0.999 norm quantile at ε = 100 and 0.995 at ε = 1, tail-averaged iterates, the family and step
that the noise level selects) is compared with the exact posterior of tests/glm_reference.py. Each
accuracy check also runs the paper's split (``per_example="elbo"``, ``clip=5``, last iterate) and,
at ε = 100, the previous default (``per_example="likelihood"``, one draw, quantile 0.98), which
must fail it. Noise multipliers are fixed (calibrating to ε = 100 with the PLD accountant takes
about a minute); the ε each gives is stated next to it.

Tolerances: the averages over seeds of (fit mean − exact mean)/exact sd and of the sd ratio.
Measured (T = 1000; at ε = 100 the defaults are full-rank, clip quantile 0.999, AdaGrad lr 0.05;
at ε = 1 mean-field, 0.995, lr 0.1): ε = 100, seeds 0-7, means (0.12, −0.02, −0.05) sd (one fit's
own error is about 0.2 sd, up to 0.6: the fixed-learning-rate jitter left after tail averaging, as
large as the non-private fit's at T = 1000), sd ratios (1.03, 1.02, 1.05) (the mean-field family's
were (0.89, 0.86, 1.00), its exact optimum's (0.86, 0.85, 0.96)); the previous default (0.59,
−0.59, 0.45) sd with ratios 0.69-1.47 over seeds; ε = 1 means (0.14, 0.28, 0.13) sd over seeds
0-7; the paper's split about 18 sd. The test checks 0.25 sd and 25% on the sd at ε = 100, 2 sd at
ε = 1. The probit, Poisson and positive-scale problems are in tests/test_dpvi_accuracy.py (slow).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpinfer.errors import InvalidPrivacyParameterError, PrivacyWarning
from dpinfer.models.data_spec import DataSpec
from dpinfer.privacy import PrivacyRNG
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, LogisticRegression, PrivacyOptions, TrainingOptions
from dpinfer.release.dpvi.optim import count_noise_std, gradient_noise_multiplier
from glm_reference import reference_posterior, simulate

BETA = np.array([1.5, -2.0, 0.5])
SIGMA_EPS100 = 0.45099949836730957  # PLD, replace-one, q = 0.05, T = 1000, delta = 1e-5: eps = 100
SIGMA_EPS1 = 11.795616149902344  # the same plan at eps = 1
OLD = {"privacy": {"clip": 5.0, "clip_count": False}, "training": {"per_example": "elbo", "average": False}}
PREVIOUS = {"privacy": {"clip_quantile": 0.98}, "training": {"per_example": "likelihood", "mc_samples": 1}}


@pytest.fixture(scope="module")
def logistic_data():
    """The data alone: the fast tests compare no posterior, so they do not pay for the reference."""
    return simulate("logistic", 2000, BETA, 0)


@pytest.fixture(scope="module")
def logistic(logistic_data):
    """The data and the exact posterior's mean and sd (100 000 reference draws; the slow tests)."""
    X, y = logistic_data
    ref = reference_posterior("logistic", X, y, draws=100_000)
    return X, y, ref["mean"], ref["sd"]


def _fits(X, y, model, sigma, seeds, steps=1000, privacy=None, training=None):
    """Fits with σ = ``sigma`` (None: non-private); ``privacy``/``training``: fields of the groups."""
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        warnings.simplefilter("ignore", UserWarning)
        for s in seeds:
            p = dict(privacy or {})
            if sigma is not None:  # deterministic noise and batches: a reproducible test
                p["noise_multiplier"] = sigma
                prng = PrivacyRNG.insecure_deterministic(s)
                kw = dict(delta=1e-5, context=ReleaseContext(privacy_rng=prng))
            else:
                kw = dict(private=False)
            out.append(DPVI(model).fit(
                X, y, privacy=PrivacyOptions(**p), training=TrainingOptions(steps=steps, **(training or {})),
                seed=s, **kw, data=DataSpec(intercept=False),
            ))
    return out


def _z(fits, mean, sd):
    """Mean over the fits of the standardised mean error, and of the sd ratio."""
    z = np.mean([(f.mean() - mean) / sd for f in fits], axis=0)
    r = np.mean([f.std / sd for f in fits], axis=0)
    return z, r


@pytest.mark.slow  # issue 25: moved to `make test-all` for a <= 4 min fast suite
def test_default_fit_is_the_posterior_at_eps_100_and_the_old_default_is_not(logistic):
    X, y, mean, sd = logistic
    z, r = _z(_fits(X, y, LogisticRegression(3), SIGMA_EPS100, range(8)), mean, sd)
    assert np.all(np.abs(z) < 0.25), z
    assert np.all(np.abs(np.log(r)) < np.log(1.25)), r
    # known-broken: clip-after-scaling (the DPVI paper's split) lands ~18 sd away
    z_old, _ = _z(_fits(X, y, LogisticRegression(3), SIGMA_EPS100, range(2), **OLD), mean, sd)
    assert np.max(np.abs(z_old)) > 5.0, z_old
    # known-broken: the previous default (noise on the scale parameters at full size, one draw,
    # 2% of the rows clipped) is about 0.6 sd off
    z_prev, _ = _z(_fits(X, y, LogisticRegression(3), SIGMA_EPS100, range(2), **PREVIOUS), mean, sd)
    assert np.max(np.abs(z_prev)) > 0.25, z_prev


@pytest.mark.slow  # issue 25: moved to `make test-all` for a <= 4 min fast suite
def test_default_fit_at_eps_1_is_within_two_sd(logistic):
    X, y, mean, sd = logistic
    fits = _fits(X, y, LogisticRegression(3), SIGMA_EPS1, range(4))
    z, _ = _z(fits, mean, sd)
    assert np.all(np.abs(z) < 2.0), z
    z_old, _ = _z(_fits(X, y, LogisticRegression(3), SIGMA_EPS1, range(2), **OLD), mean, sd)
    assert np.max(np.abs(z_old)) > 5.0, z_old
    # the private clipped fraction is reported and sits near 1 - 0.995
    d = fits[0].privacy.details
    assert d["clip"] == "auto" and "clipped_fraction_trace" not in d  # per-step counts: not kept
    assert abs(d["clipped_fraction"] - 0.005) < 0.03
    assert d["gradient_noise_multiplier"] > SIGMA_EPS1  # sigma_Delta > sigma: the count's share


@pytest.mark.slow  # issue 25: moved to `make test-all` for a <= 4 min fast suite
def test_non_private_default_does_not_clip(logistic):
    X, y, mean, sd = logistic
    a = _fits(X, y, LogisticRegression(3), None, [0])[0]
    b = _fits(X, y, LogisticRegression(3), None, [0], privacy={"clip": None})[0]
    np.testing.assert_array_equal(a.params, b.params)
    c = _fits(X, y, LogisticRegression(3), None, [0], privacy={"clip": 0.01})[0]  # known-broken: tiny clip
    assert not np.array_equal(a.params, c.params)
    z, _ = _z([a], mean, sd)
    assert np.all(np.abs(z) < 1.0), z


def test_clipped_fraction_warning_with_a_numeric_clip(logistic_data):
    X, y = logistic_data
    kw = dict(delta=1e-5, training=TrainingOptions(steps=200), seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        with pytest.warns(UserWarning, match="were clipped"):
            tight = DPVI(LogisticRegression(3)).fit(
                X, y, privacy=PrivacyOptions(noise_multiplier=2.0, clip=0.005, clip_count=True), **kw,
                data=DataSpec(intercept=False),
            )
        assert tight.privacy.details["clipped_fraction"] > 0.7
        # known-good: a wide clip does not warn of clipping. sigma C = 100 swamps 200 steps, so the
        # noise and convergence diagnostics may fire (the release noise is the OS's: they did, now
        # and then, when every UserWarning was an error here); only the clipping warning is checked
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            wide = DPVI(LogisticRegression(3)).fit(
                X, y, privacy=PrivacyOptions(noise_multiplier=2.0, clip=50.0, clip_count=True), **kw,
                data=DataSpec(intercept=False),
            )
        assert not [w for w in caught if "were clipped" in str(w.message)]
        assert wide.privacy.details["clipped_fraction"] < 0.1
        # without the private count nothing is reported (never a non-private count)
        plain = DPVI(LogisticRegression(3)).fit(
            X, y, privacy=PrivacyOptions(noise_multiplier=2.0, clip=0.05), **kw,
            data=DataSpec(intercept=False)
        )
    assert "clipped_fraction" not in plain.privacy.details


def test_adaptive_clip_refused_where_n_is_secret(logistic_data):
    X, y = logistic_data
    with pytest.raises(InvalidPrivacyParameterError, match="replace-one"):
        DPVI(LogisticRegression(3)).fit(
            X, y, epsilon=1.0, delta=1e-5, privacy=PrivacyOptions(neighbouring="add-remove"),
            data=DataSpec(intercept=False),
        )
    with pytest.raises(InvalidPrivacyParameterError, match="clip must be"):
        DPVI(LogisticRegression(3)).fit(
            X, y, epsilon=1.0, delta=1e-5, privacy=PrivacyOptions(clip="adaptive"),
            data=DataSpec(intercept=False),
        )


def test_clip_quantile_rises_when_the_noise_is_small(logistic_data):
    """The default quantile is 0.999 when the public noise error per unit clip λ is <= 0.05 (here
    at ε = 100, λ = 0.016), 0.995 above (ε = 1, λ = 0.41); a given quantile is kept."""
    from dpinfer.release.dpvi.optim import default_clip_quantile, noise_error_per_clip

    assert noise_error_per_clip(SIGMA_EPS100, 0.05, 2000, 500, 3) == pytest.approx(0.0156, abs=1e-4)
    assert default_clip_quantile(noise_error_per_clip(SIGMA_EPS100, 0.05, 2000, 500, 3)) == 0.999
    assert default_clip_quantile(noise_error_per_clip(SIGMA_EPS1, 0.05, 2000, 500, 3)) == 0.995
    X, y = logistic_data  # 20 steps (10 averaged): lambda = 0.0156 sqrt(50) sigma / 0.45
    high, low, given = (
        _fits(X, y, LogisticRegression(3), s, [0], steps=20, **kw)[0].privacy.details["clip_quantile"]
        for s, kw in ((0.1, {}), (0.5, {}), (0.1, {"privacy": {"clip_quantile": 0.9}}))
    )
    assert (high, low, given) == (0.999, 0.995, 0.9)


def test_count_noise_and_the_single_gaussian_equivalence():
    for z, zb in [(1.0, 0.6), (0.5, 5.0), (11.8, 11.8)]:
        zd = gradient_noise_multiplier(z, zb)
        # Andrew et al. (2021) Thm 1: sigma_Delta^-2 + (2 sigma_b)^-2 = sigma^-2
        assert zd**-2 + (2 * zb) ** -2 == pytest.approx(z**-2)
        assert zd > z
    with pytest.raises(InvalidPrivacyParameterError, match="sigma/2"):
        gradient_noise_multiplier(2.0, 1.0)
    assert count_noise_std(100.0, 0.45) == 5.0 and count_noise_std(100.0, 11.8) == 11.8


def test_privacy_spent_during_training(logistic_data):
    X, y = logistic_data
    engine = DPVI(LogisticRegression(3))
    seen = {}

    def cb(t, _params):
        if t in (0, 9, 19):
            seen[t] = engine.privacy_spent()

    kw = dict(
        delta=1e-5,
        privacy=PrivacyOptions(noise_multiplier=1.5, clip=1.0, neighbouring="add-remove", accountant="rdp"),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        fit = engine.fit(X, y, training=TrainingOptions(steps=20, callback=cb), seed=0, **kw,
            data=DataSpec(intercept=False))
    assert 0 < seen[0] < seen[9] < seen[19]
    assert seen[19] == pytest.approx(fit.privacy.epsilon)
    assert engine.get_epsilon(1e-3) < seen[19]
    with pytest.raises(InvalidPrivacyParameterError):
        DPVI(LogisticRegression(3)).privacy_spent()


def test_clip_learning_rate_keeps_the_adaptive_clip_steady_under_a_noisy_count(logistic_data, monkeypatch):
    from dpinfer.release.dpvi import loop, optim

    assert optim.clip_learning_rate(100.0, 5.0) == 0.2  # Andrew et al.'s regime: sigma_b = qn/20
    assert optim.clip_learning_rate(100.0, 47.5) == pytest.approx(0.2 * 5.0 / 47.5)
    X, y = logistic_data
    traces = []  # the clip norms the optimizer held (a fit's report keeps no per-step trace)
    record = loop.clip_record
    monkeypatch.setattr(loop, "clip_record", lambda dp: (traces.append(list(dp.clip_trace)), record(dp))[1])

    def spread():  # 5-95% range of log C over steps 200-600 at the noise of eps = 0.12
        _fits(X, y, LogisticRegression(3), 47.529, [0], steps=600)
        c = np.log(traces[-1][200:])
        return np.percentile(c, 95) - np.percentile(c, 5)

    assert spread() < 0.5  # measured 0.17
    # known-broken: Andrew et al.'s fixed 0.2 with a count noise std of 0.47 per step
    monkeypatch.setattr(optim, "clip_learning_rate", lambda qn, sb, base=0.2: base)
    assert spread() > 1.0  # measured 2.31


def test_default_release_is_the_clipped_theta_gradient_sum(logistic_data, monkeypatch):
    """The default releases Σ clip(∇_θ log p(y_i | θ_s)) over the 4 draws (4·D entries, each row
    of norm <= C_t) plus N(0, (σ_Δ C_t)²); the (u, ω) gradient is computed from it afterwards."""
    from dpinfer.release.dpvi import optim

    X, y = logistic_data
    seen = []
    real = optim.DPOptimizer.privatize

    def spy(self, rows):
        clipped = self.clip(rows)
        seen.append((rows.shape[1], float(clipped.norm(dim=1).max()), float(self.clip_norm)))
        return real(self, rows)

    monkeypatch.setattr(optim.DPOptimizer, "privatize", spy)
    _fits(X, y, LogisticRegression(3), SIGMA_EPS1, [0], steps=20)
    assert all(width == 4 * 3 and top <= c * (1 + 1e-12) for width, top, c in seen)
    seen.clear()  # known-different: the "likelihood" split releases the 2D (u, ω) rows, 1 draw
    _fits(X, y, LogisticRegression(3), SIGMA_EPS1, [0], steps=20, training={"per_example": "likelihood"})
    assert {width for width, _, _ in seen} == {6}
