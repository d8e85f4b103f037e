"""SIR: exact Gillespie simulator (final-size equation) and the Proposition 4 mechanism."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import optimize, stats

from dpinfer.errors import InferenceWarning, InvalidDataError
from dpinfer.models.shipped.sir import SIR, BinomialTrajectoryMechanism, binom_ppf, gillespie_sir
from dpinfer.privacy import KnownEvent, Ledger
from dpinfer.privacy.context import ReleaseContext


def final_size(r0: float) -> float:
    """Root z in (0, 1) of z = 1 - exp(-R0 z)."""
    return optimize.brentq(lambda z: z - 1 + math.exp(-r0 * z), 1e-9, 1.0)


@pytest.mark.parametrize("r0", [5.0, 2.0])
def test_final_size_matches_final_size_equation(r0):
    K, gamma, reps = 20_000, 0.1, 300
    _, final = gillespie_sir(np.full(reps, r0 * gamma), gamma, K, times=[1e9], seed=int(r0 * 10))
    assert np.all(final[:, 1] == 0)  # every epidemic ended
    frac = 1.0 - final[:, 0] / K  # (K - S_inf)/K
    major = frac > 0.1
    # probability of a major outbreak ~ 1 - 1/R0 (branching-process approximation)
    p_major = 1 - 1 / r0
    assert abs(major.mean() - p_major) < 4 * math.sqrt(p_major * (1 - p_major) / reps) + 0.01
    z = final_size(r0)
    se = frac[major].std(ddof=1) / math.sqrt(major.sum())
    assert abs(frac[major].mean() - z) < 4 * se + 2.0 / K
    # known-broken check: the equation with the wrong R0 would be rejected
    assert abs(frac[major].mean() - final_size(r0 * 1.1)) > 4 * se + 2.0 / K


def test_simulator_seeded_parallel_and_recording():
    b = np.full(16, math.exp(-0.5))
    g = np.full(16, math.exp(-3))
    a1, f1 = gillespie_sir(b, g, 100_000, seed=3)
    a2, f2 = gillespie_sir(b, g, 100_000, seed=3)
    assert np.array_equal(a1, a2) and np.array_equal(f1, f2)
    assert np.all(a1[:, 0] == 1)
    assert len({tuple(r) for r in a1}) > 1  # independent streams
    # at most 2 events per individual; S + I never exceeds K
    assert np.all(f1[:, 2] <= 2 * 100_000) and np.all(a1 <= 100_000)
    with pytest.raises(InvalidDataError):
        gillespie_sir(-1.0, 0.1, 100)


def test_binomial_ppf_matches_scipy():
    rng = np.random.default_rng(0)
    u = rng.random(20_000)
    p = np.concatenate([rng.random(10_000), rng.uniform(0, 1e-3, 10_000)])
    assert np.array_equal(binom_ppf(u, 1000, p), stats.binom.ppf(u, 1000, p).astype(np.int64))


@pytest.mark.parametrize("K,N,d,eps", [(200, 50, 10, 5.0), (300, 1000, 10, 10.0), (100, 100, 3, 0.5)])
def test_proposition4_density_ratio_bound(K, N, d, eps):
    mech = BinomialTrajectoryMechanism(K, d, N, eps)
    I = np.arange(K)[:, None]
    k = np.arange(N + 1)[None, :]
    lp = stats.binom.logpmf(k, N, mech.probabilities(I))
    lq = stats.binom.logpmf(k, N, mech.probabilities(I + 1))
    worst = np.max(np.abs(lp - lq))
    bound = N * math.log1p(1 / mech.M)
    assert worst <= bound + 1e-9
    assert d * worst <= eps + 1e-9  # the d released points compose to the nominal epsilon
    assert mech.event().epsilon == pytest.approx(d * bound) and d * bound <= eps
    # known-broken variant: without the M shrinkage (p = I/K) the ratio is unbounded
    with np.errstate(divide="ignore"):
        raw = stats.binom.logpmf(k, N, I / K) - stats.binom.logpmf(k, N, (I + 1) / K)
    assert not np.all(np.abs(raw[np.isfinite(raw)]) <= bound) or np.any(~np.isfinite(raw))


def test_sir_release_and_observed_checks(tmp_path, test_rng):
    model = SIR(population=10_000, epsilon=10.0)
    assert model.mechanism.M == pytest.approx(1000.0)
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("outbreak", epsilon=10.0, accountant="pure")
    s = model.simulate_confidential(np.array([[-0.5, -3.0]]), 0)[0]
    rel = model.mechanism.release(s,
                                  context=ReleaseContext(ledger=ledger, dataset="outbreak",
                                                         privacy_rng=test_rng))
    assert rel.value.shape == (10,) and np.all((rel.value >= 0) & (rel.value <= 1))
    assert np.allclose(rel.value * 1000, np.rint(rel.value * 1000))
    assert isinstance(rel.privacy.events[0], KnownEvent)
    assert ledger.spent("outbreak") == pytest.approx(10 * 1000 * math.log1p(1e-3))
    with pytest.raises(InvalidDataError, match="length 10"):
        model.check_observed(np.zeros(9))
    with pytest.raises(InvalidDataError, match=r"\[0.0, 1.0\]"):
        model.check_observed(np.full(10, 1.5))
    with pytest.raises(InvalidDataError, match="integers"):
        model.mechanism.release(s + 0.5, context=ReleaseContext(privacy_rng=test_rng))
    real = SIR.real_outbreak()
    assert real.mechanism.M == pytest.approx(100.0)
    assert real.privacy_report().epsilon == pytest.approx(10 * 100 * math.log(1.01))
    # the published Guinea statistic is off the k/N grid: read as its nearest grid point, loudly
    guinea = [0.001, 0.01105, 0.00845, 0.0129, 0.05095, 0.052, 0.0224, 0.02115, 0.00835, 0.00225]
    with pytest.warns(InferenceWarning, match="not multiples of 1/N"):
        real.check_observed(guinea)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        real.check_observed(np.rint(np.array(guinea) * 100) / 100)


def test_hybrid_poisson_sampler_matches_poisson():
    from dpinfer.models.shipped.sir_tau_leap import _poisson
    from dpinfer.models.shipped.streams import stream_seeds

    state = stream_seeds(np.random.default_rng(0), 1)[0].copy()
    for mu in (0.7, 6.0, 30.0, 4000.0):
        draws = np.array([_poisson(mu, state) for _ in range(20000)])
        assert abs(draws.mean() - mu) < 4 * math.sqrt(mu / draws.size)
        assert abs(draws.var() / mu - 1) < 0.06
        if mu == 30.0:
            k = np.arange(10, 55)
            obs = np.array([(draws == v).sum() for v in k])
            exp = stats.poisson(mu).pmf(k) * draws.size
            assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-3


def test_hybrid_simulator_agrees_with_exact():
    from dpinfer.models.shipped.sir_tau_leap import hybrid_sir

    b, g, K, reps = math.exp(-0.5), math.exp(-3), 100_000, 400
    ex, _ = gillespie_sir(np.full(reps, b), g, K, seed=11)
    hy, _ = hybrid_sir(np.full(reps, b), g, K, seed=12)
    se = np.sqrt(ex.var(0) / reps + hy.var(0) / reps) + 1e-9
    assert np.all(np.abs(ex.mean(0) - hy.mean(0)) < 4 * se + 0.002 * K)
    assert np.all(hy[:, 0] == 1)
    # final size for a large R0
    _, final = hybrid_sir(np.full(200, 0.5), 0.1, 20_000, times=[1e9], seed=5)
    frac = 1 - final[:, 0] / 20_000
    major = frac > 0.1
    assert abs(frac[major].mean() - final_size(5.0)) < 4 * frac[major].std() / math.sqrt(major.sum()) + 1e-3
    model = SIR(population=K, simulator="hybrid")
    assert model.simulate(np.array([[-0.5, -3.0]]), 0).shape == (1, 10)
    with pytest.raises(InvalidDataError):
        SIR(simulator="ode")
