"""The DP gradient step: clipping, the non-private limit, the noise law, Poisson batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from dpinfer.privacy import ReleaseContext
from dpinfer.privacy.mechanisms.gaussian_sum import noisy_clipped_sum
from dpinfer.release.dpvi import DPOptimizer, WindowedAdaGrad
from dpinfer.release.dpvi.sampling import draw_batch
from seeded_privacy_rng import prng


def _grads(seed=0, B=200, P=16):
    g = torch.Generator().manual_seed(seed)
    directions = torch.randn(B, P, generator=g, dtype=torch.float64)
    norms = torch.logspace(-2, 2, B, dtype=torch.float64)  # 0.01 .. 100
    return directions / directions.norm(dim=1, keepdim=True) * norms[:, None]


def _max_row_norm(x):
    return float(torch.linalg.vector_norm(x, dim=1).max())


def test_every_clipped_per_example_norm_is_at_most_C():
    G = _grads()
    for C in (0.1, 1.0, 5.0):
        out = DPOptimizer(WindowedAdaGrad(), C, 0.0, None).clip(G)
        assert _max_row_norm(out) <= C * (1 + 1e-12)
        small = torch.linalg.vector_norm(G, dim=1) <= C
        torch.testing.assert_close(out[small], G[small])  # rows within the ball are untouched
        cos = torch.nn.functional.cosine_similarity(out, G, dim=1)
        torch.testing.assert_close(cos, torch.ones_like(cos))  # direction kept
    # known-broken variant the check must catch: clipping each coordinate instead of the L2 norm
    assert _max_row_norm(torch.clamp(G, -5.0, 5.0)) > 5.0


def test_sigma_zero_and_no_clip_reproduce_the_non_private_update():
    G = _grads(1)
    params = torch.linspace(-1, 1, G.shape[1], dtype=torch.float64)
    dp = DPOptimizer(WindowedAdaGrad(0.1), None, 0.0, None)
    ref = WindowedAdaGrad(0.1)
    p_dp, p_ref = params.clone(), params.clone()
    for k in range(3):  # the window state must agree too
        Gk = G * (k + 1)
        p_dp = dp.step(p_dp, dp.privatize(Gk))
        p_ref = ref.step(p_ref, Gk.sum(0))
    torch.testing.assert_close(p_dp, p_ref, rtol=0, atol=0)
    # the closed-form AdaGrad update itself: p + lr g / sqrt(g^2 + 0.1) on the first step
    g = G.sum(0)
    torch.testing.assert_close(
        WindowedAdaGrad(0.1).step(params, g), params + 0.1 * g / torch.sqrt(g**2 + 0.1)
    )
    # with clipping the update differs (the check is not vacuous)
    dpc = DPOptimizer(WindowedAdaGrad(0.1), 1.0, 0.0, None)
    assert not torch.allclose(dpc.privatize(G), G.sum(0))


@pytest.mark.parametrize("sigma,C", [(0.7, 3.0), (2.0, 0.5)])
def test_zero_gradients_give_noise_with_variance_sigma2_C2(test_rng, sigma, C):
    dp = DPOptimizer(WindowedAdaGrad(), C, sigma, ReleaseContext(privacy_rng=test_rng))
    zeros = torch.zeros(50, 20, dtype=torch.float64)
    draws = torch.stack([dp.privatize(zeros) for _ in range(2000)]).numpy().ravel()  # 40 000 values
    n = draws.size
    var = draws.var()
    target = (sigma * C) ** 2
    # var of a sample variance of normals: 2 s^4 / n; 5 standard errors
    assert abs(var - target) < 5 * target * np.sqrt(2.0 / n)
    assert abs(draws.mean()) < 5 * sigma * C / np.sqrt(n)
    # normality (KS) and the known-broken variant sigma without C
    assert stats.kstest(draws / (sigma * C), "norm").pvalue > 1e-3
    assert abs(var - sigma**2) > 5 * target * np.sqrt(2.0 / n)


def test_noise_comes_from_the_privacy_rng_only():
    from dpinfer.privacy import PrivacyRNG

    a = DPOptimizer(WindowedAdaGrad(), 1.0, 1.0, ReleaseContext(privacy_rng=prng(1)))
    b = DPOptimizer(WindowedAdaGrad(), 1.0, 1.0, ReleaseContext(privacy_rng=prng(1)))
    c = DPOptimizer(WindowedAdaGrad(), 1.0, 1.0, ReleaseContext())  # OS entropy
    z = torch.zeros(3, 4, dtype=torch.float64)
    torch.testing.assert_close(a.privatize(z), b.privatize(z))
    assert not torch.allclose(a.privatize(z), c.privatize(z))
    with pytest.raises(ValueError):
        DPOptimizer(WindowedAdaGrad(), None, 1.0, ReleaseContext())  # noise without a clip norm
    with pytest.raises(ValueError):
        DPOptimizer(WindowedAdaGrad(), 1.0, 1.0, None)  # noise without a release context
    # a bare PrivacyRNG or a seed is refused: the noise is drawn through a ReleaseContext only
    for bad in (PrivacyRNG(), 0):
        with pytest.raises(TypeError, match="ReleaseContext"):
            DPOptimizer(WindowedAdaGrad(), 1.0, 1.0, bad)


def test_the_dp_optimizer_step_is_this_release_bit_for_bit():
    """DPVI's step (clip → sum → noise through the optimizer's ReleaseContext) is the privacy
    core's noisy_clipped_sum: the same seed gives the same bits."""
    rows = _grads(1, B=40, P=6)
    a = DPOptimizer(WindowedAdaGrad(), 1.0, 1.3, ReleaseContext(privacy_rng=prng(4))).privatize(rows)
    b = noisy_clipped_sum(ReleaseContext(privacy_rng=prng(4)), rows, clip=1.0, noise_multiplier=1.3)
    torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_poisson_batch_sizes_pass_a_chi_square_test():
    n, q, reps = 300, 0.1, 3000
    gen = torch.Generator().manual_seed(7)

    def chi2_pvalue(sizes):
        ks = np.arange(n + 1)
        pmf = stats.binom.pmf(ks, n, q)
        # pool the tails so that every bin expects >= 5 batches
        lo = int(np.argmax(np.cumsum(pmf) * reps >= 5))
        hi = int(n - np.argmax(np.cumsum(pmf[::-1]) * reps >= 5))
        edges = np.arange(lo, hi + 1)
        obs = np.array(
            [np.sum(sizes <= lo)] + [np.sum(sizes == k) for k in edges[1:-1]] + [np.sum(sizes >= hi)]
        )
        exp = np.array([pmf[: lo + 1].sum()] + list(pmf[edges[1:-1]]) + [pmf[hi:].sum()]) * reps
        return stats.chisquare(obs, exp).pvalue

    sizes = np.array([draw_batch(n, q, gen).numel() for _ in range(reps)])
    assert chi2_pvalue(sizes) > 1e-3
    # every record is equally likely to be included
    counts = np.zeros(n)
    for _ in range(2000):
        counts[draw_batch(n, q, gen).numpy()] += 1
    assert stats.chisquare(counts).pvalue > 1e-3
    # known-broken variant: fixed-size batches (the paper's) fail the Binomial test
    fixed = np.array([draw_batch(n, q, gen, "with-replacement").numel() for _ in range(reps)])
    assert (fixed == int(q * n)).all()
    assert chi2_pvalue(fixed) < 1e-6


def test_adaptive_clip_tracks_the_target_quantile_of_the_norms():
    """Andrew et al. (2021): C_t -> the gamma-quantile of the norms; the private count is an
    unbiased estimate of the unclipped fraction. Known-broken variant: adaptive=False stays put."""
    G = _grads(B=400)  # norms log-uniform on [0.01, 100]
    rng = ReleaseContext(privacy_rng=prng(5))
    dp = DPOptimizer(
        WindowedAdaGrad(),
        0.05,
        1.0,
        rng,
        count_noise=20.0,
        expected_batch=400.0,
        adaptive=True,
        target_quantile=0.9,
    )
    for _ in range(400):
        dp.privatize(G)
    target = float(np.quantile(torch.linalg.vector_norm(G, dim=1).numpy(), 0.9))
    assert abs(np.log(dp.clip_norm / target)) < np.log(1.3)
    assert abs(np.mean(dp.unclipped_trace[200:]) - 0.9) < 0.02
    assert dp.gradient_multiplier > 1.0  # sigma_Delta: room for the count noise
    fixed = DPOptimizer(WindowedAdaGrad(), 0.05, 1.0, rng, count_noise=20.0, expected_batch=400.0)
    for _ in range(50):
        fixed.privatize(G)
    assert fixed.clip_norm == 0.05 and np.mean(fixed.unclipped_trace) < 0.4
