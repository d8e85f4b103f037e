"""The floating-point-safe Gaussian embedding release (dpinfer.privacy.mechanisms.embedding):
its plan, the theorem it is accounted by, the release path and the public simulator."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import chi2, norm

from dpinfer.errors import InvalidDataError, InvalidPrivacyParameterError
from dpinfer.privacy import GaussianEvent, Ledger, PrivacyWarning, analytic_gaussian_epsilon
from dpinfer.privacy.accountants import get_accountant
from dpinfer.privacy.context import ReleaseContext
from dpinfer.privacy.discrete import sample_discrete_gaussian
from dpinfer.privacy.discrete_pmf import discrete_gaussian_logpmf
from dpinfer.privacy.events import DiscreteGaussianEvent
from dpinfer.privacy.mechanisms.embedding import (
    SMOOTHING_UNITS,
    computed_mean_sensitivity,
    embedding_grid,
    mean_rounding_error,
    public_discrete_gaussian,
    release_embedding,
    simulate_release,
)
from seeded_privacy_rng import prng


@pytest.mark.parametrize("n, d, eps", [(500, 100, 1.0), (18, 50_000, 44.0), (5, 2, 0.05), (10**6, 20, 3.0)])
def test_plan_meets_the_target_with_at_most_0_1_percent_more_noise(n, d, eps):
    """γ is a power of two from (Δ, D, σ) only; the rounded embedding's L2 sensitivity
    Δ/γ + √D is covered; σ_γ² − t² >= (s·Δ_γ)², so the charged GaussianEvent(s) is what the
    theorem certifies; ε of the event <= target; noise <= (1 + 2⁻⁹)× the continuous σ = s·Δ."""
    sens, delta = 2.0 / n, 1e-6
    plan = embedding_grid(sens, eps, delta, d)
    assert plan == embedding_grid(sens, eps, delta, d)  # deterministic in the public inputs
    assert math.frexp(plan.gamma)[0] == 0.5  # a power of two
    assert plan.sensitivity_units >= sens / plan.gamma + math.sqrt(d)
    assert math.sqrt(d) <= 2.0**-10 * sens / plan.gamma
    s = plan.noise_multiplier
    assert plan.sigma2_units - SMOOTHING_UNITS**2 >= (s * plan.sensitivity_units) ** 2
    assert isinstance(plan.event, GaussianEvent) and plan.event.noise_multiplier == s
    assert get_accountant("pld").epsilon(plan.event, delta) <= eps * (1 + 1e-9)
    assert 1.0 <= plan.sigma / (s * sens) <= 1 + 2.0**-9
    assert plan.noise_slack_log10 < -500


def test_discrete_gaussian_is_within_e_zeta_of_a_post_processed_continuous_gaussian():
    """The lemma of the theorem, by quadrature: K(G), G ~ N(0, s²) then N_Z(G, t²), has a pmf
    within e^{±ζ}, ζ = log((1+η)/(1−η)), of N_Z(0, s² + t²). Measured max|log ratio| at
    (s, t) = (1, 0.5): 3.3e-4 <= ζ = 0.029; at (1, 0.7): 1.8e-7 <= 2.5e-4."""

    def theta(g, t):
        m = np.arange(-60, 61)
        return np.sum(np.exp(-((m - g) ** 2) / (2 * t * t)))

    for s, t in [(1.0, 0.5), (1.0, 0.7), (2.0, 0.4)]:
        sigma2 = s * s + t * t
        eta = 2 * sum(math.exp(-2 * math.pi**2 * t * t * j * j) for j in range(1, 20))
        zeta = math.log((1 + eta) / (1 - eta))
        for n in range(-6, 7):
            def integrand(g, s=s, t=t, n=n):
                return norm.pdf(g, scale=s) * math.exp(-((n - g) ** 2) / (2 * t * t)) / theta(g, t)

            q = integrate.quad(integrand, -40, 40, limit=400, points=[n], epsabs=0, epsrel=1e-12)[0]
            log_p = float(discrete_gaussian_logpmf(n, sigma2))
            assert abs(math.log(q) - log_p) <= zeta, (s, t, n)


@pytest.mark.parametrize("sigma, sens", [(1.5, 1), (2.0, 1), (3.0, 2), (5.0, 3)])
def test_theorem_holds_against_the_exact_one_dimensional_discrete_gaussian_curve(sigma, sens):
    """CKS 2020 Thm 7 (exact curve of a 1-D discrete Gaussian, via the PLD accountant) against the
    theorem's continuous curve at multiplier √(σ² − t²)/Δ with t = 1 (slack (1 + e^ε)·2.1e-8).
    Broken variant caught: the continuous curve at σ/Δ itself (no t) is exceeded by the discrete
    mechanism at these parameters, e.g. σ = 1.5, Δ = 1, δ = 1e-3: ε 1.928 > 1.912."""
    acc = get_accountant("pld")
    naive_violated = False
    for delta in (1e-3, 1e-6):
        eps_discrete = acc.epsilon(DiscreteGaussianEvent(sigma, sens, 1), delta)
        slack = (1 + math.exp(eps_discrete)) * 2.1e-8
        assert eps_discrete <= analytic_gaussian_epsilon(math.sqrt(sigma**2 - 1) / sens, delta - slack)
        naive_violated |= eps_discrete > analytic_gaussian_epsilon(sigma / sens, delta) + 1e-3
    assert naive_violated


def test_release_is_on_the_grid_charged_once_and_refuses_bad_input_for_free(tmp_path):
    plan = embedding_grid(2.0 / 500, 1.0, 1e-5, 100)
    mu = np.random.default_rng(0).uniform(-0.14, 0.14, 100)
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=3.0, delta=1e-5, accountant="pld")
    ctx = ReleaseContext(ledger, "d", prng(0), "embedding")
    out = release_embedding(mu, plan, context=ctx)
    v = out / plan.gamma
    assert np.all(v == np.round(v)) and out.shape == (100,)
    assert np.abs(out - mu).max() < 8 * plan.sigma
    hist = ledger.history("d")
    assert len(hist) == 1 and "GaussianEvent" in str(hist[0]["event"])
    for bad in (mu[:99], np.where(np.arange(100) == 3, np.nan, mu), mu + 1e300, [[0.0] * 100]):
        with pytest.raises(InvalidDataError):
            release_embedding(bad, plan, context=ctx)
    assert len(ledger.history("d")) == 1
    with pytest.raises(InvalidPrivacyParameterError):
        embedding_grid(2.0 / 500, 1.0, 0.0, 100)
    for bad_d in (0, 2.5, [3], True):
        with pytest.raises(InvalidPrivacyParameterError):
            embedding_grid(2.0 / 500, 1.0, 1e-5, bad_d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        assert np.array_equal(release_embedding(mu, plan, context=ReleaseContext(privacy_rng=prng(0))), out)


def _chi2_pvalue(draws: np.ndarray, sigma2: float) -> float:
    """χ² goodness of fit of integer draws to N_Z(0, σ²), cells of |k| <= 2.5σ plus two tails."""
    lim = int(2.5 * math.sqrt(sigma2))
    ks = np.arange(-lim, lim + 1)
    p = np.exp(discrete_gaussian_logpmf(ks, sigma2))
    p = np.concatenate([[(1 - p.sum()) / 2], p, [(1 - p.sum()) / 2]])
    obs = np.concatenate([[np.sum(draws < -lim)], [np.sum(draws == k) for k in ks], [np.sum(draws > lim)]])
    stat = float(np.sum((obs - draws.size * p) ** 2 / (draws.size * p)))
    return float(chi2.sf(stat, p.size - 1))


def test_public_simulator_draws_the_released_noise_law():
    """The ABC simulator's noise is N_Z(0, σ²) like the release's: χ² against the exact pmf at
    σ² = 1, 7 and 40 (200 000 draws, p > 1e-3), the exact private sampler passes the same test,
    and the two agree in variance to Monte Carlo error. Broken variant caught: rounding a
    continuous N(0, σ²) (P(0) = 0.383 vs 0.399 at σ² = 1) fails the χ² test (p < 1e-10)."""
    rng = np.random.default_rng(3)
    for s2 in (1, 7, 40):
        pub = public_discrete_gaussian(s2, 200_000, rng)
        assert _chi2_pvalue(pub, s2) > 1e-3
        priv = sample_discrete_gaussian(s2, 200_000, prng(s2)).astype(np.float64)
        assert _chi2_pvalue(priv, s2) > 1e-3
        se = s2 * math.sqrt(2 / 200_000) * 1.5
        assert abs(pub.var() - priv.var()) < 4 * se
    rounded = np.round(rng.standard_normal(200_000))
    assert _chi2_pvalue(rounded, 1) < 1e-10
    big = public_discrete_gaussian(10**12, 100_000, rng)
    assert abs(big.std() / 1e6 - 1) < 4 * math.sqrt(0.5 / 100_000)
    assert np.all(big == np.round(big))


def test_simulated_releases_lie_on_the_release_grid():
    plan = embedding_grid(2.0 / 50, 2.0, 1e-6, 8)
    emb = np.random.default_rng(1).uniform(-0.5, 0.5, (1000, 8))
    sim = simulate_release(emb, plan, np.random.default_rng(2))
    v = sim / plan.gamma
    assert np.all(v == np.round(v))
    z = v - np.floor(emb / plan.gamma + 0.5)
    assert abs(z.std() / math.sqrt(plan.sigma2_units) - 1) < 4 * math.sqrt(0.5 / z.size)
    assert np.isnan(simulate_release(np.full((1, 8), np.nan), plan, np.random.default_rng(0))).all()


# ------------------------------------------------------------------------------------------------
# the sensitivity of the *computed* mean: rounding-error bounds of the accumulations
# ------------------------------------------------------------------------------------------------
U64 = Fraction(1, 2**53)


def _gamma(k: int, u: Fraction = U64) -> Fraction:
    return k * u / (1 - k * u)


def _exact(v: float) -> int:
    """A double in units of 2⁻¹⁰⁷⁴ (an exact integer)."""
    num, den = float(v).as_integer_ratio()
    return num * (2**1074 // den)


def _exact_mean(x: np.ndarray) -> list[Fraction]:
    """The exact mean embedding √(2/D)/N·Σ_i x_i of unscaled features x (N, D = 8: √(2/D) = ½)."""
    n, d = x.shape
    assert d == 8
    return [Fraction(_exact_sum(x[:, j]), 2**1075 * n) for j in range(d)]


def _exact_sum(col: np.ndarray) -> int:
    """Σ _exact(v) over ``col``: each distinct double once, times its count (the same integer)."""
    values, counts = np.unique(col, return_counts=True)
    return sum(_exact(v) * int(k) for v, k in zip(values, counts, strict=True))


def _computed(x: np.ndarray, accumulation: str, *, block: int = 64, bits: int = 40) -> np.ndarray:
    """The library's accumulations, emulated: ``"float64"`` sequential float64 sums (the numba
    kernels), ``"float32"`` float32 sums of blocks then float64 (rff_sums_fast32), ``"exact"``
    int64 sums of the features on the grid 2^-bits; then the scaling √(2/D)/N."""
    n, d = x.shape
    c = math.sqrt(2.0 / d) / n
    if accumulation == "float64":
        return np.add.accumulate(x, axis=0)[-1] * c
    if accumulation == "float32":
        pad = np.zeros((-n % block, d), dtype=np.float32)
        blocks = np.concatenate([x.astype(np.float32), pad]).reshape(-1, block, d)
        partial = np.add.accumulate(blocks, axis=1)[:, -1].astype(np.float64)
        return np.add.accumulate(partial, axis=0)[-1] * c
    k = np.rint(x * 2.0**bits).astype(np.int64).sum(axis=0)
    return k.astype(np.float64) * (c * 2.0**-bits)


def _adversarial_features(n: int, *, float32: bool) -> np.ndarray:
    """Cos/sin pairs (D = 8) built for large rounding errors: the cosines have repeating binary
    expansions (2/3 = 0.1010…₂, 0.6 = 0.10011001…₂, …), so every addition within a binade drops
    the same low-order bits and rounds the same way; the first half of the records add +c, the
    second half −c (the partial sums climb to ~N/2 and cancel back to ~0)."""
    dtype = np.float32 if float32 else np.float64
    c = np.array([2 / 3, 0.6, 0.9, 1 / 3], dtype=dtype).astype(np.float64)
    s = np.sqrt(1 - c * c).astype(dtype).astype(np.float64)
    x = np.tile(np.concatenate([c, s]), (n, 1))
    x[n // 2:, :4] *= -1
    return x


def _l2_error(computed: np.ndarray, exact: list[Fraction]) -> float:
    return math.sqrt(sum((Fraction(float(m)) - e) ** 2 for m, e in zip(computed, exact, strict=True)))


@pytest.mark.parametrize("accumulation", ["exact", "float64", "float32"])
def test_rounding_error_bound_holds_on_adversarial_features(accumulation):
    """||μ̂ − μ||₂ <= E(N, ρ, accumulation) against the exact (integer) mean of the same features.
    Measured at N = 65 543, D = 8 (error/E): exact 0.10, float64 0.058, float32 0.082: the
    adversarial features come within an order of magnitude of the worst case. Broken variant
    caught: the float64 and float32 accumulations charged as exact; their errors are 760 and
    5.6·10⁸ times the exact path's E."""
    n = 2**16 + 7
    x = _adversarial_features(n, float32=accumulation == "float32")
    if accumulation == "exact":
        x = np.rint(x * 2.0**40) * 2.0**-40  # the features the exact path sums (norm <= 1 + 2^-40.5)
    rho = 1.0 + (2.0**-22 if accumulation == "float32" else 2.0**-39)  # float32 features: 1 + 7e-9
    pair = np.sqrt(x[:, :4] ** 2 + x[:, 4:] ** 2)
    assert pair.max() <= 1.0 + (rho - 1.0) / 2  # ρ is a bound (with room for the check's rounding)
    err = _l2_error(_computed(x, accumulation), _exact_mean(x))
    bound = mean_rounding_error(n, feature_norm=rho, accumulation=accumulation)
    assert err <= bound, (err, bound)
    exact_bound = mean_rounding_error(n, feature_norm=rho, accumulation="exact")
    if accumulation != "exact":
        assert err > 10 * exact_bound, (err, exact_bound)  # mislabelled accumulation: caught


def test_float32_accumulation_exceeds_2_over_n_between_neighbours_and_its_bound_covers_it():
    """Neighbours (record 0 at angle 0 vs π − 10⁻⁴, the rest identical and adversarial), N = 2¹⁶ + 7:
    float32 blocks of 64 move the computed mean by more than 2/N (ignoring rounding: caught) and by
    more than the exact path's Δ̂ (float32 charged as exact: caught), and stay within their own
    2ρ/N + 2E. The exact path stays within its Δ̂. Measured relative to 2/N: float32 +9.5e-7,
    exact and float64 +1.25e-9 (the float32 features' own norm, inside ρ = 1 + 2⁻²²)."""
    n = 2**16 + 7
    worst = {"float32": 0.0, "exact": 0.0, "float64": 0.0}
    x = _adversarial_features(n, float32=True)
    for trial in range(6):
        a = np.array([[1.0] * 4 + [0.0] * 4])
        phi = math.pi - 10.0 ** -(4 + trial)
        b = np.array([[math.cos(phi)] * 4 + [math.sin(phi)] * 4], dtype=np.float32)
        for acc in worst:
            y, y2 = x.copy(), x.copy()
            y[0], y2[0] = a, b
            if acc == "exact":
                y, y2 = (np.rint(v * 2.0**40) * 2.0**-40 for v in (y, y2))
            d = float(np.linalg.norm(_computed(y, acc) - _computed(y2, acc)))
            worst[acc] = max(worst[acc], d)
    rho = 1.0 + 2.0**-22  # float32 features (pair norms <= 1 + 7e-9)
    assert worst["float32"] > 2.0 / n * (1 + 1e-7)
    assert worst["float32"] > computed_mean_sensitivity(n, feature_norm=rho, accumulation="exact")
    for acc, d in worst.items():
        assert d <= computed_mean_sensitivity(n, feature_norm=rho, accumulation=acc), (acc, d)


def test_computed_mean_sensitivity_is_the_proved_formula_rounded_up_and_refuses_bad_input():
    for n in (1, 5, 100, 10**6):
        for rho in (1.0, 1.0 + 2.0**-47):
            exact = 2 * Fraction(rho) / n + 2 * _gamma(5) * Fraction(rho)
            got = computed_mean_sensitivity(n, feature_norm=rho)
            assert Fraction(got) >= exact and Fraction(math.nextafter(got, 0.0)) < exact
            f64 = computed_mean_sensitivity(n, feature_norm=rho, accumulation="float64")
            assert Fraction(f64) >= 2 * Fraction(rho) / n + 2 * _gamma(n + 4) * Fraction(rho)
            g = _gamma(min(n, 64) - 1, Fraction(1, 2**24))
            e32 = (g + (1 + g) * _gamma(-(-n // 64) + 4)) * Fraction(rho)
            assert Fraction(mean_rounding_error(n, feature_norm=rho, accumulation="float32")) >= e32
    assert computed_mean_sensitivity(7, feature_norm=1.0) > 2.0 / 7
    for kw in (dict(n_records=0), dict(n_records=True), dict(n_records=2.0), dict(feature_norm=0.9),
               dict(feature_norm=math.nan), dict(feature_norm="x"), dict(accumulation="kahan"),
               dict(n_records=2**25, accumulation="float32", block=2**25), dict(block=0)):
        args = dict(n_records=10, feature_norm=1.0, accumulation="exact") | kw
        with pytest.raises(InvalidPrivacyParameterError):
            computed_mean_sensitivity(args.pop("n_records"), **args)
    with pytest.raises(InvalidPrivacyParameterError):  # float64 sums of 2^53 terms: N·u >= 1, no bound
        mean_rounding_error(2**53, feature_norm=1.0, accumulation="float64")


@pytest.mark.parametrize("n", [100, 500, 10**5, 10**6])
def test_noise_grows_negligibly_with_the_rounding_term(n):
    """σ of the plan at Δ̂ = 2ρ_N/N + 2γ₅ρ_N (ρ_N = 1 + 2⁻⁴⁷ + 3·2⁻⁽ᵇ⁺²⁾, the release's) against 2/N:
    measured σ ratio − 1 = 0 at N = 100, 500; <= 2.5e-10 at 10⁵, <= 5.7e-10 at 10⁶ (D = 50, 100,
    ε = 1); the same grid γ. The float32 kernel's accumulation charged instead would add 38% at
    N = 10⁵ and 376% at 10⁶ (why the release computes its mean exactly)."""
    for d in (50, 100):
        old = embedding_grid(2.0 / n, 1.0, 1e-6, d)
        rho = 1.0 + 2.0**-47 + 3.0 * 2.0 ** -(min(50, 62 - n.bit_length()) + 2)
        new = embedding_grid(computed_mean_sensitivity(n, feature_norm=rho), 1.0, 1e-6, d)
        assert new.gamma == old.gamma
        assert 0.0 <= new.sigma / old.sigma - 1 <= 1e-9
        if n <= 500:
            assert new.sigma2_units == old.sigma2_units  # seeded releases unchanged
    f32 = computed_mean_sensitivity(n, feature_norm=1.0, accumulation="float32") / (2.0 / n) - 1
    assert f32 > 3e-4 * n / 100
