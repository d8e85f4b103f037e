"""Known-noise mechanisms (issue 26, item 1): releases whose noise scale is published.

The census-style case: counts in five age bands with discrete Gaussian noise of σ = 10. Its law
(``G``, the pmf, the release) is checked against the discrete Gaussian pmf by chi-square, with the
known-broken reading of the published 10 as a variance (σ = √10) rejected on the same draws; its
privacy event is computed from σ and a declared sensitivity, and without one the report says the
guarantee is not computed and a release is refused.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from dpinfer.errors import InvalidDataError, InvalidPrivacyParameterError, PrivacyWarning
from dpinfer.models import GaussianMechanism, KnownNoiseMechanism
from dpinfer.privacy import DiscreteGaussianEvent, Ledger, get_accountant
from dpinfer.privacy.context import ReleaseContext
from dpinfer.privacy.discrete_pmf import discrete_gaussian_logpmf
from dpinfer.privacy.mechanisms.known import discrete_gaussian_ppf
from dpinfer.randomness import open_uniforms
from seeded_privacy_rng import prng

BANDS = np.array([120.0, 340.0, 515.0, 402.0, 77.0])  # counts in five age bands


def _chi2_pvalue(z, sigma2):
    """Chi-square p-value of integer noise draws ``z`` against N_Z(0, σ²) (tails pooled)."""
    ks, counts = np.unique(z, return_counts=True)
    reach = max(int(12 * math.sqrt(sigma2)) + 5, int(np.abs(ks).max()) + 5)
    support = np.arange(-reach, reach + 1)
    expected = np.exp(discrete_gaussian_logpmf(support, sigma2)) * z.size
    observed = np.zeros(support.size)
    observed[np.searchsorted(support, ks)] = counts
    keep = expected >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


def _quiet_release(mech, s, rng, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return mech.release(s, context=ReleaseContext(privacy_rng=rng), **kw)


def test_census_counts_with_published_sigma_have_the_discrete_gaussian_law_in_G_and_release():
    mech = GaussianMechanism.known(sigma=10, stat_dim=5, discrete=True, sensitivity=1)
    assert isinstance(mech, KnownNoiseMechanism) and mech.lattice.tolist() == [1.0] * 5
    u = open_uniforms(np.random.default_rng(0), (20000, 5))
    g = mech.G(np.broadcast_to(BANDS, (20000, 5)), u) - BANDS
    assert np.all(g == np.round(g))
    assert _chi2_pvalue(g.ravel(), 100.0) > 1e-3
    assert _chi2_pvalue(g.ravel(), 10.0) < 1e-6  # known-broken: the published 10 read as a variance
    rng = prng(11)
    rel = np.array([_quiet_release(mech, BANDS, rng).value for _ in range(1000)]) - BANDS
    assert np.all(rel == np.round(rel))
    assert _chi2_pvalue(rel.ravel(), 100.0) > 1e-3
    assert _chi2_pvalue(rel.ravel(), 10.0) < 1e-6
    # the density is the pmf (sums to one over the integers, -inf off them)
    k = np.arange(-150.0, 151.0)
    pmf = np.exp(mech.log_density(np.column_stack([k] + [np.zeros_like(k)] * 4), np.zeros(5)))
    assert pmf.sum() * np.exp(discrete_gaussian_logpmf(0, 100.0)) ** -4 == pytest.approx(1.0, abs=1e-12)
    assert mech.log_density(np.array([0.5, 0, 0, 0, 0]), np.zeros(5)) == -np.inf


def test_the_discrete_gaussian_quantile_is_exact_in_both_tails():
    sigma2 = 100.0
    ks = np.arange(-200, 201)
    pmf = np.exp(discrete_gaussian_logpmf(ks, sigma2))
    lower = np.cumsum(pmf)  # F(k), accurate in the lower tail
    upper = np.cumsum(pmf[::-1])[::-1]  # P(Z >= k), accurate in the upper tail
    for u in (2.0**-53, 1e-12, 0.01, 0.3, 0.5, 0.7, 0.99, 1 - 1e-12, 1 - 2.0**-53):
        k = int(discrete_gaussian_ppf(u, sigma2))
        i = k + 200
        if u <= 0.5:
            assert lower[i - 1] < u <= lower[i] * (1 + 1e-12), u
        else:  # F(k) >= u  <=>  P(Z > k) <= 1 - u, and not for k - 1
            assert upper[i + 1] <= (1 - u) * (1 + 1e-12) and upper[i] > 1 - u, u
    u = np.sort(np.random.default_rng(1).random(5000))
    assert np.all(np.diff(discrete_gaussian_ppf(u, sigma2)) >= 0)  # monotone
    assert discrete_gaussian_ppf(1e-15, sigma2) == pytest.approx(10 * stats.norm.ppf(1e-15), abs=1.0)


def test_the_event_is_computed_from_sigma_and_the_declared_sensitivity():
    five = GaussianMechanism.known(sigma=10, stat_dim=5, discrete=True, sensitivity=1, delta=1e-6)
    assert five.event() == DiscreteGaussianEvent(10.0, 1.0, 5)
    report = five.privacy_report()
    assert report.accountant == "rdp"
    expected = get_accountant("rdp").epsilon(DiscreteGaussianEvent(10.0, 1.0, 5), 1e-6)
    assert report.epsilon == pytest.approx(expected)
    rho = 1 / (2 * 10**2)  # ½(Δ/σ)²-zCDP (CKS 2020, Thm 14): the RDP curve is at least as tight
    assert report.epsilon <= rho + 2 * math.sqrt(rho * math.log(1e6)) + 1e-9
    one = GaussianMechanism.known(sigma=10, discrete=True, sensitivity=1, delta=1e-6)
    assert one.privacy_report().accountant == "pld"
    assert one.privacy_report().epsilon <= report.epsilon  # the exact 1-D curve (CKS Thm 7) is tighter
    # several published σ: the smallest one bounds the privacy loss (conservative)
    mixed = KnownNoiseMechanism.gaussian([10.0, 5.0, 20.0], 3, discrete=True, sensitivity=1)
    assert mixed.event().sigma == 5.0
    lap = KnownNoiseMechanism.laplace(4.0, 1, discrete=True, sensitivity=2)
    assert lap.privacy_report().epsilon == pytest.approx(0.5) and lap.privacy_report().accountant == "pure"
    with pytest.raises(InvalidPrivacyParameterError, match="integer sensitivity"):
        GaussianMechanism.known(sigma=10, discrete=True, sensitivity=1.5)


def test_without_a_sensitivity_the_guarantee_is_not_computed_and_a_release_is_refused(tmp_path):
    mech = GaussianMechanism.known(sigma=10, stat_dim=5, discrete=True)
    report = mech.privacy_report()  # the analyst's view: never raises
    assert report.epsilon == math.inf and report.events == ()
    guarantee = report.details["guarantee"]
    assert guarantee.startswith("not computed") and "sensitivity" in guarantee
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", 5.0)
    with pytest.raises(InvalidPrivacyParameterError, match="sensitivity"):
        mech.release(BANDS, context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=prng(0)))
    assert ledger.history("d") == []
    # inference needs only the law
    assert mech.simulate_release(np.broadcast_to(BANDS, (3, 5)), seed=0).shape == (3, 5)


def test_a_real_statistic_with_published_noise_is_released_on_a_grid_with_at_least_that_noise():
    s = np.array([0.3712345, -1.25, 4.0])
    for mech, law in [
        (KnownNoiseMechanism.gaussian(0.3, 3, sensitivity=0.1, delta=1e-5), stats.norm),
        (KnownNoiseMechanism.laplace(0.3, 3, sensitivity=0.1), stats.laplace),
    ]:
        assert mech.lattice is None and mech.gamma <= 0.3 * 2.0**-10
        assert np.all(mech.scale >= 0.3) and np.all(mech.scale <= 0.3 * (1 + 2.0**-19))
        rng = prng(3)
        rel = np.array([_quiet_release(mech, s, rng).value for _ in range(2000)])
        np.testing.assert_array_equal(rel / mech.gamma, np.round(rel / mech.gamma))  # on the grid
        z = (rel - s).ravel()
        assert stats.kstest(z, law(scale=mech.scale[0]).cdf).pvalue > 1e-3
        assert stats.kstest(z, law(scale=0.8 * mech.scale[0]).cdf).pvalue < 1e-6  # known-broken: less noise
    lap = KnownNoiseMechanism.laplace(0.3, 3, sensitivity=0.1)
    assert 0.1 / 0.3 <= lap.privacy_report().epsilon <= 0.1 / 0.3 * (1 + 2.0**-11)


def test_refusals_never_print_the_confidential_counts():
    mech = GaussianMechanism.known(sigma=10, stat_dim=5, discrete=True, sensitivity=1)
    with pytest.raises(InvalidDataError, match="integers") as err:
        mech.release([120.5, 340.0, 515.0, 402.0, 77.0], context=ReleaseContext(privacy_rng=prng(0)))
    assert "120.5" not in str(err.value) and "515" not in str(err.value)
    with pytest.raises(InvalidDataError, match=r"got \[1\.5"):  # observed releases are public
        mech.check_observed([1.5, 2, 3, 4, 5])
