"""Private SMC-ABC with the Gaussian mechanism on the weights: target, sensitivity, composition."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpinfer.datasets.abcdp_data import load_covid_nl
from dpinfer.distances import RFFMMD, ExactMMD
from dpinfer.models.shipped.covid import CovidPolynomial
from dpinfer.models.shipped.mixture_uniform import MixtureOfUniforms
from dpinfer.privacy import (
    BudgetExceededError,
    GaussianEvent,
    InvalidPrivacyParameterError,
    Ledger,
    PrivacyWarning,
    calibrate_noise_multiplier,
    compose,
    get_accountant,
)
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release import gaussian_weights_smc_abc
from dpinfer.release.private_smc_gauss import weight_noise_std
from seeded_privacy_rng import prng


def run(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # test releases, no ledger
        return gaussian_weights_smc_abc(*args, **kw)


@pytest.fixture(scope="module")
def covid():
    """Reference: 60 000 prior draws and their exact-MMD distances to the COVID data."""
    _, observed = load_covid_nl()
    model = CovidPolynomial()
    dist = ExactMMD(900.0)
    thetas = model.prior_sample(60_000, np.random.default_rng(0))
    prep = dist.prepare(observed)
    sims = model.simulate(thetas)
    rho = np.concatenate([dist.batch(prep, sims[i:i + 4096]) for i in range(0, len(sims), 4096)])
    return observed, model, dist, thetas, rho


def kernel_abc(thetas, rho, h):
    w = np.exp(-(rho**2) / (2 * h * h))
    w /= w.sum()
    m = w @ thetas
    return m, np.sqrt(w @ (thetas - m) ** 2), 1.0 / np.sum(w**2)


@pytest.mark.parametrize("epsilon", [1e6, 500.0])
def test_last_population_matches_kernel_abc_with_the_noise_in_the_bandwidth(covid, epsilon):
    """The noisy weights target kernel ABC of bandwidth h_eff = √(h² + σ²) (module docstring).

    ε = 1e6 (σ negligible) and ε = 500 (σ ≈ 0.8 h); reference: importance sampling of 60 000
    prior draws. Broken variant caught at ε = 500: the kernel of bandwidth h alone (the noise
    not counted), whose sd of the last coordinate is > 25% narrower than what is released."""
    observed, model, dist, thetas, rho = covid
    res = run(observed, model, dist, n_particles=1000, n_populations=2, epsilon=epsilon, delta=1e-6, seed=1,
              context=ReleaseContext(privacy_rng=prng(1)))
    pop = res.populations[-1]
    m, sd, ref_ess = kernel_abc(thetas, rho, pop["h_eff"])
    z = (res.mean() - m) / (sd * np.sqrt(1 / res.ess + 1 / ref_ess))
    assert res.ess > 100 and np.all(np.abs(z) < 4)
    assert np.all(np.abs(res.sd() / sd - 1) < 0.2)
    assert res.n_simulations == 2000 and res.privacy.epsilon <= epsilon * (1 + 1e-9)
    if epsilon == 500.0:
        assert 0.5 < pop["sigma"] / pop["h"] < 1.5
        _, sd_h, _ = kernel_abc(thetas, rho, pop["h"])
        assert np.max(res.sd() / sd_h) > 1.25


def _worst_shift(M: int) -> tuple[float, float]:
    """Realised ||r - r'||₂ for a replaced record of the toy data (N = 20) over M public
    simulations, maximised over 50 candidate replacements; and the bound √M·Δρ."""
    model = MixtureOfUniforms(n_points=20)
    dist = RFFMMD(0.6, 100, seed=0)
    rng = np.random.default_rng(3)
    obs = model.observed(seed=1)
    sims = model.simulate(np.tile(model.theta_true, (M, 1)), rng)  # similar data sets: aligned
    prep = dist.prepare(obs)
    r = dist.batch(prep, sims)
    best = 0.0
    for v in np.linspace(-1.0, 6.0, 50):
        nb = obs.copy()
        nb[0, 0] = v
        best = max(best, float(np.linalg.norm(dist.batch(dist.prepare(nb), sims) - r)))
    return best, math.sqrt(M) * dist.sensitivity(obs.shape[0])


def _certified(sigma: float, shift: float, K: int) -> float:
    """ε at δ = 1e-6 of K Gaussian releases with noise σ against an L2 shift (RDP: the accountant
    of the discrete Gaussian's zCDP, CKS 2020 Thm 14)."""
    return get_accountant("rdp").epsilon(compose(*[GaussianEvent(sigma / shift)] * K), 1e-6)


def test_noise_covers_the_l2_sensitivity_of_all_particles_and_all_populations():
    """White-box accounting: the released σ, against the realised worst shift of the M distances
    (≤ the proven √M·Δρ, plus the grid's rounding), composed over K populations, meets (ε, δ).
    Broken variants caught: noise scaled by Δρ alone (not √M) and the calibration of one
    population used for K."""
    M, K, eps = 200, 3, 2.0
    shift, bound = _worst_shift(M)
    assert 0.3 * bound < shift <= bound * (1 + 1e-9)  # the √M bound holds, attained to 0.4
    model = MixtureOfUniforms(n_points=20)
    res = run(model.observed(seed=1), model, RFFMMD(0.6, 100, seed=0), n_particles=M, n_populations=K,
              epsilon=eps, delta=1e-6, seed=0, context=ReleaseContext(privacy_rng=prng(0)))
    d = res.privacy.details
    sigma, gamma = res.populations[0]["sigma"], d["grid"]
    # on the grid each coordinate moves by at most ⌈Δρ/γ⌉ units (|round(a) - round(b)| < |a - b|/γ + 1)
    rounded = math.sqrt(M) * math.ceil(bound / math.sqrt(M) / gamma) * gamma
    assert bound <= rounded < bound * (1 + 0.01)
    assert _certified(sigma, rounded, K) <= eps * (1 + 1e-6)
    assert _certified(sigma, shift, K) <= eps * (1 + 1e-6)
    assert res.privacy.accountant == "rdp" and res.privacy.epsilon <= eps * (1 + 1e-9)
    s = d["noise_multiplier"]
    assert _certified(s * bound / math.sqrt(M), shift, K) > 5 * eps  # broken: σ = s·Δρ
    s1 = calibrate_noise_multiplier(lambda x: GaussianEvent(x), eps, 1e-6, "rdp", rtol=1e-4)
    assert _certified(weight_noise_std(s1, bound / math.sqrt(M), M), bound, K) > 1.3 * eps  # broken: K = 1


def test_released_distances_are_on_the_public_grid():
    """The released r̃ = γ·(round(r/γ) + Z) are exact multiples of the public grid γ (floating-
    point safe); the old release r + N(0, σ²) in floating point is off every grid (broken)."""
    from dpinfer.privacy import ReleaseContext
    from dpinfer.privacy.mechanisms.gaussian_rounds import gaussian_rounds, release_gaussian_round

    plan = gaussian_rounds(2 / 20, 200, 3, 2.0, 1e-6)
    r = np.random.default_rng(0).uniform(0, 2, 200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        out = release_gaussian_round(r, plan, ReleaseContext(privacy_rng=prng(4)))
    units = out / plan.gamma
    assert np.all(units == np.round(units)) and np.all(np.abs(units) < 2.0**53)
    broken = r + plan.sigma * np.random.default_rng(1).standard_normal(200)
    assert np.mean((broken / plan.gamma) != np.round(broken / plan.gamma)) > 0.99


def test_composed_event_charged_before_release_and_bad_input(covid, tmp_path):
    observed, model, dist, _, _ = covid
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("c", epsilon=7.0, delta=1e-5, accountant="rdp")
    res = gaussian_weights_smc_abc(
        observed, model, dist, n_particles=50, n_populations=3, epsilon=6.0, delta=1e-6, seed=1,
        context=ReleaseContext(ledger=ledger, dataset="c", privacy_rng=prng(2)),
    )
    (entry,) = ledger.history("c")
    assert res.privacy.epsilon <= 6.0 * (1 + 1e-6) and len(res.privacy.events) == 3
    with pytest.raises(BudgetExceededError):  # two releases exceed 7: refused before anything runs
        gaussian_weights_smc_abc(
            observed, model, dist, n_particles=50, n_populations=3, epsilon=6.0, delta=1e-6,
            context=ReleaseContext(ledger=ledger, dataset="c", privacy_rng=prng(3)),
        )
    assert len(ledger.history("c")) == 1
    # a PLD ledger accounts the multivariate discrete Gaussian too (a dominating PLD of its zCDP
    # curve, privacy.dominating): charged once, at an ε no smaller than the release's RDP analysis
    # less the PLD's own composition gain
    pld = Ledger(tmp_path / "p.db", create=True)
    pld.register("c", epsilon=7.0, delta=1e-6, accountant="pld")
    gaussian_weights_smc_abc(
        observed, model, dist, n_particles=50, n_populations=3, epsilon=6.0, delta=1e-6,
        context=ReleaseContext(ledger=pld, dataset="c", privacy_rng=prng(3)),
    )
    assert len(pld.history("c")) == 1 and pld.spent("c") <= 7.0
    for m, k, eps, delta in ((1, 2, 1.0, 1e-6), (50, 0, 1.0, 1e-6), (50, 2, 1.0, 0.0), (50, 2, -1.0, 1e-6)):
        with pytest.raises(InvalidPrivacyParameterError):
            run(observed, model, dist, n_particles=m, n_populations=k, epsilon=eps, delta=delta)
    for kw in (dict(ess_fraction=1.0), dict(accountant="pld"), dict(batch_size=0)):
        with pytest.raises(InvalidPrivacyParameterError):
            run(observed, model, dist, n_particles=50, n_populations=2, epsilon=1.0, delta=1e-6, **kw)


def test_refused_inputs_are_not_charged(tmp_path):
    """Issue 23, finding 3: a 3-d observation against 1-d simulations, n_particles = 10^12 and other
    absurd sizes are refused before the charge (and before anything is allocated)."""
    from dpinfer.errors import InvalidDataError

    model = MixtureOfUniforms(n_points=50)
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("m", epsilon=1.0, delta=1e-5, accountant="rdp")
    kw = dict(context=ReleaseContext(ledger, "m", prng(4)))
    observed3 = np.random.default_rng(0).uniform(size=(50, 3))
    with pytest.raises(InvalidDataError, match="dimension"):
        gaussian_weights_smc_abc(
            observed3, model, RFFMMD(0.6, 20), n_particles=100, n_populations=2, epsilon=1.0, delta=1e-6,
            **kw,
        )
    observed = model.observed(seed=1)
    for m, k in ((10**12, 2), (100, 10**6), (2.5, 2)):
        with pytest.raises(InvalidPrivacyParameterError):
            gaussian_weights_smc_abc(
                observed, model, RFFMMD(0.6, 20), n_particles=m, n_populations=k, epsilon=1.0, delta=1e-6,
                **kw,
            )
    assert ledger.history("m") == [] and ledger.spent("m") == 0.0
