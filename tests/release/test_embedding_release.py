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


def exact_posterior(released: np.ndarray, dist: RFFMMD, sigma: float, gamma: float) -> tuple[float, float]:
    """p(θ | μ̃) ∝ Σ_k Binom(k; N, θ) P(μ̃ | m_k), m_k the embedding of k ones, P the released law
    (m_k rounded to the grid γ, discrete Gaussian noise of scale σ = γ·σ_γ) (quadrature)."""
    W = dist.frequencies(1)
    m = np.stack([embed_batch(dist, W, np.array([[[1.0]] * k + [[0.0]] * (N - k)]), 1)[0]
                  for k in range(N + 1)])
    m = np.floor(m / gamma + 0.5) * gamma
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
    mean, sd = exact_posterior(released, dist, sigma, res.meta["released_grid"])
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


def _neighbours(n: int, d: int) -> tuple[RFFMMD, np.ndarray, np.ndarray]:
    dist = RFFMMD(0.3, d, seed=1)
    obs = np.random.default_rng(0).uniform(size=(n, 1))
    nb = obs.copy()
    nb[0, 0] = 2.5
    return dist, obs, nb


def _float_release(mu, plan, context, *, what=""):
    """The old construction (known broken): μ + float Gaussian noise, charged the same way."""
    def draw(rng):
        return mu + np.asarray(rng.normal(plan.sigma, mu.size))

    return context.release(plan.event, draw, what=what)


def test_releases_lie_on_one_data_independent_grid_that_both_neighbours_reach(monkeypatch):
    """N = 500, D = 100, ε = 1: 30 releases from each of two neighbouring data sets. Every released
    value is an exact multiple of the same γ (fixed by N, D, ε, δ), so the support γ·Z^D is the
    same from both and no release is consistent with one neighbour only: 0/60 identifying.
    Broken variant caught: the old float release μ + N(0, σ²) is off the grid in every release
    and the float reachability attack (tests/float_reachability.py) identifies the true data set
    in >= 25 of 60 (45/60 with these seeds)."""
    import dpinfer.release.embedding as er
    from float_reachability import float_consistent, grid_consistent, identifying

    dist, obs, nb = _neighbours(500, 100)
    mus = [dist.embed(obs), dist.embed(nb)]
    rng = np.random.default_rng(1)
    draws = ArrayDraws(rng.uniform(size=(5, 1)), rng.uniform(size=(5, 500, 1)))

    def releases():
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            for i in range(60):
                res = abcdp([obs, nb][i % 2], draws, dist, 1, 1.0, 100.0, release="embedding", delta=1e-5,
                            privacy_rng=prng(100 + i))
                released = np.asarray(res.meta["released_embedding"])
                out.append((i % 2, released, res.meta["released_grid"], res.b))
        return out

    new = releases()
    grids = {g for _, _, g, _ in new}
    assert len(grids) == 1
    gamma = grids.pop()
    assert all(grid_consistent(r, gamma) for _, r, _, _ in new)
    assert sum(identifying([grid_consistent(r, gamma) for _ in mus], t) for t, r, _, _ in new) == 0
    monkeypatch.setattr(er, "release_embedding", _float_release)
    old = releases()
    assert not any(grid_consistent(r, gamma) for _, r, _, _ in old)
    hits = sum(identifying([float_consistent(r, m, sigma) for m in mus], t) for t, r, _, sigma in old)
    assert hits >= 25, hits


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")  # 1e300 in float32
def test_an_extreme_record_takes_the_same_feature_kernel(monkeypatch):
    """Timing channel: the embedding of the observed data used a 4x slower libm kernel as soon as
    one |W y| exceeded 2^19 (a record beyond ~4.4e5 here); now the kernel does not depend on the
    magnitudes (checked by the path taken, float64 and float32), and the features of any finite
    record keep unit norm (the sensitivity's premise). Fails on the old code: the extreme data
    set called the libm kernel (float64) or no numba kernel at all (float32: numpy)."""
    import dpinfer.distances.mmd as mmd

    calls: list[str] = []
    kernels = [n for n in vars(mmd) if "rff_sums" in n and "torch" not in n]  # the numba kernels
    assert len(kernels) == 4, kernels
    for name in kernels:
        kernel = getattr(mmd, name)
        tag = name.lstrip("_")
        monkeypatch.setattr(mmd, name, lambda *a, _k=kernel, _n=tag: (calls.append(_n), _k(*a))[1])
    obs = np.random.default_rng(0).uniform(size=(50, 1))
    for dtype in ("float64", "float32"):
        dist = RFFMMD(1.0, 100, seed=0, dtype=dtype)
        for extreme in (None, 4.5e5, 1e6, 1e300):
            data = obs.copy()
            if extreme is not None:
                data[7, 0] = extreme
                bound = abs(extreme) * np.abs(dist.frequencies(1)).sum(axis=1).max()
                assert bound > 2.0**19  # the old code switched kernels here
            calls.clear()
            prepared = dist.prepare(data)
            assert calls == ["rff_sums_fast" if dtype == "float64" else "rff_sums_fast32"], (dtype, extreme)
            assert np.all(np.isfinite(prepared.mu))
        for x in (4.5e5, 3e7, 1e300):
            norm = np.linalg.norm(dist.embed(np.array([[x]])))
            assert abs(norm - 1) < (1e-15 if dtype == "float64" else 1e-6), (dtype, x, norm)


def test_torch_features_reduce_every_argument_below_pi(monkeypatch):
    """The torch path (CUDA/SLEEF trig) gets arguments in [-π, π] (plus rounding) whatever the
    data, so their large-argument reduction path is never taken; results match numba."""
    torch = pytest.importorskip("torch")
    seen: list[float] = []
    cos = torch.cos
    monkeypatch.setattr(torch, "cos", lambda x: (seen.append(float(x.abs().max())), cos(x))[1])
    data = np.random.default_rng(0).uniform(size=(50, 1))
    data[3, 0] = 1e6
    for dtype in ("float64", "float32"):
        seen.clear()
        mu = RFFMMD(1.0, 100, seed=0, dtype=dtype, backend="torch").prepare(data).mu
        assert seen and max(seen) < math.pi + 0.1
        ref = RFFMMD(1.0, 100, seed=0, dtype=dtype).prepare(data).mu
        assert np.abs(mu - ref).max() < (1e-12 if dtype == "float64" else 1e-3)
