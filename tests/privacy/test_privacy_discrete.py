"""Exact discrete Laplace / discrete Gaussian samplers (CKS 2020, Algorithms 1-3).

The goodness-of-fit tests compare binned draws with the exact pmf by a chi-square test; bins
reach into both tails (every expected count >= 5). Each test uses a fixed seed, and the known-broken
variants (wrong scale, Gaussian without its rejection step, rounded continuous Laplace) show that
the same check fails when the sampler is wrong.
"""

from __future__ import annotations

import math
import random
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpinfer.errors import InsecureRandomnessWarning, InvalidPrivacyParameterError
from dpinfer.privacy import discrete as ds
from dpinfer.privacy import discrete as dv
from dpinfer.privacy import discrete_pmf as dp
from dpinfer.privacy.discrete import bernoulli_exp, sample_discrete_gaussian, sample_discrete_laplace
from dpinfer.privacy.discrete_pmf import (
    discrete_gaussian_logpmf,
    discrete_laplace_cdf,
    discrete_laplace_logpmf,
)
from dpinfer.privacy.rng import PrivacyRNG

P_MIN = 1e-4  # a correct sampler fails a single check with probability 1e-4


def det_rng(seed: int, cls: type[PrivacyRNG] = PrivacyRNG) -> PrivacyRNG:
    with pytest.warns(InsecureRandomnessWarning):
        return cls.insecure_deterministic(seed)


# ----------------------------------------------------------------------------------------------
# chi-square machinery
# ----------------------------------------------------------------------------------------------
def _pool(edges: np.ndarray, masses: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Merge bins until every expected count is >= 5 (bin j: edges[j-1] < k <= edges[j])."""
    edges, masses = list(edges), list(masses)
    while len(masses) > 1 and min(masses) * n < 5:
        j = int(np.argmin(masses))
        if j == 0 or (j < len(masses) - 1 and masses[j + 1] < masses[j - 1]):
            masses[j : j + 2] = [masses[j] + masses[j + 1]]
            del edges[j]
        else:
            masses[j - 1 : j + 1] = [masses[j - 1] + masses[j]]
            del edges[j - 1]
    return np.asarray(edges), np.asarray(masses)


def _tail_quantiles(n: int, nbins: int = 40) -> np.ndarray:
    """Equal-probability quantiles plus far-tail ones (expected counts ~10, 30, 100)."""
    deep = np.array([10.0, 30.0, 100.0]) / n
    return np.unique(np.concatenate([np.arange(1, nbins) / nbins, deep, 1.0 - deep]))


def chisq_from_edges(samples: np.ndarray, edges: np.ndarray, cdf_at_edges: np.ndarray) -> float:
    """Chi-square p-value of the draws against bins (-inf, e0], (e0, e1], ..., (e_last, inf)."""
    n = samples.size
    masses = np.diff(np.concatenate([[0.0], cdf_at_edges, [1.0]]))
    edges, masses = _pool(edges, masses, n)
    counts = np.bincount(np.searchsorted(edges, samples.ravel(), side="left"), minlength=masses.size)
    expected = n * masses
    stat = float(np.sum((counts - expected) ** 2 / expected))
    return float(stats.chi2.sf(stat, masses.size - 1))


def chisq_enumerated(samples: np.ndarray, logpmf, half_width: int) -> float:
    """Chi-square p-value with bins built from the pmf enumerated on [-half_width, half_width]."""
    ks = np.arange(-half_width, half_width + 1)
    pmf = np.exp(logpmf(ks))
    assert abs(pmf.sum() - 1.0) < 1e-9  # the enumerated range holds all the mass
    cdf = np.cumsum(pmf)
    idx = np.searchsorted(cdf, _tail_quantiles(samples.size))
    idx = np.unique(np.clip(idx, 0, ks.size - 2))
    return chisq_from_edges(samples, ks[idx], cdf[idx])


def laplace_p(samples: np.ndarray, scale: float) -> float:
    if scale <= 1e4:
        hw = int(45 * scale) + 10
        return chisq_enumerated(samples, lambda k: discrete_laplace_logpmf(k, scale), hw)
    # huge scales: edges at continuous quantiles, masses from the exact closed-form CDF
    edges = np.unique(np.round(stats.laplace.ppf(_tail_quantiles(samples.size), scale=scale)))
    return chisq_from_edges(samples, edges, discrete_laplace_cdf(edges, scale))


def gaussian_p(samples: np.ndarray, sigma2: float) -> float:
    hw = int(40 * math.sqrt(sigma2)) + 10
    return chisq_enumerated(samples, lambda k: discrete_gaussian_logpmf(k, sigma2), hw)


# ----------------------------------------------------------------------------------------------
# goodness of fit: both paths, several scales
# ----------------------------------------------------------------------------------------------
LAPLACE_SCALES = [Fraction(3, 10), Fraction(1), Fraction(15, 2), Fraction(4096)]
GAUSS_SIGMA2 = [Fraction(1, 2), Fraction(4), Fraction(100), Fraction(1500**2)]
N_SCALAR = 20_000
N_VECTOR = 100_000


@pytest.mark.parametrize("scale", LAPLACE_SCALES, ids=str)
def test_laplace_scalar_path_fits(scale):
    x = ds._laplace_scalar(scale.numerator, scale.denominator, N_SCALAR, det_rng(1))
    assert x.dtype == np.int64
    assert laplace_p(x, float(scale)) > P_MIN


@pytest.mark.parametrize("scale", LAPLACE_SCALES, ids=str)
def test_laplace_vector_path_fits(scale):
    x = dv._laplace_vector(scale.numerator, scale.denominator, N_VECTOR, det_rng(2))
    assert laplace_p(x, float(scale)) > P_MIN


@pytest.mark.parametrize("sigma2", GAUSS_SIGMA2, ids=str)
def test_gaussian_scalar_path_fits(sigma2):
    x = ds._gaussian_scalar(sigma2.numerator, sigma2.denominator, N_SCALAR, det_rng(3))
    assert x.dtype == np.int64
    assert gaussian_p(x, float(sigma2)) > P_MIN


@pytest.mark.parametrize("sigma2", GAUSS_SIGMA2, ids=str)
def test_gaussian_vector_path_fits(sigma2):
    assert dv._gaussian_vectorisable(sigma2.numerator, sigma2.denominator)
    x = dv._gaussian_vector(sigma2.numerator, sigma2.denominator, N_VECTOR, det_rng(4))
    assert gaussian_p(x, float(sigma2)) > P_MIN


def test_public_api_float_scale_vectorised_and_fits():
    # float 0.3 is converted exactly: 5404319552844595 / 2**54, still vectorisable
    frac = Fraction(0.3)
    assert frac.denominator == 2**54 and dv._laplace_vectorisable(frac.numerator, frac.denominator)
    x = sample_discrete_laplace(0.3, (500, 200), det_rng(5))
    assert x.shape == (500, 200) and x.dtype == np.int64
    assert laplace_p(x, 0.3) > P_MIN


def test_public_api_gaussian_shapes_and_fit():
    x = sample_discrete_gaussian(Fraction(9, 4), (400, 250), det_rng(6))
    assert x.shape == (400, 250) and x.dtype == np.int64
    assert gaussian_p(x, 2.25) > P_MIN
    assert sample_discrete_gaussian(4, None, det_rng(7)).shape == ()
    assert sample_discrete_laplace(4, 0, det_rng(7)).shape == (0,)
    assert sample_discrete_laplace(4, (3, 0), det_rng(7)).shape == (3, 0)


def test_laplace_vector_overflow_fallback_is_exact():
    # t close to 2**61: X = U + t*V overflows int64 for V >= 3 (probability e^-3), those entries are
    # finished with Python integers; the scale (about 2**51) is at the public limit's order.
    scale = Fraction(2**61 + 1, 2**10)
    assert dv._laplace_vectorisable(scale.numerator, scale.denominator)
    assert (dv._INT64_MAX - scale.numerator) // scale.numerator == 2
    x = sample_discrete_laplace(scale, 60_000, det_rng(8))
    assert np.abs(x).max() > 3 * float(scale)  # the fallback was exercised
    assert laplace_p(x, float(scale)) > P_MIN


def test_gaussian_vector_python_int_fallback_is_exact(monkeypatch):
    # With a tiny limit most acceptance steps take the exact Python-integer branch.
    monkeypatch.setattr(dv, "_GAUSS_A_LIMIT", 32)
    x = dv._gaussian_vector(100, 1, 20_000, det_rng(9))
    assert gaussian_p(x, 100.0) > P_MIN


def test_non_vectorisable_parameters_use_scalar_path():
    # Fraction(0.3) as sigma2: 2*p*q*t^2 is far above 2**63
    s2 = Fraction(0.3)
    assert not dv._gaussian_vectorisable(s2.numerator, s2.denominator)
    x = sample_discrete_gaussian(0.3, 5000, det_rng(10))
    assert gaussian_p(x, 0.3) > P_MIN
    tiny = Fraction(1, 2**80)
    assert not dv._laplace_vectorisable(tiny.numerator, tiny.denominator)
    assert np.all(sample_discrete_laplace(tiny, 100, det_rng(10)) == 0)


# ----------------------------------------------------------------------------------------------
# known-broken variants fail the same check
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [Fraction(1), Fraction(4096)], ids=str)
def test_check_catches_laplace_with_wrong_scale(scale):
    wrong = scale * Fraction(105, 100)
    x = dv._laplace_vector(wrong.numerator, wrong.denominator, N_VECTOR, det_rng(11))
    assert laplace_p(x, float(scale)) < 1e-8


def test_check_catches_rounded_continuous_laplace():
    x = np.round(np.random.default_rng(0).laplace(0.0, 1.0, N_VECTOR)).astype(np.int64)
    assert laplace_p(x, 1.0) < 1e-8


def test_check_catches_gaussian_with_wrong_sigma():
    x = dv._gaussian_vector(110, 1, N_VECTOR, det_rng(12))
    assert gaussian_p(x, 100.0) < 1e-8


def test_check_catches_gaussian_without_rejection_step(monkeypatch):
    monkeypatch.setattr(dv, "_gauss_accept_vec", lambda absy, p, q, t, rng: np.ones(absy.size, bool))
    monkeypatch.setattr(ds, "_gauss_accept_scalar", lambda y, p, q, t, rng: True)
    x = dv._gaussian_vector(100, 1, N_VECTOR, det_rng(13))
    assert gaussian_p(x, 100.0) < 1e-8
    x = ds._gaussian_scalar(4, 1, N_SCALAR, det_rng(13))
    assert gaussian_p(x, 4.0) < 1e-8
    x = dv._gaussian_vector(1500**2, 1, N_VECTOR, det_rng(13))
    assert gaussian_p(x, 1500.0**2) < 1e-8


# ----------------------------------------------------------------------------------------------
# Bernoulli(exp(-gamma))
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("gamma", [Fraction(1, 2), Fraction(1), Fraction(5, 2), Fraction(7), Fraction(1, 3)])
def test_bernoulli_exp_frequency(gamma):
    rng = det_rng(14)
    n = 20_000
    hits = sum(bernoulli_exp(gamma, rng) for _ in range(n))
    p = math.exp(-float(gamma))
    assert stats.binomtest(hits, n, p).pvalue > P_MIN
    # a check with the wrong probability fails
    assert stats.binomtest(hits, n, math.exp(-1.1 * float(gamma))).pvalue < 1e-3


def test_bernoulli_exp_edge_values():
    rng = det_rng(15)
    assert all(bernoulli_exp(0, rng) for _ in range(200))
    assert not any(bernoulli_exp(Fraction(200), rng) for _ in range(200))


def test_vector_bernoulli_exp_mixed_gammas():
    den = 4
    nums = np.array([0, 1, 3, 4, 5, 13, 40], dtype=np.uint64)
    reps = 20_000
    draws = dv._bern_exp_vec(np.repeat(nums, reps), den, det_rng(16)).reshape(nums.size, reps)
    for num, row in zip(nums, draws, strict=True):
        p = math.exp(-int(num) / den)
        assert stats.binomtest(int(row.sum()), reps, p).pvalue > P_MIN, int(num)


@pytest.mark.parametrize("n", [2, 3, 7, 1000, 2**33 + 5, 2**62 + 1, 2**63])
def test_uniform_below_vec_is_uniform(n):
    u = dv._uniform_below_vec(n, 50_000, det_rng(17))
    assert u.dtype == np.uint64 and int(u.max()) < n
    width = -(-n // 16) if n > 1000 else 1  # 16 (almost) equal bins for huge n
    counts = np.bincount((u // np.uint64(width)).astype(np.int64))
    expected = np.full(counts.size, u.size * width / n)
    expected[-1] = u.size * (n - width * (counts.size - 1)) / n
    assert stats.chisquare(counts, expected).pvalue > P_MIN


def test_vector_bernoulli_exp_huge_denominator_product_form():
    # den*K > 2**63 from K = 2 on: Bernoulli(num/(den*K)) is drawn as Bernoulli(num/den)*Bernoulli(1/K)
    den = 2**62 + 1
    nums = [0, den // 3, den // 2, den, 2 * den + den // 2]
    reps = 20_000
    arr = np.repeat(np.array(nums, dtype=np.uint64), reps)
    draws = dv._bern_exp_vec(arr, den, det_rng(25)).reshape(len(nums), reps)
    for num, row in zip(nums, draws, strict=True):
        assert stats.binomtest(int(row.sum()), reps, math.exp(-num / den)).pvalue > P_MIN, num


# ----------------------------------------------------------------------------------------------
# pmfs and cdf
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [0.05, 0.3, 1.0, 7.5, 4096.0])
def test_laplace_pmf_sums_to_one_and_matches_direct(scale):
    ks = np.arange(-int(45 * scale) - 30, int(45 * scale) + 31)
    lp = discrete_laplace_logpmf(ks, scale)
    assert abs(math.fsum(np.exp(lp)) - 1.0) < 1e-12
    w = np.exp(-np.abs(ks) / scale)
    direct = np.log(w) - math.log(math.fsum(w))
    np.testing.assert_allclose(lp, direct, rtol=0, atol=1e-12 * max(1.0, np.abs(direct).max() / 100))


@pytest.mark.parametrize("sigma2", [0.01, 0.5, 1.0, 4.0, 100.0, 1500.0**2])
def test_gaussian_pmf_sums_to_one_and_matches_direct(sigma2):
    hw = int(40 * math.sqrt(sigma2)) + 10
    ks = np.arange(-hw, hw + 1)
    lp = discrete_gaussian_logpmf(ks, sigma2)
    assert abs(math.fsum(np.exp(lp)) - 1.0) < 1e-12
    w = -(ks.astype(float) ** 2) / (2 * sigma2)
    direct = w - math.log(math.fsum(np.exp(w)))
    center = np.abs(ks) <= 5 * math.sqrt(sigma2) + 1
    np.testing.assert_allclose(lp[center], direct[center], rtol=0, atol=1e-12)


@pytest.mark.parametrize("sigma2", [0.05, 0.5, 1.0, 2.0, 4.0, 25.0])
def test_gaussian_normaliser_direct_and_poisson_agree(sigma2):
    a = dp._dg_log_normaliser(sigma2, "direct")
    b = dp._dg_log_normaliser(sigma2, "poisson")
    assert abs(a - b) < 1e-13


def test_logpmf_off_support_and_shapes():
    assert discrete_laplace_logpmf(0.5, 1.0) == -np.inf
    assert discrete_gaussian_logpmf([[0, 1.5]], 1.0).shape == (1, 2)
    assert np.isfinite(discrete_laplace_logpmf(10**6, 1.0))
    # accepts a Fraction
    assert discrete_gaussian_logpmf(0, Fraction(1, 2)) == discrete_gaussian_logpmf(0, 0.5)


@pytest.mark.parametrize("scale", [0.3, 1.0, 7.5, 4096.0])
def test_laplace_cdf(scale):
    ks = np.arange(-int(45 * scale) - 5, int(45 * scale) + 6)
    cdf = discrete_laplace_cdf(ks, scale)
    pmf = np.exp(discrete_laplace_logpmf(ks, scale))
    np.testing.assert_allclose(np.diff(cdf), pmf[1:], rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(cdf, np.cumsum(pmf), rtol=0, atol=1e-12)
    assert np.all(np.diff(cdf) >= 0)
    assert discrete_laplace_cdf(-np.inf, scale) == 0.0 and discrete_laplace_cdf(np.inf, scale) == 1.0
    assert discrete_laplace_cdf(2.7, scale) == discrete_laplace_cdf(2, scale)
    assert discrete_laplace_cdf(-0.5, scale) == discrete_laplace_cdf(-1, scale)


# ----------------------------------------------------------------------------------------------
# input validation
# ----------------------------------------------------------------------------------------------
BAD = [float("nan"), float("inf"), -float("inf"), 0, 0.0, -1, Fraction(-1, 2), True, False, "1", None, 1j]


@pytest.mark.parametrize("bad", BAD, ids=repr)
def test_bad_parameters_rejected(bad):
    rng = det_rng(18)
    with pytest.raises(InvalidPrivacyParameterError, match="scale"):
        sample_discrete_laplace(bad, 3, rng)
    with pytest.raises(InvalidPrivacyParameterError, match="sigma2"):
        sample_discrete_gaussian(bad, 3, rng)
    with pytest.raises(InvalidPrivacyParameterError, match="scale"):
        discrete_laplace_logpmf(0, bad)
    with pytest.raises(InvalidPrivacyParameterError, match="sigma2"):
        discrete_gaussian_logpmf(0, bad)
    with pytest.raises(InvalidPrivacyParameterError, match="scale"):
        discrete_laplace_cdf(0, bad)
    if bad not in (0, 0.0) or isinstance(bad, bool):
        with pytest.raises(InvalidPrivacyParameterError, match="gamma"):
            bernoulli_exp(bad, rng)


def test_error_messages_say_what_to_do():
    with pytest.raises(InvalidPrivacyParameterError, match=r"Fraction\(3, 10\)"):
        sample_discrete_laplace(float("nan"), 3, det_rng(19))
    with pytest.raises(InvalidPrivacyParameterError, match="coarser release grid"):
        sample_discrete_laplace(2**53, 3, det_rng(19))
    with pytest.raises(InvalidPrivacyParameterError, match="coarser release grid"):
        sample_discrete_gaussian(2**101, 3, det_rng(19))


def test_bad_size_and_rng_rejected():
    with pytest.raises(ValueError, match="size"):
        sample_discrete_laplace(1, -1, det_rng(20))
    with pytest.raises(ValueError, match="size"):
        sample_discrete_gaussian(1, (2, -3), det_rng(20))
    with pytest.raises(TypeError, match="PrivacyRNG"):
        sample_discrete_laplace(1, 3, np.random.default_rng(0))
    with pytest.raises(TypeError, match="PrivacyRNG"):
        sample_discrete_gaussian(1, 3, 1234)


# ----------------------------------------------------------------------------------------------
# randomness source
# ----------------------------------------------------------------------------------------------
class IntegerOnlyRNG(PrivacyRNG):
    """A PrivacyRNG whose floating-point samplers raise: the exact samplers must not need them."""

    __slots__ = ()

    def _refuse(self, *args, **kwargs):
        raise AssertionError("exact samplers must only use integer draws")

    uniform = laplace = normal = bernoulli = exponential = _refuse


@pytest.mark.parametrize("deterministic", [True, False])
def test_only_integer_draws_and_no_global_rng(monkeypatch, deterministic):
    rng = det_rng(21, IntegerOnlyRNG) if deterministic else IntegerOnlyRNG()

    def boom(*args, **kwargs):
        raise AssertionError("global RNG used")

    for name in (
        "random", "rand", "randn", "randint", "random_sample", "random_integers", "standard_normal",
        "normal", "uniform", "laplace", "exponential", "geometric", "binomial", "choice", "bytes",
        "seed", "default_rng", "permutation", "shuffle",
    ):  # fmt: skip
        monkeypatch.setattr(np.random, name, boom)
    for name in ("random", "randrange", "randint", "getrandbits", "choice", "uniform", "seed", "choices"):
        monkeypatch.setattr(random, name, boom)
    sample_discrete_laplace(Fraction(15, 2), 10, rng)  # scalar path
    sample_discrete_laplace(Fraction(15, 2), 5000, rng)  # vector path
    sample_discrete_gaussian(100, 10, rng)
    sample_discrete_gaussian(100, 5000, rng)
    bernoulli_exp(Fraction(7, 3), rng)


def test_reproducible_with_seed_and_float_equals_fraction():
    a = sample_discrete_laplace(0.5, 1000, det_rng(22))
    b = sample_discrete_laplace(Fraction(1, 2), 1000, det_rng(22))
    np.testing.assert_array_equal(a, b)
    c = sample_discrete_laplace(0.5, 1000, det_rng(23))
    assert not np.array_equal(a, c)
    g1 = sample_discrete_gaussian(2.25, 50, det_rng(24))
    g2 = sample_discrete_gaussian(Fraction(9, 4), 50, det_rng(24))
    np.testing.assert_array_equal(g1, g2)


def test_os_rng_default_works():
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsecureRandomnessWarning)
        x = sample_discrete_gaussian(4, 200, None)
        y = sample_discrete_laplace(2, 200, PrivacyRNG())
    assert x.shape == y.shape == (200,)
    assert 2.0 < x.var() < 8.0
