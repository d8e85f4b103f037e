"""Mechanisms for user models: densities against the released law, sensitivities, charging.

Each density is checked against draws of the inference map ``G`` and of the exact release (the
CSPRNG samplers) with a chi-square / KS test; the known-broken variant (the same mechanism with a
wrong sensitivity or ε) must be rejected on the same draws.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy import stats

from dpinfer.errors import InvalidDataError, PrivacyWarning
from dpinfer.models import (
    ComposedMechanism,
    GaussianMechanism,
    GeometricMechanism,
    LaplaceMechanism,
    RandomizedResponseMechanism,
    clamped_release,
)
from dpinfer.privacy import BudgetExceededError, ComposedEvent, Ledger, PrivacyRNG, analytic_gaussian_sigma
from dpinfer.privacy.context import ReleaseContext
from dpinfer.randomness import open_uniforms
from seeded_privacy_rng import prng


def _releases(mech, s, n):
    rng = prng(2024)  # seeded: the chi-square tests are reproducible
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return np.array([mech.release(s, context=ReleaseContext(privacy_rng=rng)).value for _ in range(n)])


def _chi2_pvalue(values, mech, s):
    """Chi-square p-value of integer draws against exp(mech.log_density(k, s)) (tails pooled)."""
    ks, counts = np.unique(values, return_counts=True)
    support = np.arange(ks.min() - 30, ks.max() + 31, dtype=float)
    pmf = np.exp(mech.log_density(support[:, None], np.broadcast_to(s, (support.size, 1))))
    assert pmf.sum() == pytest.approx(1.0, abs=1e-3)
    observed = np.zeros(support.size)
    observed[np.searchsorted(support, ks)] = counts
    expected = pmf / pmf.sum() * values.size
    keep = expected >= 5  # pool the cells with small expectation into one
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


def test_geometric_density_matches_G_and_the_exact_release_and_catches_a_wrong_sensitivity():
    mech = GeometricMechanism(1, sensitivity=2, epsilon=0.8)
    s = np.array([7.0])
    g = mech.G(np.broadcast_to(s, (40000, 1)), open_uniforms(np.random.default_rng(0), (40000, 1)))[:, 0]
    assert np.all(g == np.round(g))
    assert _chi2_pvalue(g, mech, s) > 1e-3
    rel = _releases(mech, s, 3000)[:, 0]
    assert _chi2_pvalue(rel, mech, s) > 1e-3
    broken = GeometricMechanism(1, sensitivity=1, epsilon=0.8)  # half the noise
    assert _chi2_pvalue(g, broken, s) < 1e-6
    assert _chi2_pvalue(rel, broken, s) < 1e-6
    assert mech.log_density(np.array([7.5]), s) == -np.inf  # non-integer output: impossible
    assert mech.privacy_report().epsilon == pytest.approx(0.8)
    with pytest.raises(InvalidDataError, match="integers"):
        mech.release([2.5], context=ReleaseContext(privacy_rng=PrivacyRNG()))
    with pytest.raises(InvalidDataError, match="integers"):
        mech.check_observed([3.2])


def test_randomized_response_density_matches_G_and_the_exact_release():
    mech = RandomizedResponseMechanism(n_records=30, epsilon=1.0)
    s = np.array([12.0])
    assert mech.p == pytest.approx(np.e / (1 + np.e), abs=1e-12) and mech.p <= np.e / (1 + np.e)
    k = np.arange(31.0)[:, None]
    assert np.exp(mech.log_density(k, np.broadcast_to(s, (31, 1)))).sum() == pytest.approx(1.0, abs=1e-12)
    g = mech.G(np.broadcast_to(s, (40000, 1)), open_uniforms(np.random.default_rng(1), (40000, 2)))[:, 0]
    assert _chi2_pvalue(g, mech, s) > 1e-3
    rel = _releases(mech, s, 2000)[:, 0]
    assert _chi2_pvalue(rel, mech, s) > 1e-3
    broken = RandomizedResponseMechanism(n_records=30, epsilon=3.0)  # claims less flipping
    assert _chi2_pvalue(g, broken, s) < 1e-6
    # the mean of the release is s·p + (n - s)(1 - p)
    assert g.mean() == pytest.approx(12 * mech.p + 18 * (1 - mech.p), abs=4 * g.std() / 200)
    with pytest.raises(InvalidDataError, match="outside the range"):
        mech.release([31.0], context=ReleaseContext(privacy_rng=PrivacyRNG()))


def test_gaussian_mechanism_is_analytically_calibrated_and_its_density_matches():
    mech = GaussianMechanism(1, l2_sensitivity=0.1, epsilon=1.0, delta=1e-5)
    sigma_c = analytic_gaussian_sigma(1.0, 1e-5, 0.1)
    assert sigma_c <= mech.sigma <= 1.01 * sigma_c  # the discrete calibration costs < 1 %
    s = np.array([0.3])
    g = mech.G(np.broadcast_to(s, (20000, 1)), open_uniforms(np.random.default_rng(2), (20000, 1)))[:, 0]
    wrong = GaussianMechanism(1, l2_sensitivity=0.05, epsilon=1.0, delta=1e-5)  # half the sensitivity
    assert stats.kstest(g, stats.norm(0.3, mech.sigma).cdf).pvalue > 1e-3
    assert stats.kstest(g, stats.norm(0.3, wrong.sigma).cdf).pvalue < 1e-6
    one = _releases(mech, s, 20)[:, 0]  # the exact discrete release lies on its grid
    np.testing.assert_array_equal(one / mech.grid.gamma, np.round(one / mech.grid.gamma))
    # the released law in d = 400 dimensions (vectorised exact sampler): 2000 draws, N(s, σ²) per coordinate
    wide = GaussianMechanism(400, l2_sensitivity=0.1, epsilon=1.0, delta=1e-5)
    rel = (_releases(wide, np.full(400, 0.3), 5) - 0.3).ravel()
    assert stats.kstest(rel, stats.norm(0, wide.sigma).cdf).pvalue > 1e-3
    assert stats.kstest(rel, stats.norm(0, wide.sigma / 2).cdf).pvalue < 1e-6
    x = np.array([[0.1], [0.7]])
    np.testing.assert_allclose(mech.log_density(x, s), stats.norm(0.3, mech.sigma).logpdf(x[:, 0]))
    report = mech.privacy_report()
    assert report.delta == 1e-5 and report.epsilon <= 1.0 + 1e-9
    assert wide.privacy_report().epsilon <= 1.0 + 1e-9 and wide.accountant == "rdp"


def test_composed_mechanism_splits_sums_densities_and_charges_one_composed_event(tmp_path):
    parts = [GeometricMechanism(1, 1, 0.5), LaplaceMechanism(2, 0.2, 0.5)]
    mech = ComposedMechanism(parts)
    assert (mech.stat_dim, mech.out_dim, mech.noise_dim) == (3, 3, 3)
    s = np.array([[4.0, 0.1, 0.2]])
    u = open_uniforms(np.random.default_rng(3), (1, 3))
    out = mech.G(s, u)
    np.testing.assert_array_equal(out[:, :1], parts[0].G(s[:, :1], u[:, :1]))
    np.testing.assert_array_equal(out[:, 1:], parts[1].G(s[:, 1:], u[:, 1:]))
    assert mech.log_density(out, s)[0] == pytest.approx(
        parts[0].log_density(out[:, :1], s[:, :1])[0] + parts[1].log_density(out[:, 1:], s[:, 1:])[0]
    )
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=1.5, accountant="pure")
    rel = mech.release(s[0], context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=PrivacyRNG()))
    assert rel.value.shape == (3,) and rel.value[0] == round(rel.value[0])
    assert ledger.spent("d") == pytest.approx(1.0)
    assert isinstance(mech.event(), ComposedEvent) and len(mech.event().events) == 2
    with pytest.raises(BudgetExceededError):
        mech.release(s[0], context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=PrivacyRNG()))
    before = len(ledger.history("d"))
    with pytest.raises(InvalidDataError, match="integers"):  # one bad block: nothing charged
        mech.release([4.5, 0.1, 0.2],
                     context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=PrivacyRNG()))
    assert len(ledger.history("d")) == before
    with pytest.raises(InvalidDataError, match="relation"):
        ComposedMechanism([GeometricMechanism(1, 1, 0.5, "add-remove"), LaplaceMechanism(1, 1.0, 0.5)])


def _worst_case(stat, relation, lo, hi, n):
    """max |stat(D) - stat(D')| over neighbouring data sets with records in a grid of [lo, hi]."""
    grid = np.linspace(lo, hi, 5)
    worst = 0.0
    for d in itertools.product(grid, repeat=n):
        d = np.array(d)
        if relation == "replace-one":
            for i, v in itertools.product(range(n), grid):
                e = d.copy()
                e[i] = v
                worst = max(worst, float(np.abs(stat(d) - stat(e)).sum()))
        else:
            for v in grid:
                worst = max(worst, float(np.abs(stat(d) - stat(np.append(d, v))).sum()))
    return worst


@pytest.mark.parametrize(
    ("statistic", "relation", "lo", "hi"),
    [("sum", "replace-one", -1.0, 3.0), ("sum", "add-remove", -1.0, 3.0), ("sum", "add-remove", -5.0, 2.0),
     ("mean", "replace-one", 0.0, 4.0)],
)
def test_clamped_release_sensitivity_is_the_worst_case_change(statistic, relation, lo, hi):
    n = 3
    rel = clamped_release(statistic, lo, hi, 1.0, n=n, neighbouring=relation)
    assert rel.neighbouring == relation

    def stat(d):
        return d.sum() if statistic == "sum" else d.mean()

    assert rel.sensitivity == pytest.approx(_worst_case(stat, relation, lo, hi, n))


def test_clamped_mean_under_add_remove_is_refused_because_its_naive_sensitivity_is_wrong():
    with pytest.raises(InvalidDataError, match="add-remove.*replace-one.*sum_and_count"):
        clamped_release("mean", 0.0, 4.0, 1.0, n=3, neighbouring="add-remove")
    # the known-broken variant it refuses: (hi - lo)/n with a nominal n = 3 understates the change,
    # since under add-remove the private data set may hold 1 record, whose neighbour moves the mean by 2
    naive = 4.0 / 3
    assert _worst_case(np.mean, "add-remove", 0.0, 4.0, 1) == pytest.approx(2.0)
    assert naive < 2.0
    both = clamped_release("sum_and_count", 0.0, 4.0, 1.0, neighbouring="add-remove", count_share=0.25)
    sums, counts = both.inner.parts
    assert sums.sensitivity == 4.0 and sums.epsilon == pytest.approx(0.75)
    assert counts.sensitivity == 1.0 and counts.epsilon == pytest.approx(0.25)
    x = np.array([[1.0, 5.0, -1.0], [2.0, 2.0, 2.0]])
    valid = [[True, True, True], [True, False, False]]
    np.testing.assert_allclose(both.statistic(x, valid=valid), [[5.0, 3.0], [2.0, 1.0]])


def test_clamped_release_statistic_release_and_refusals(tmp_path):
    rel = clamped_release("mean", 0.0, 10.0, 0.5, n=4, mechanism="gaussian", delta=1e-6)
    x = np.array([[-3.0, 2.0, 4.0, 30.0]])
    np.testing.assert_allclose(rel.statistic(x), [[4.0]])  # clamped to [0, 10] before averaging
    assert rel.sensitivity == pytest.approx(2.5)
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=1.0, delta=1e-5, accountant="pld")
    out = rel.release_records(x[0],
                              context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=PrivacyRNG()))
    assert out.value.shape == (1,) and out.privacy.accounted and len(ledger.history("d")) == 1
    with pytest.raises(InvalidDataError, match="public n = 4"):
        rel.statistic(np.ones((2, 5)))
    geo = clamped_release("sum", 0, 20, 1.0, n=50, mechanism="geometric")
    assert isinstance(geo.inner, GeometricMechanism) and geo.sensitivity == 20
    with pytest.raises(InvalidDataError, match="integer"):
        clamped_release("mean", 0, 20, 1.0, n=50, mechanism="geometric")
    with pytest.raises(InvalidDataError, match="delta"):
        clamped_release("mean", 0, 1, 1.0, n=5, mechanism="gaussian")
    with pytest.raises(InvalidDataError, match="needs the public number"):
        clamped_release("mean", 0, 1, 1.0)


def test_geometric_clamped_release_validates_each_record_whatever_the_sum(tmp_path):
    """Old behaviour: [0.5, 0.5, 3] (sum 4) was released, [0.5, 0.6, 3] (sum 4.1) refused with the
    sum printed: release or error depended on one record, and the refusal leaked the statistic."""
    rel = clamped_release("sum", 0, 5, 1.0, n=3, mechanism="geometric")
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", 5.0)
    for records in ([0.5, 0.5, 3.0], [0.5, 0.6, 3.0]):
        with pytest.raises(InvalidDataError, match="not integers") as err:
            rel.release_records(records,
                                context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=PrivacyRNG()))
        assert "4.1" not in str(err.value) and "0.5" not in str(err.value)
    assert ledger.history("d") == []
    out = rel.release_records([1.0, 2.0, 3.0],
                              context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=PrivacyRNG()))
    assert out.value[0] == round(out.value[0]) and len(ledger.history("d")) == 1
    assert rel.lattice.tolist() == [1.0]  # integer releases: neural estimators dequantize
    with pytest.raises(InvalidDataError, match="NaN or infinite"):
        clamped_release("mean", 0, 1, 1.0, n=2).release_records([0.5, np.nan],
                                                                context=ReleaseContext(privacy_rng=PrivacyRNG()))


def test_clamp_bounds_are_checked_against_the_public_data_range_not_the_records():
    # BMI (kg/m²) clamped to a standardised default: disjoint from the declared range, refused
    with pytest.raises(InvalidDataError, match="outside the data's declared range"):
        clamped_release("mean", -2.0, 2.0, 1.0, n=100, data_range=(10.0, 80.0))
    with pytest.warns(PrivacyWarning, match="cover 7%"):
        clamped_release("mean", 10.0, 15.0, 1.0, n=100, data_range=(10.0, 80.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok = clamped_release("mean", 15.0, 50.0, 1.0, n=100, data_range=(10.0, 80.0))
    assert ok.details()["data_range"] == [10.0, 80.0]
    # the check reads only public information: the same verdict whatever the records hold
    x = np.full(100, 25.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        assert ok.release_records(x, context=ReleaseContext(privacy_rng=PrivacyRNG())).value.shape == (1,)


def test_a_user_gaussian_mechanism_gets_a_report_under_the_default_accountant():
    """Old default accountant "pure": the report of a Gaussian user mechanism raised (SPPE crashed
    after training when it built the result's report)."""
    from dpinfer.models import Mechanism
    from dpinfer.privacy import GaussianEvent, get_accountant

    class UserGaussian(Mechanism):
        stat_dim = out_dim = noise_dim = 1
        neighbouring = "replace-one"
        delta = 1e-5

        def G(self, s, u):
            return s + 2.0 * stats.norm.ppf(u)

        def event(self):
            return GaussianEvent(2.0)

    report = UserGaussian().privacy_report()
    assert UserGaussian.accountant == "pld"
    assert report.epsilon == pytest.approx(get_accountant("pld").epsilon(GaussianEvent(2.0), 1e-5))


def test_a_report_that_cannot_be_computed_never_aborts_the_inference():
    from dpinfer.inference.exact.importance import mechanism_importance_sampling
    from dpinfer.models import Mechanism, PrivateDataModel, UniformPrior

    class NoEvent(Mechanism):
        stat_dim = out_dim = noise_dim = 1
        neighbouring = "replace-one"
        has_density = True
        name = "no event"

        def G(self, s, u):
            return s + stats.norm.ppf(u)

        def log_density(self, s_dp, s):
            return stats.norm.logpdf(np.asarray(s_dp) - np.asarray(s)).sum(-1)

        def event(self):
            raise NotImplementedError("this mechanism has no privacy analysis")

    def simulate(theta, rng):
        return theta + 0.1 * rng.standard_normal(theta.shape)

    model = PrivateDataModel(UniformPrior(0, 5), simulate, NoEvent())
    report = model.privacy_report()
    assert report.epsilon == np.inf and "no privacy analysis" in report.details["guarantee"]
    res = mechanism_importance_sampling(model, [2.0], n_theta=500, n_inner=5, seed=0, proposal="prior")
    assert res.privacy is not None and res.privacy.details["guarantee"].startswith("not computed")
    assert abs(float(res.mean()[0]) - 2.0) < 0.5
