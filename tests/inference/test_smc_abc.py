"""SMC-ABC against the exact Gaussian-mean private posterior; the naive posterior must fail."""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer.errors import InvalidDataError
from dpinfer.inference.smc.options import RunOptions
from dpinfer.inference.smc.result import SMCABCResult
from dpinfer.inference.smc.schedule import FixedSchedule, GeometricSchedule, QuantileSchedule
from dpinfer.inference.smc.smc_abc import SMCInterrupted, smc_abc
from dpinfer.models.shipped.gaussian_mean import GaussianMean
from dpinfer.results.weighted import weighted_quantile

OBS = [1.3]


@pytest.fixture(scope="module")
def setting():
    model = GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5, prior_sd=1.0, noise_sd=1.0)
    # 200 noise bins: its CDF is within 1.1e-5 (mean 7e-6) of the default 1000 bins' (measured), far
    # below the tolerances below, at a quarter of the quadrature's time
    exact = model.exact_posterior(OBS, bins=200)
    res = smc_abc(
        model,
        OBS,
        n_particles=2000,
        schedule=QuantileSchedule(alpha=0.5, min_tolerance=0.01, max_populations=20),
        backend="serial",
        seed=11,
    )
    return model, exact, res


def weighted_ks(x, w, cdf):
    """sup |F_w - F| for a weighted sample."""
    o = np.argsort(x)
    F = np.cumsum(w[o]) / w.sum()
    Fm = F - w[o] / w.sum()
    c = cdf(x[o])
    return float(max(np.max(np.abs(F - c)), np.max(np.abs(Fm - c))))


def posterior_check(mean, sd, ks, exact, n_eff):
    """The acceptance check, with tolerances from Monte Carlo error.

    Mean: 4 standard errors (sd/sqrt(ESS)) inflated by 1.5 for particle correlation; sd: 10 %
    (the ABC tolerance 0.01 adds 0.01²/3 to a variance of 0.1); KS: 1.5× the 5 % critical value
    1.36/sqrt(ESS).
    """
    se = exact.sd / np.sqrt(n_eff)
    return (
        abs(mean - exact.mean) < 1.5 * 4 * se
        and abs(sd / exact.sd - 1) < 0.10
        and ks < 1.5 * 1.36 / np.sqrt(n_eff)
    )


def test_smc_abc_recovers_exact_private_posterior(setting):
    model, exact, res = setting
    x, w = res.particles[:, 0], res.weights
    ks = weighted_ks(x, w, exact.cdf)
    assert res.ess > 1000
    assert posterior_check(float(res.mean()[0]), float(res.sd()[0]), ks, exact, res.ess), (
        res.mean(),
        res.sd(),
        ks,
        exact.mean,
        exact.sd,
    )
    lo, hi = res.interval()[0]
    elo, ehi = exact.interval()
    assert abs(lo - elo) < 0.1 and abs(hi - ehi) < 0.1


def test_naive_posterior_fails_the_same_check(setting):
    model, exact, res = setting
    naive = model.naive_posterior(OBS)
    draws = naive.sample(4000, 0)[:, 0]
    ks = weighted_ks(draws, np.ones_like(draws), exact.cdf)
    assert not posterior_check(float(naive.mean[0]), float(naive.sd[0]), ks, exact, res.ess)
    assert naive.sd[0] < 0.6 * exact.sd  # it ignores the privacy noise: far too confident


def test_smc_without_mechanism_fails_the_check(setting):
    """Known-broken variant: SMC-ABC on the confidential simulator (noise left out)."""
    model, exact, _ = setting

    class NoNoise(GaussianMean):
        def simulate(self, theta, seed=None, u=None):
            return self.simulate_confidential(self.prior.check_theta(theta), seed)

    broken = NoNoise(n=50, clamp=(-2.0, 2.0), epsilon=0.5)
    res = smc_abc(
        broken,
        OBS,
        n_particles=1000,
        schedule=QuantileSchedule(alpha=0.5, min_tolerance=0.01, max_populations=20),
        backend="serial",
        seed=3,
    )
    ks = weighted_ks(res.particles[:, 0], res.weights, exact.cdf)
    assert not posterior_check(float(res.mean()[0]), float(res.sd()[0]), ks, exact, res.ess)


def test_paper_schedule_and_diagnostics():
    sched = GeometricSchedule()
    tols = [sched.initial()]
    while (nxt := sched.next(len(tols) - 1, tols[-1], np.zeros(1), np.ones(1), 1.0)) is not None:
        tols.append(nxt)
    np.testing.assert_allclose(tols, [1.0, 0.7, 0.49, 0.343, 0.2401, 0.16807])
    model = GaussianMean(n=30, epsilon=1.0)
    res = smc_abc(model, [0.4], n_particles=200, schedule="paper", backend="serial", seed=1, batch_size=200)
    assert [round(p.tolerance, 5) for p in res.populations] == [1.0, 0.7, 0.49, 0.343, 0.2401, 0.16807]
    assert res.n_simulations == sum(p.n_simulations for p in res.populations)
    assert res.n_simulations >= 6 * 200
    assert np.all(res.distances <= 0.16807)
    assert res.complete and res.privacy is not None and res.privacy.epsilon == pytest.approx(1.0)
    np.testing.assert_allclose(res.weights.sum(), 1.0)


def test_save_load_roundtrip(tmp_path):
    model = GaussianMean(n=30, epsilon=1.0)
    res = smc_abc(
        model, [0.4], n_particles=200, schedule=[1.0, 0.3], backend="serial", seed=2, batch_size=100
    )
    path = res.save(tmp_path / "run")
    back = SMCABCResult.load(path)
    assert np.array_equal(back.particles, res.particles) and np.array_equal(back.weights, res.weights)
    assert back.populations == res.populations and back.param_names == ("theta",)
    assert len(back.history) == 2 and back.privacy.epsilon == res.privacy.epsilon


def test_to_arviz_is_lazy_and_clear():
    model = GaussianMean(n=30, epsilon=1.0)
    res = smc_abc(model, [0.4], n_particles=100, schedule=[1.0], backend="serial", seed=2, batch_size=100)
    try:
        import arviz  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="arviz"):
            res.to_arviz()
    else:
        idata = res.to_arviz()  # 4 chains of independent resamples, one draw per particle
        assert idata.posterior["theta"].shape == (4, 25)


def test_bad_input_is_refused():
    model = GaussianMean(n=30, epsilon=1.0)
    with pytest.raises(InvalidDataError, match="length 1"):
        smc_abc(model, [0.1, 0.2], n_particles=100, backend="serial")
    with pytest.raises(InvalidDataError, match="NaN"):
        smc_abc(model, [np.nan], n_particles=100, backend="serial")
    with pytest.raises(InvalidDataError, match="schedule"):
        smc_abc(model, [0.1], n_particles=100, schedule="fast", backend="serial")
    with pytest.raises(InvalidDataError, match="non-increasing"):
        FixedSchedule((0.1, 0.5))

    class Mismatch(GaussianMean):
        def simulate(self, theta, seed=None, u=None):
            return np.zeros((len(theta), 3))

    with pytest.raises(InvalidDataError, match="shape mismatch"):
        smc_abc(Mismatch(n=30), [0.1], n_particles=100, backend="serial")


def test_interrupted_run_keeps_completed_populations(tmp_path):
    class FailLate(GaussianMean):
        calls = 0

        def simulate(self, theta, seed=None, u=None):
            type(self).calls += 1
            if type(self).calls > 4:
                raise KeyboardInterrupt
            return super().simulate(theta, seed, u)

    ckpt = tmp_path / "ckpt.npz"
    with pytest.raises(SMCInterrupted) as info:
        smc_abc(
            FailLate(n=30),
            [0.2],
            n_particles=100,
            schedule=[2.0, 1.5, 1.0, 0.1],
            backend="serial",
            seed=0,
            batch_size=100,
            run=RunOptions(checkpoint=ckpt),
        )
    part = info.value.partial
    assert part is not None and not part.complete and "interrupted" in part.stop_reason
    assert info.value.interrupted
    assert 1 <= len(part.populations) < 4
    assert not SMCABCResult.load(ckpt).complete


def test_simulation_budget_stops_with_incomplete_result():
    model = GaussianMean(n=30, epsilon=1.0)
    res = smc_abc(
        model,
        [0.4],
        n_particles=100,
        schedule=[1.0, 0.3, 0.01, 0.001],
        backend="serial",
        seed=0,
        batch_size=100,
        max_simulations=3000,
    )
    assert not res.complete and "max_simulations" in res.stop_reason
    assert res.n_simulations <= 3000


def test_weighted_quantile_matches_unweighted():
    x = np.random.default_rng(0).standard_normal(10001)
    assert weighted_quantile(x, np.ones_like(x), 0.5) == pytest.approx(np.median(x), abs=1e-3)


@pytest.mark.slow
def test_smc_abc_agrees_with_da_mcmc_on_linear_regression():
    """SMC-ABC (tolerance limited by a simulation budget) vs the likelihood-based DA-MCMC, eps = 1."""
    from dpinfer.datasets.private_data import load_linreg
    from dpinfer.inference.exact.baselines import da_mcmc_linreg
    from dpinfer.models import LinearRegression

    d = load_linreg()
    model = LinearRegression(epsilon=1.0, x_mean=(0.90014, -1.17335))
    da = da_mcmc_linreg(model, d.observed(1.0), n_samples=4000, burn_in=2000, thin=10, seed=0)
    res = smc_abc(
        model,
        d.observed(1.0),
        n_particles=1000,
        schedule=QuantileSchedule(max_populations=25),
        backend="serial",
        seed=0,
        batch_size=5000,
        max_simulations=600_000,
    )
    assert np.all(np.abs(res.mean() - da.mean()) < 0.3 * da.sd())
    assert np.all(np.abs(res.sd() / da.sd() - 1) < 0.2)
