"""The vectorised slice sampler of SPLE (:mod:`dpinfer.inference.neural.mcmc`) on a target with
known moments: a correlated bivariate normal (exact mean and covariance)."""

import numpy as np

from dpinfer.inference.neural.mcmc import run_mcmc

MEAN = np.array([1.0, -2.0])
COV = np.array([[1.0, 0.8], [0.8, 2.0]])
PREC = np.linalg.inv(COV)


def _log_prob(rows: list[int]):
    def lp(th: np.ndarray) -> np.ndarray:
        rows.append(th.shape[0])
        d = th - MEAN
        return -0.5 * np.einsum("ij,jk,ik->i", d, PREC, d)

    return lp


def test_slice_sampler_reaches_the_target_evaluating_only_active_chains():
    rows: list[int] = []
    init = np.random.default_rng(0).normal(size=(100, 2)) * 3.0  # overdispersed starts
    res = run_mcmc(_log_prob(rows), init, 4000, warmup=50, seed=1, scale=np.ones(2))
    d = res.draws
    # Monte Carlo errors from the effective sample size (per coordinate)
    se = np.sqrt(np.diag(COV) / res.ess)
    assert np.all(np.abs(d.mean(0) - MEAN) < 4 * se)
    sd = d.std(0)
    assert np.all(np.abs(sd / np.sqrt(np.diag(COV)) - 1) < 4 / np.sqrt(2 * res.ess) + 0.01)
    assert abs(np.corrcoef(d.T)[0, 1] - 0.8 / np.sqrt(2.0)) < 0.05
    assert np.max(res.rhat) < 1.05
    # chains that finished stepping out / shrinking are not evaluated again in that update
    assert min(rows) < 100 and max(rows) <= 200


def test_slice_sampler_moments_catch_a_wrong_target():
    """The moment check above fails for a sampler run on another target (a known-broken case)."""
    def wrong(th: np.ndarray) -> np.ndarray:
        d = th - MEAN - 0.3
        return -0.5 * np.einsum("ij,jk,ik->i", d, PREC, d)

    init = np.random.default_rng(0).normal(size=(100, 2))
    res = run_mcmc(wrong, init, 4000, warmup=50, seed=1, scale=np.ones(2))
    se = np.sqrt(np.diag(COV) / res.ess)
    assert not np.all(np.abs(res.draws.mean(0) - MEAN) < 4 * se)


def test_slice_sampler_on_a_truncated_target():
    """A half-normal in the first coordinate (density 0 below 0) times a normal in the second:
    exact mean sqrt(2/pi) and sd sqrt(1 - 2/pi) of the half-normal; every draw inside."""
    def lp(th: np.ndarray) -> np.ndarray:
        out = -0.5 * (th**2).sum(axis=1)
        return np.where(th[:, 0] >= 0, out, -np.inf)

    init = np.abs(np.random.default_rng(3).normal(size=(100, 2)))
    res = run_mcmc(lp, init, 4000, warmup=50, seed=4, scale=np.ones(2))
    d = res.draws
    assert np.all(d[:, 0] >= 0)
    mean, sd = np.sqrt(2 / np.pi), np.sqrt(1 - 2 / np.pi)
    assert abs(d[:, 0].mean() - mean) < 4 * sd / np.sqrt(res.ess[0])
    assert abs(d[:, 0].std() / sd - 1) < 4 / np.sqrt(2 * res.ess[0]) + 0.01
    assert abs(d[:, 1].mean()) < 4 / np.sqrt(res.ess[1])
