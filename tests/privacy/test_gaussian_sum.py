"""The Gaussian sum query of one DP-SGD step (dpinfer.privacy.mechanisms.gaussian_sum): the noise
law (sd σC, from the context's PrivacyRNG), the clipped sum, dtype handling, the private count and
the refusals; each statistical check has a known-broken variant it rejects."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from dpinfer.errors import InvalidPrivacyParameterError
from dpinfer.privacy import PrivacyRNG, ReleaseContext
from dpinfer.privacy.mechanisms.gaussian_sum import (
    add_gaussian_noise,
    clip_per_example,
    noisy_centred_count,
    noisy_clipped_sum,
)
from seeded_privacy_rng import prng


def _rows(seed=0, B=40, P=6):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, P, generator=g, dtype=torch.float64)
    return x * torch.logspace(-1, 1, B, dtype=torch.float64)[:, None]


def test_noise_of_a_clipped_sum_has_sd_sigma_C():
    sigma, C = 0.8, 2.5
    ctx = ReleaseContext(privacy_rng=prng(21))
    rows = _rows()
    centre = clip_per_example(rows, C).sum(0)
    draws = torch.stack(
        [noisy_clipped_sum(ctx, rows, clip=C, noise_multiplier=sigma) - centre for _ in range(5000)]
    ).numpy().ravel()  # 30 000 values
    n, target = draws.size, (sigma * C) ** 2
    assert abs(draws.var() - target) < 5 * target * np.sqrt(2.0 / n)
    assert abs(draws.mean()) < 5 * sigma * C / np.sqrt(n)
    assert stats.kstest(draws / (sigma * C), "norm").pvalue > 1e-3
    # known-broken variant: noise of sd σ (C forgotten) is rejected by the same check
    assert abs(draws.var() - sigma**2) > 5 * target * np.sqrt(2.0 / n)


def test_noise_keeps_the_float_type_and_device_of_the_sum():
    for dtype in (torch.float32, torch.float64):
        out = add_gaussian_noise(ReleaseContext(privacy_rng=prng(2)), torch.zeros(5, dtype=dtype), 1.0)
        assert out.dtype == dtype and out.device.type == "cpu"
    # an empty batch releases zeros plus noise
    ctx = ReleaseContext(privacy_rng=prng(2))
    out = noisy_clipped_sum(ctx, torch.zeros(0, 3, dtype=torch.float64), clip=1.0, noise_multiplier=1.0)
    assert out.shape == (3,) and bool(torch.all(out != 0))


def test_the_private_count_is_the_centred_count_plus_noise_of_sd_sigma_b():
    rows = _rows(2, B=40)
    C, sb = 1.0, 3.0
    inside = float((torch.linalg.vector_norm(rows, dim=1) <= C).sum())
    truth = inside - 0.5 * rows.shape[0]
    ctx = ReleaseContext(privacy_rng=prng(5))
    noise = np.array([noisy_centred_count(ctx, rows, clip=C, std=sb) - truth for _ in range(10000)])
    assert abs(noise.mean()) < 5 * sb / np.sqrt(noise.size)
    assert abs(noise.var() - sb**2) < 5 * sb**2 * np.sqrt(2.0 / noise.size)
    # known-broken variant: the uncentred count (Σ 1[‖g‖ ≤ C]) is off by B/2 = 20
    assert abs((noise + truth - inside).mean()) > 5 * sb / np.sqrt(noise.size)
    # a non-finite row counts as a zero row (inside the ball), never an error
    bad = rows.clone()
    bad[0, 0] = float("nan")
    noisy_centred_count(ctx, bad, clip=C, std=sb)


class _CountingRNG(PrivacyRNG):
    def __init__(self):
        super().__init__()
        self.words = 0

    def random_uint64(self, size=None):
        self.words += 1
        return super().random_uint64(size)


@pytest.mark.parametrize("clip, sigma", [(0.0, 1.0), (float("inf"), 1.0), (1.0, 0.0), (1.0, float("nan"))])
def test_bad_parameters_are_refused_before_any_draw(clip, sigma):
    rng = _CountingRNG()
    with pytest.raises(InvalidPrivacyParameterError):
        noisy_clipped_sum(ReleaseContext(privacy_rng=rng), _rows(), clip=clip, noise_multiplier=sigma)
    with pytest.raises(InvalidPrivacyParameterError):
        noisy_centred_count(ReleaseContext(privacy_rng=rng), _rows(), clip=clip, std=sigma)
    assert rng.words == 0


def test_noise_is_drawn_only_through_a_release_context():
    for bad in (PrivacyRNG(), 0, np.random.default_rng(0)):
        with pytest.raises(TypeError, match="ReleaseContext"):
            add_gaussian_noise(bad, torch.zeros(3), 1.0)
