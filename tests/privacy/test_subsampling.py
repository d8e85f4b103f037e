"""The minibatch primitive of the privacy core (dpinfer.privacy.subsampling): its law, its exactness
and its refusals. Every statistical check runs on a fixed seeded PrivacyRNG and has a known-broken
variant that the same check rejects."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpinfer.errors import InvalidPrivacyParameterError
from dpinfer.privacy import PrivacyRNG, ReleaseContext
from dpinfer.privacy import discrete as dv
from dpinfer.privacy.subsampling import (
    bernoulli_mask,
    poisson_subsample,
    subsample,
    with_replacement_subsample,
)
from seeded_privacy_rng import prng

N, Q, REPS = 300, 0.1, 3000


def _binomial_chi2_pvalue(sizes: np.ndarray, n: int, q: float) -> float:
    """Chi-square p-value of batch sizes against Binomial(n, q), tails pooled so that every bin
    expects at least 5 batches."""
    reps = sizes.size
    pmf = stats.binom.pmf(np.arange(n + 1), n, q)
    lo = int(np.argmax(np.cumsum(pmf) * reps >= 5))
    hi = int(n - np.argmax(np.cumsum(pmf[::-1]) * reps >= 5))
    inner = np.arange(lo + 1, hi)
    obs = np.array([np.sum(sizes <= lo), *[np.sum(sizes == k) for k in inner], np.sum(sizes >= hi)])
    exp = np.array([pmf[: lo + 1].sum(), *pmf[inner], pmf[hi:].sum()]) * reps
    return float(stats.chisquare(obs, exp).pvalue)


def _sizes(draw, seed: int) -> np.ndarray:
    rng = prng(seed)
    return np.array([draw(rng).size for _ in range(REPS)])


def test_poisson_batch_sizes_are_binomial_and_a_misapplied_q_is_caught():
    sizes = _sizes(lambda rng: poisson_subsample(N, Q, rng), 101)
    p_ok = _binomial_chi2_pvalue(sizes, N, Q)
    assert p_ok > 1e-3, p_ok
    # mean and variance within 5 standard errors of nq = 30 and nq(1-q) = 27
    assert abs(sizes.mean() - N * Q) < 5 * np.sqrt(N * Q * (1 - Q) / REPS)
    assert abs(sizes.var() - N * Q * (1 - Q)) < 5 * N * Q * (1 - Q) * np.sqrt(2.0 / REPS)
    # known-broken variants: q misapplied (a rate 10% low) and the fixed size floor(qn)
    low = _sizes(lambda rng: poisson_subsample(N, 0.9 * Q, rng), 101)
    assert _binomial_chi2_pvalue(low, N, Q) < 1e-6
    fixed = _sizes(lambda rng: with_replacement_subsample(N, Q, rng), 102)
    assert (fixed == int(Q * N)).all()
    assert _binomial_chi2_pvalue(fixed, N, Q) < 1e-6


def test_every_record_is_included_with_probability_q():
    rng = prng(103)
    counts = np.zeros(N)
    for _ in range(2000):
        idx = poisson_subsample(N, Q, rng)
        assert idx.dtype == np.int64 and np.all(np.diff(idx) > 0)  # increasing, no repeats
        counts[idx] += 1
    assert stats.chisquare(counts).pvalue > 1e-3  # no record favoured
    total = counts.sum() / (2000 * N)
    assert abs(total - Q) < 5 * np.sqrt(Q * (1 - Q) / (2000 * N))
    # known-broken variant: the first half of the records twice as likely is rejected
    skewed = counts.copy()
    skewed[: N // 2] *= 2
    assert stats.chisquare(skewed).pvalue < 1e-6


def test_bernoulli_mask_is_the_one_word_comparison_for_every_dyadic_q_up_to_2_64():
    """Seeded fits stay bit-identical: for q = m/2^k with k <= 64 the mask is w < q·2^64 on the
    same words PrivacyRNG.bernoulli reads (including q = 0 and q = 1)."""
    for q in (0.0, 1e-3, 0.05, 1 / 3, 0.5, 0.999, 1.0, 2.0**-12):
        a = bernoulli_mask(5000, q, prng(7))
        b = prng(7).bernoulli(q, 5000)
        np.testing.assert_array_equal(a, b)


class _TieRNG(PrivacyRNG):
    """Returns fixed 64-bit words and fixed extra bits, to drive the tie branch of tiny q."""

    def __init__(self, words, extra):
        super().__init__()
        self._words, self._extra = list(words), list(extra)

    def random_uint64(self, size=None):
        out = np.array(self._words[:size], dtype=np.uint64)
        del self._words[:size]
        return out

    def randbits(self, k):
        return self._extra.pop(0)


def test_tiny_q_resolves_ties_with_the_remaining_bits_exactly():
    """q = 5/2^66 (k = 66 > 64): ⌊q·2^64⌋ = 1 with remainder 1/4. A word 0 is in, 2 is out, and the
    tie w = 1 is in exactly when the next 2 bits are below 1 (probability 1/4), so P = 5/2^66.
    Known-broken variant: the plain comparison w < ⌊q·2^64⌋ (P = 4/2^66) treats every tie as out."""
    q = 5 * 2.0**-66
    mask = bernoulli_mask(5, q, _TieRNG([0, 2, 1, 1, 1], [0, 1, 3]))
    assert mask.tolist() == [True, False, True, False, False]
    broken = np.array([0, 2, 1, 1, 1], dtype=np.uint64) < np.uint64(int(q * 2.0**64))
    assert broken.tolist() != mask.tolist()


def test_with_replacement_indices_are_uniform_and_of_size_floor_qn():
    rng = prng(104)
    draws = np.concatenate([with_replacement_subsample(50, 0.3, rng) for _ in range(4000)])
    assert draws.size == 4000 * 15 and draws.dtype == np.int64
    counts = np.bincount(draws, minlength=50)
    assert stats.chisquare(counts).pvalue > 1e-3
    # the public uniform_below is the private sampler: same draws from the same seed
    np.testing.assert_array_equal(dv.uniform_below(50, 100, prng(9)), dv._uniform_below_vec(50, 100, prng(9)))
    # known-broken variant: the top 6 bits of a word reduced mod 50 without rejection
    words = np.asarray(prng(105).random_uint64(draws.size))
    biased = np.bincount((words >> np.uint64(58)).astype(np.int64) % 50, minlength=50)
    assert stats.chisquare(biased).pvalue < 1e-6


class _CountingRNG(PrivacyRNG):
    def __init__(self):
        super().__init__()
        self.words = 0

    def random_uint64(self, size=None):
        self.words += 1
        return super().random_uint64(size)


@pytest.mark.parametrize(
    "n, q, scheme, error",
    [
        (-1, 0.1, "poisson", InvalidPrivacyParameterError),
        (10.5, 0.1, "poisson", InvalidPrivacyParameterError),
        (10, 1.5, "poisson", InvalidPrivacyParameterError),
        (10, float("nan"), "with-replacement", InvalidPrivacyParameterError),
        (10, "0.1", "poisson", InvalidPrivacyParameterError),
        (10, 0.1, "shuffle", InvalidPrivacyParameterError),
    ],
)
def test_bad_input_is_refused_before_any_draw(n, q, scheme, error):
    rng = _CountingRNG()
    with pytest.raises(error):
        subsample(ReleaseContext(privacy_rng=rng), n, q, scheme)
    assert rng.words == 0


def test_batches_are_drawn_only_through_a_release_context_or_a_privacy_rng():
    for bad in (PrivacyRNG(), 0, np.random.default_rng(0)):
        with pytest.raises(TypeError, match="ReleaseContext"):
            subsample(bad, 10, 0.1)
    for bad in (0, np.random.default_rng(0)):
        with pytest.raises(TypeError, match="PrivacyRNG"):
            poisson_subsample(10, 0.1, bad)
        with pytest.raises(TypeError, match="PrivacyRNG"):
            dv.uniform_below(10, 3, bad)
    with pytest.raises(ValueError):
        dv.uniform_below(0, 3, PrivacyRNG())
    # through a context the draw is the context's RNG: the same seed gives the same batch
    a = subsample(ReleaseContext(privacy_rng=prng(3)), 100, 0.2)
    np.testing.assert_array_equal(a, poisson_subsample(100, 0.2, prng(3)))
