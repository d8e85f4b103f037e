"""Gaussian sparse vector technique (Rényi DP): curve, accountants, calibration, ABCDP option, audit.

* The Rényi curve of :mod:`dpinfer.privacy.gaussian_svt` must dominate the exact Rényi divergence
  of worst-case neighbours (output law by Gauss-Hermite quadrature over the threshold noise,
  every ±Δ shift pattern, a grid of base distances).
* The empirical audit runs the real engine on neighbouring distance vectors many times and bounds
  the privacy loss of threshold events of a statistic from below by Clopper-Pearson intervals
  (Bonferroni over events and directions). The calibrated mechanism must pass; the broken variant
  whose noise is calibrated for c = 1 but which releases c = K answers (noise not growing with c)
  must be flagged (its certified loss is about 1.7 > ε = 1 at these sizes).
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy import stats

from dpinfer.distances import ClippedDistance, weighted_euclidean
from dpinfer.errors import CalibrationError, InferenceWarning, UnsupportedEventError
from dpinfer.privacy import (
    ADD_REMOVE,
    GaussianSparseVectorEvent,
    InsecureRandomnessWarning,
    InvalidPrivacyParameterError,
    Ledger,
    PrivacyRNG,
    calibrate_gaussian_svt,
    event_from_dict,
    event_to_dict,
    gaussian_svt_rdp,
    get_accountant,
    to_replace_one,
)
from dpinfer.privacy.context import ReleaseContext
from dpinfer.privacy.events import flatten
from dpinfer.privacy.mechanisms.svt import GaussianSparseVector
from dpinfer.release import ABCDPOptions, abcdp

_Z, _W = np.polynomial.hermite_e.hermegauss(160)
_W = _W / np.sqrt(2 * np.pi)


def prng(seed: int) -> PrivacyRNG:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        return PrivacyRNG.insecure_deterministic(seed)


def output_law(rho: np.ndarray, s1: float, s2: float) -> np.ndarray:
    """P(first acceptance at j), j < k, and P(none) for c = 1 (ρ in units of Δ, ε_abc = 0)."""
    z = s1 * _Z
    acc = stats.norm.cdf((z[:, None] - rho[None, :]) / s2)
    out, surv = [], np.ones_like(z)
    for j in range(rho.size):
        out.append(np.sum(_W * surv * acc[:, j]))
        surv = surv * (1 - acc[:, j])
    out.append(np.sum(_W * surv))
    return np.array(out)


def worst_renyi(k: int, s1: float, s2: float, alpha: float) -> float:
    best = 0.0
    for base in np.linspace(-2 * s2, 2 * s2, 7):
        rho = np.full(k, base)
        for pattern in itertools.product((-1.0, 1.0), repeat=k):
            p, q = output_law(rho, s1, s2), output_law(rho + np.array(pattern), s1, s2)
            for x, y in ((p, q), (q, p)):
                best = max(best, float(np.log(np.sum(x**alpha * y ** (1 - alpha))) / (alpha - 1)))
    return best


@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.parametrize(("s1", "s2"), [(0.5, 0.7), (1.0, 1.4), (2.0, 3.0)])
def test_curve_dominates_exact_renyi_divergence(k, s1, s2):
    orders = np.array([1.5, 2.0, 5.0, 20.0])
    curve = gaussian_svt_rdp(GaussianSparseVectorEvent(1, s1, s2, k), orders)
    for a, bound in zip(orders, curve, strict=True):
        exact = worst_renyi(k, s1, s2, a)
        assert exact <= bound, (k, s1, s2, a, exact, bound)
    # the exact divergence grows with k (the ln-term is not decorative)
    assert worst_renyi(4, s1, s2, 2.0) > worst_renyi(1, s1, s2, 2.0)


def test_curve_composition_and_closed_forms():
    orders = np.array([2.0, 10.0])
    one = gaussian_svt_rdp(GaussianSparseVectorEvent(1, 3.0, 4.0, 50), orders)
    expected = orders / 18 + np.log1p(50 * np.exp((orders - 1) * 2 * orders / 16)) / (orders - 1)
    np.testing.assert_allclose(one, expected, rtol=1e-12)
    rounds = gaussian_svt_rdp(GaussianSparseVectorEvent(3, 3.0, 4.0, 50, resample=True), orders)
    np.testing.assert_allclose(rounds, 3 * one, rtol=1e-12)
    single = gaussian_svt_rdp(GaussianSparseVectorEvent(1, 3.0, 4.0, 50, resample=False), orders)
    np.testing.assert_allclose(single, one, rtol=1e-12)
    # one threshold for c positives is cheaper than c rounds
    three = gaussian_svt_rdp(GaussianSparseVectorEvent(3, 3.0, 4.0, 50), orders)
    assert np.all(three < rounds)
    with pytest.raises(InvalidPrivacyParameterError):
        gaussian_svt_rdp(GaussianSparseVectorEvent(1, 3.0, 4.0, 50), np.array([1.0]))


def test_event_checks_accountants_and_conversion():
    ev = GaussianSparseVectorEvent(2, 5.0, 8.0, 100)
    assert 0 < get_accountant("rdp").epsilon(ev, 1e-6) < np.inf
    assert get_accountant("rdp").epsilon(ev, 0.0) == np.inf  # never pure DP
    for name in ("advanced", "pure"):
        with pytest.raises(UnsupportedEventError, match="'rdp'"):
            get_accountant(name).epsilon(ev, 1e-6)
    # the PLD accountant: a dominating PLD built from the same Rényi curve (privacy.dominating)
    rdp_eps, pld_eps = (get_accountant(n).epsilon(ev, 1e-6) for n in ("rdp", "pld"))
    assert rdp_eps <= pld_eps <= rdp_eps * 1.01
    assert event_from_dict(event_to_dict(ev)) == ev
    ar = GaussianSparseVectorEvent(2, 5.0, 8.0, 100, neighbouring=ADD_REMOVE)
    assert to_replace_one(ar) == GaussianSparseVectorEvent(2, 2.5, 4.0, 100)
    for bad in (dict(c=0), dict(c=101), dict(max_queries=1.5), dict(query_noise_multiplier=-1.0)):
        kw = dict(c=2, threshold_noise_multiplier=5.0, query_noise_multiplier=8.0, max_queries=100)
        with pytest.raises(InvalidPrivacyParameterError):
            GaussianSparseVectorEvent(**{**kw, **bad})


def test_calibration_is_tight_and_noise_grows_with_c_and_k():
    acc = get_accountant("rdp")
    ev = calibrate_gaussian_svt(1.0, 1e-6, 5, 1000)
    assert acc.epsilon(ev, 1e-6) <= 1.0
    less = GaussianSparseVectorEvent(5, ev.threshold_noise_multiplier * 0.999,
                                     ev.query_noise_multiplier * 0.999, 1000)
    assert acc.epsilon(less, 1e-6) > 1.0
    assert ev.query_noise_multiplier / ev.threshold_noise_multiplier == pytest.approx(np.sqrt(2 * np.sqrt(5)))
    s = [calibrate_gaussian_svt(1.0, 1e-6, c, k).query_noise_multiplier
         for c, k in ((1, 1000), (5, 1000), (5, 100_000))]
    assert s[0] < s[1] < s[2]
    # c·ln(k+1)/(α-1) = 1.35 at the grid's old top α = 1024; calibrated on the extended orders
    assert acc.epsilon(calibrate_gaussian_svt(1.0, 1e-6, 200, 1000, resample=True), 1e-6) <= 1.0
    with pytest.raises(CalibrationError):  # ... but not below 200·ln(1001)/(10⁵ - 1) ≈ 0.014
        calibrate_gaussian_svt(0.01, 1e-6, 200, 1000, resample=True)


def small_stream():
    dist = ClippedDistance(weighted_euclidean([1.0]), clip=1.0)
    rng = np.random.default_rng(0)
    observed = rng.uniform(size=(20, 1))
    sims = rng.uniform(size=(200, 20, 1)) * np.linspace(0.5, 3, 200)[:, None, None]
    thetas = np.linspace(0.5, 3, 200)[:, None]
    return observed, thetas, sims, dist


def test_abcdp_gaussian_option_reports_and_charges_rdp(tmp_path):
    observed, thetas, sims, dist = small_stream()
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=3.0, delta=1e-5, accountant="rdp")
    res = abcdp(
        observed, (thetas, sims), dist, c=3, epsilon_total=2.0, epsilon_abc=0.3, delta=1e-6,
        options=ABCDPOptions(noise="gaussian"),
        context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=prng(1)),
    )
    assert res.noise == "gaussian" and res.n_accepted == 3
    assert res.privacy.accountant == "rdp" and res.privacy.delta == 1e-6
    assert res.privacy.epsilon <= 2.0
    (ev,) = flatten(res.privacy.event)
    assert isinstance(ev, GaussianSparseVectorEvent) and ev.max_queries == 200 and ev.c == 3
    assert res.b == pytest.approx(ev.threshold_noise_multiplier * dist.sensitivity(observed.shape[0]))
    assert res.sigma_query == pytest.approx(res.b * ev.query_noise_multiplier / ev.threshold_noise_multiplier)
    assert len(ledger.history("d")) == 1
    # a PLD ledger accounts it too, through a dominating PLD of its Rényi curve
    pld = Ledger(tmp_path / "p.db", create=True)
    pld.register("d", epsilon=3.0, delta=1e-5, accountant="pld")
    abcdp(
        observed, (thetas, sims), dist, c=3, epsilon_total=2.0, epsilon_abc=0.3, delta=1e-6,
        options=ABCDPOptions(noise="gaussian"),
        context=ReleaseContext(ledger=pld, dataset="d", privacy_rng=prng(2)),
    )
    assert len(pld.history("d")) == 1
    for noise, delta in (("gaussian", 0.0), ("gaussian", 1.0), ("laplace", 1e-6), ("cauchy", 0.0)):
        with pytest.raises(InvalidPrivacyParameterError):
            abcdp(
                observed, (thetas, sims), dist, c=3, epsilon_total=2.0, epsilon_abc=0.3, delta=delta,
                options=ABCDPOptions(noise=noise), context=ReleaseContext(privacy_rng=prng(3)),
            )


class LyingSource:
    """Declares ``declared`` draws (what the noise is calibrated for) and yields all of them."""

    def __init__(self, thetas, sims, declared):
        self.thetas, self.sims, self.n_draws = thetas, sims, declared

    def batches(self):
        for a in range(0, len(self.thetas), 500):
            yield self.thetas[a:a + 500], self.sims[a:a + 500]


def test_gaussian_engine_enforces_its_query_limit():
    """The guarantee holds for at most max_queries answers (the ln C(k, i) term grows with k): the
    engine stops there itself. Answering all 5000 queries of noise calibrated for 2 is what the
    accountant prices at ε > 1.2 for the claimed 1 (broken: the limit left to the caller)."""
    ev = calibrate_gaussian_svt(1.0, 1e-6, 2, 2)
    eng = GaussianSparseVector.from_event(ev, 1.0, 0.0, prng(5))
    assert eng.max_queries == 2
    out = eng.process(np.full(5000, 100.0))  # far above the threshold: every answer is 0
    assert out.size == 2 and eng.done and eng.exhausted and eng.process(np.zeros(3)).size == 0
    acc = get_accountant("rdp")
    answered = GaussianSparseVectorEvent(2, ev.threshold_noise_multiplier, ev.query_noise_multiplier, 5000)
    assert acc.epsilon(ev, 1e-6) <= 1.0 < 1.2 < acc.epsilon(answered, 1e-6)
    with pytest.raises(InvalidPrivacyParameterError, match="max_queries"):
        GaussianSparseVector(1, 1.0, 1.0, 0.0, False, prng(5), max_queries=None)


def test_gaussian_abcdp_answers_at_most_the_declared_draws_of_a_lying_source(tmp_path):
    """A draw source declaring T = 2 and yielding 5000: ABCDP answers 2 queries (the number its
    noise is calibrated for), warns, and the ledger's single charge covers what was answered."""
    observed, thetas, sims, dist = small_stream()
    reps = 25  # 200 x 25 = 5000 draws
    source = LyingSource(np.tile(thetas, (reps, 1)), np.tile(sims, (reps, 1, 1)), 2)
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=1.0, delta=1e-5, accountant="rdp")
    with pytest.warns(InferenceWarning, match="declared n_draws = 2"):
        res = abcdp(
            observed, source, dist, c=2, epsilon_total=1.0, epsilon_abc=0.0, delta=1e-6,
            options=ABCDPOptions(noise="gaussian"),
            context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=prng(6)),
        )
    assert res.n_draws <= 2 and res.indicators.size <= 2
    (ev,) = flatten(res.privacy.event)
    assert ev.max_queries == 2 and res.privacy.epsilon <= 1.0
    assert len(ledger.history("d")) == 1 and ledger.spent("d") <= 1.0


# ---- empirical audit -------------------------------------------------------------------------
EPS, DELTA, K = 1.0, 1e-6, 200


def audit_statistic(c: int, s1: float, s2: float, rho: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Accepted among the first K/2 minus accepted among the last K/2, over n engine runs."""
    rng = prng(seed)
    out = np.empty(n)
    for r in range(n):
        eng = GaussianSparseVector(c, s1, s2, 0.0, False, rng, max_queries=K)
        ans = np.zeros(K)
        got = eng.process(rho)
        ans[: got.size] = got
        out[r] = ans[: K // 2].sum() - ans[K // 2 :].sum()
    return out


def certified_loss(x: np.ndarray, y: np.ndarray, delta: float, alpha: float = 1e-3) -> float:
    """Largest Clopper-Pearson lower bound on log((P(S|D) - δ)/P(S|D')) over S = {stat >= t}."""
    n1, n2 = x.size, y.size
    ts = np.arange(-K // 4, K // 4 + 1)
    a = alpha / (4 * ts.size)
    best = -np.inf
    for u, nu, v, nv in ((x, n1, y, n2), (y, n2, x, n1)):
        for t in ts:
            ku, kv = int((u >= t).sum()), int((v >= t).sum())
            lo = stats.beta.ppf(a, ku, nu - ku + 1) if ku > 0 else 0.0
            hi = stats.beta.ppf(1 - a, kv + 1, nv - kv) if kv < nv else 1.0
            if lo - delta > 0:
                best = max(best, float(np.log((lo - delta) / hi)))
    return best


@pytest.mark.slow
def test_privacy_audit_passes_calibrated_and_flags_noise_not_growing_with_c():
    rho = np.zeros(K)
    rho_prime = np.r_[-np.ones(K // 2), np.ones(K // 2)]  # every distance moved by Δ = 1
    n = 40_000
    good = calibrate_gaussian_svt(EPS, DELTA, K, K)
    x = audit_statistic(K, good.threshold_noise_multiplier, good.query_noise_multiplier, rho, n, 1)
    y = audit_statistic(K, good.threshold_noise_multiplier, good.query_noise_multiplier, rho_prime, n, 2)
    assert certified_loss(x, y, DELTA) <= EPS
    bad = calibrate_gaussian_svt(EPS, DELTA, 1, K)  # broken: calibrated for c = 1, releases c = K
    x = audit_statistic(K, bad.threshold_noise_multiplier, bad.query_noise_multiplier, rho, n, 3)
    y = audit_statistic(K, bad.threshold_noise_multiplier, bad.query_noise_multiplier, rho_prime, n, 4)
    loss = certified_loss(x, y, DELTA)
    assert loss > EPS, f"broken variant not flagged (certified loss {loss:.3f})"


def test_cli_abcdp_gaussian_noise(tmp_path, capsys):
    import json

    from dpinfer.cli import main

    thetas = np.linspace(0.0, 2.0, 300)[:, None]
    rng = np.random.default_rng(0)
    sims = thetas[:, :, None] + rng.normal(size=(300, 20, 1))
    np.savez(tmp_path / "sims.npz", theta=thetas, sims=sims)
    (tmp_path / "obs.csv").write_text("x\n" + "\n".join(f"{v:.6f}" for v in 1.0 + rng.normal(size=20)))
    ledger = tmp_path / "b.db"
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "d", "--epsilon", "5",
                 "--delta", "1e-5", "--accountant", "rdp", "--unbound"]) == 0
    base = ["abcdp", "--observed", str(tmp_path / "obs.csv"), "--simulations", str(tmp_path / "sims.npz"),
            "-c", "3", "--epsilon", "4", "--epsilon-abc", "0.3", "--distance", "exact", "--bandwidth", "1",
            "--ledger", str(ledger), "--dataset", "d", "--no-progress", "--noise", "gaussian"]
    assert main([*base, "--out", str(tmp_path / "r.json")]) == 2  # no --delta: refused, nothing charged
    assert "delta" in capsys.readouterr().err and Ledger(ledger).history("d") == []
    assert main([*base, "--delta", "1e-6", "--out", str(tmp_path / "r.json")]) == 0
    rel = json.loads((tmp_path / "r.json").read_text())
    assert rel["noise"] == "gaussian" and rel["privacy"]["accountant"] == "rdp"
    assert rel["privacy"]["events"][0]["type"] == "GaussianSparseVectorEvent"
    assert len(rel["accepted"]) == 3 and len(Ledger(ledger).history("d")) == 1
    # a pld budget accounts it too (a dominating PLD of its Rényi curve)
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "p", "--epsilon", "5",
                 "--unbound"]) == 0
    capsys.readouterr()
    argv = [*base, "--delta", "1e-6", "--out", str(tmp_path / "r2.json")]
    argv[argv.index("d", argv.index("--dataset"))] = "p"
    other = tmp_path / "obs2.csv"  # obs.csv's records are charged to 'd': other records for 'p'
    other.write_text((tmp_path / "obs.csv").read_text() + "\n1.000000\n")
    argv[argv.index(str(tmp_path / "obs.csv"))] = str(other)
    assert main(argv) == 0
    assert len(Ledger(ledger).history("p")) == 1
