"""ABCDP release="embedding": one Gaussian release of the RFF mean embedding, then free ABC."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import binom

from dpinfer.distances import RFFMMD, ExactMMD
from dpinfer.privacy import (
    BudgetExceededError,
    GaussianEvent,
    InvalidPrivacyParameterError,
    Ledger,
    PrivacyWarning,
    analytic_gaussian_epsilon,
)
from dpinfer.release import ArrayDraws, abcdp
from dpinfer.release.embedding import embed_batch, embedding_sensitivity
from seeded_privacy_rng import prng

N, EPS, DELTA = 5, 2.0, 1e-6
OBS = np.array([[1.0], [1.0], [1.0], [0.0], [1.0]])



@pytest.fixture(scope="module")
def bernoulli():
    """θ ~ U(0, 1), N = 5 Bernoulli(θ) records; 400 000 public draws."""
    rng = np.random.default_rng(0)
    theta = rng.uniform(size=(400_000, 1))
    sims = (rng.uniform(size=(400_000, N)) < theta).astype(np.float64)[:, :, None]
    return theta, sims


def exact_posterior(released: np.ndarray, dist: RFFMMD, sigma: float) -> tuple[float, float]:
    """p(θ | μ̃) ∝ Σ_k Binom(k; N, θ) N(μ̃; m_k, σ² I), m_k the embedding of k ones (quadrature)."""
    W = dist.frequencies(1)
    m = np.stack([embed_batch(dist, W, np.array([[[1.0]] * k + [[0.0]] * (N - k)]), 1)[0]
                  for k in range(N + 1)])
    loglik_k = -np.sum((m - released) ** 2, axis=1) / (2 * sigma**2)
    grid = (np.arange(20_000) + 0.5) / 20_000
    post = binom.pmf(np.arange(N + 1)[None], N, grid[:, None]) @ np.exp(loglik_k - loglik_k.max())
    post /= post.sum()
    mean = grid @ post
    return float(mean), float(np.sqrt((grid - mean) ** 2 @ post))


def test_accepted_theta_follow_the_exact_posterior_given_the_release(bernoulli):
    """ε = 2: σ ≈ 0.9 against embeddings of norm 1, so the release is informative but noisy.
    ABC with ε_abc = σ/5 on 400 000 draws against quadrature of p(θ | μ̃). Broken variant
    caught: ABC on the noise-free simulated embeddings (the mechanism not simulated) is
    over-confident (sd < 0.75 of the exact)."""
    theta, sims = bernoulli
    dist = RFFMMD(1.0, 2, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        sigma = abcdp(OBS, ArrayDraws(theta[:10], sims[:10]), dist, 1, EPS, 1.0, release="embedding",
                      delta=DELTA, privacy_rng=prng(0)).b
        res = abcdp(OBS, ArrayDraws(theta, sims, 50_000), dist, 100_000, EPS, 0.2 * sigma,
                    release="embedding", delta=DELTA, privacy_rng=prng(1), seed=2)
    released = np.asarray(res.meta["released_embedding"])
    mean, sd = exact_posterior(released, dist, sigma)
    acc = res.accepted[:, 0]
    assert 1000 < acc.size < 100_000 and res.n_draws == 400_000
    assert abs(acc.mean() - mean) < 4 * sd / math.sqrt(acc.size)
    assert abs(acc.std() / sd - 1) < 0.06
    # broken: condition on the noise-free embedding
    emb = np.concatenate([embed_batch(dist, dist.frequencies(1), sims[i:i + 50_000], 1)
                          for i in range(0, len(sims), 50_000)])
    d0 = np.linalg.norm(emb - released, axis=1)
    broken = theta[np.argsort(d0)[:acc.size], 0]
    assert broken.std() < 0.75 * sd


def test_noise_meets_the_target_at_the_realised_worst_sensitivity():
    """White-box: the largest ||μ(Y*) - μ(Y*')|| over replaced records is <= 2/N and nearly
    attains it; σ/(2/N) certifies (ε, δ) exactly (analytic Gaussian). Broken variant caught: noise
    calibrated for 1/N (add-remove thinking) gives ε > 1.5 ε at the realised shift."""
    dist = RFFMMD(0.3, 50, seed=1)
    obs = np.random.default_rng(0).uniform(size=(N, 1))
    mu = dist.embed(obs)
    shift = 0.0
    for a in np.linspace(-2, 3, 201):
        nb = obs.copy()
        nb[0, 0] = a
        shift = max(shift, float(np.linalg.norm(dist.embed(nb) - mu)))
    assert 0.8 * embedding_sensitivity(N) < shift <= embedding_sensitivity(N) * (1 + 1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        rng = np.random.default_rng(1)
        res = abcdp(obs, ArrayDraws(rng.uniform(size=(20, 1)), rng.uniform(size=(20, N, 1))), dist, 3, 1.0,
                    100.0, release="embedding", delta=DELTA, privacy_rng=prng(3))
    assert res.n_accepted == 3 and isinstance(res.privacy.events[0], GaussianEvent)
    assert analytic_gaussian_epsilon(res.b / shift, DELTA) <= 1.0 + 1e-6
    assert res.privacy.epsilon <= 1.0 + 1e-9 and res.privacy.accountant == "pld"
    assert analytic_gaussian_epsilon(res.b / 2 / shift, DELTA) > 1.5


def test_charged_once_before_release_and_bad_input(tmp_path, bernoulli):
    theta, sims = bernoulli
    draws = ArrayDraws(theta[:2000], sims[:2000])
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("b", epsilon=2.5, delta=1e-5, accountant="pld")
    dist = RFFMMD(1.0, 2, seed=0)
    res = abcdp(OBS, draws, dist, 500, EPS, 10.0, release="embedding", delta=DELTA, privacy_rng=prng(4),
                ledger=ledger, dataset="b")
    assert res.n_accepted == 500 and len(ledger.history("b")) == 1  # c samples, one charge
    with pytest.raises(BudgetExceededError):
        abcdp(OBS, draws, dist, 5, EPS, 10.0, release="embedding", delta=DELTA, ledger=ledger, dataset="b")
    assert len(ledger.history("b")) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        for kw in (dict(delta=0.0), dict(distance=ExactMMD(1.0)), dict(release="both")):
            args = dict(distance=dist, delta=DELTA, release="embedding") | kw
            with pytest.raises(InvalidPrivacyParameterError):
                abcdp(OBS, draws, args["distance"], 5, EPS, 1.0, release=args["release"], delta=args["delta"])


def test_cli_release_embedding(tmp_path):
    from dpinfer.cli import main

    sims = tmp_path / "sims.npz"
    assert main(["simulate", "covid", "--draws", "2000", "--seed", "3", "--out", str(sims)]) == 0
    data = tmp_path / "data.csv"
    rows = [1, 7, 10, 24, 38, 82, 128, 188, 265, 321, 382, 503, 614, 804, 959, 1135, 1413, 1705]
    data.write_text("cases\n" + "\n".join(map(str, rows)) + "\n")
    ledger = tmp_path / "budget.db"
    assert main(["budget", "init", "--ledger", str(ledger), "--dataset", "nl", "--epsilon", "20",
                 "--data", str(data)]) == 0
    out = tmp_path / "release.json"
    assert main(["abcdp", "--observed", str(data), "--simulations", str(sims), "-c", "200", "--epsilon", "13",
                 "--epsilon-abc", "100", "--release", "embedding", "--delta", "1e-6", "--n-features", "20",
                 "--ledger", str(ledger), "--dataset", "nl", "--out", str(out), "--no-progress"]) == 0
    import json

    rel = json.loads(out.read_text())
    assert len(rel["accepted"]) == 200 and rel["privacy"]["events"][0]["type"] == "GaussianEvent"
    assert len(Ledger(ledger).history("nl")) == 1
