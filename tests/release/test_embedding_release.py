"""ABCDP release="embedding": one Gaussian release of the RFF mean embedding, then free ABC."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binom

from dpinfer.distances import RFFMMD, ExactMMD
from dpinfer.errors import InvalidDataError
from dpinfer.privacy import (
    BudgetExceededError,
    GaussianEvent,
    InvalidPrivacyParameterError,
    Ledger,
    PrivacyWarning,
    analytic_gaussian_epsilon,
)
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release import ABCDPOptions, ArrayDraws, abcdp
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
        sigma = abcdp(
            OBS, ArrayDraws(theta[:10], sims[:10]), dist, c=1, epsilon_total=EPS, epsilon_abc=1.0,
            delta=DELTA, options=ABCDPOptions(release="embedding"),
            context=ReleaseContext(privacy_rng=prng(0)),
        ).b
        res = abcdp(
            OBS, ArrayDraws(theta, sims, 50_000), dist, c=100_000, epsilon_total=EPS, epsilon_abc=0.2 * sigma,
            delta=DELTA, seed=2, options=ABCDPOptions(release="embedding"),
            context=ReleaseContext(privacy_rng=prng(1)),
        )
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
    """White-box: the largest ||μ̂(Y*) - μ̂(Y*')|| of the computed (released) mean over replaced
    records is <= the charged sensitivity (no slack) and nearly attains it; σ/Δ̂ certifies (ε, δ)
    exactly (analytic Gaussian). Broken variant caught: noise calibrated for 1/N (add-remove
    thinking) gives ε > 1.5 ε at the realised shift."""
    dist = RFFMMD(0.3, 50, seed=1)
    obs = np.random.default_rng(0).uniform(size=(N, 1))
    mu = dist.fixed_point_mean(obs)
    shift = 0.0
    for a in np.linspace(-2, 3, 201):
        nb = obs.copy()
        nb[0, 0] = a
        shift = max(shift, float(np.linalg.norm(dist.fixed_point_mean(nb) - mu)))
    assert 0.8 * embedding_sensitivity(N) < shift <= embedding_sensitivity(N)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        rng = np.random.default_rng(1)
        res = abcdp(
            obs, ArrayDraws(rng.uniform(size=(20, 1)), rng.uniform(size=(20, N, 1))), dist, c=3,
            epsilon_total=1.0, epsilon_abc=100.0, delta=DELTA, options=ABCDPOptions(release="embedding"),
            context=ReleaseContext(privacy_rng=prng(3)),
        )
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
    res = abcdp(
        OBS, draws, dist, c=500, epsilon_total=EPS, epsilon_abc=10.0, delta=DELTA,
        options=ABCDPOptions(release="embedding"),
        context=ReleaseContext(ledger=ledger, dataset="b", privacy_rng=prng(4)),
    )
    assert res.n_accepted == 500 and len(ledger.history("b")) == 1  # c samples, one charge
    with pytest.raises(BudgetExceededError):
        abcdp(
            OBS, draws, dist, c=5, epsilon_total=EPS, epsilon_abc=10.0, delta=DELTA,
            options=ABCDPOptions(release="embedding"), context=ReleaseContext(ledger=ledger, dataset="b"),
        )
    assert len(ledger.history("b")) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        for kw in (dict(delta=0.0), dict(distance=ExactMMD(1.0)), dict(release="both")):
            args = dict(distance=dist, delta=DELTA, release="embedding") | kw
            with pytest.raises(InvalidPrivacyParameterError):
                abcdp(
                    OBS, draws, args["distance"], c=5, epsilon_total=EPS, epsilon_abc=1.0,
                    delta=args["delta"], options=ABCDPOptions(release=args["release"]),
                )


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
    in >= 25 of 60 (47/60 with these seeds)."""
    import dpinfer.release.embedding as er
    from float_reachability import float_consistent, grid_consistent, identifying

    dist, obs, nb = _neighbours(500, 100)
    mus = [dist.fixed_point_mean(obs), dist.fixed_point_mean(nb)]  # what the release computes
    rng = np.random.default_rng(1)
    draws = ArrayDraws(rng.uniform(size=(5, 1)), rng.uniform(size=(5, 500, 1)))

    def releases():
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            for i in range(60):
                res = abcdp(
                    [obs, nb][i % 2], draws, dist, c=1, epsilon_total=1.0, epsilon_abc=100.0, delta=1e-5,
                    options=ABCDPOptions(release="embedding"),
                    context=ReleaseContext(privacy_rng=prng(100 + i)),
                )
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
    kernels.append("rff_fixed_point_sums")  # the exact path of prepare (observed data, any dtype)
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
            assert calls == ["rff_fixed_point_sums"], (dtype, extreme)
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
        mu = RFFMMD(1.0, 100, seed=0, dtype=dtype, backend="torch").embed(data)  # prepare: exact path
        assert seen and max(seen) < math.pi + 0.1
        ref = RFFMMD(1.0, 100, seed=0, dtype=dtype).embed(data)
        assert np.abs(mu - ref).max() < (1e-12 if dtype == "float64" else 1e-3)


# ------------------------------------------------------------------------------------------------
# the released value is a floating-point computation: its sensitivity covers the rounding
# ------------------------------------------------------------------------------------------------
U64 = Fraction(1, 2**53)
GAMMA5 = 5 * U64 / (1 - 5 * U64)


def _adversarial_arguments() -> np.ndarray:
    """4·10⁶ arguments of the float64 _sincos: multiples of π/4 (where the reduction switches
    quadrant) and their neighbouring doubles up to 2⁴⁰·π/4, random magnitudes 2⁻¹⁰⁷ .. 2⁶⁰, the
    clamp, ±inf, 0, the smallest subnormal."""
    rng = np.random.default_rng(0)
    k = rng.integers(-2**40, 2**40, 10**6).astype(np.float64) * (math.pi / 4)
    return np.concatenate([
        k, np.nextafter(k, np.inf), np.nextafter(k, -np.inf), np.arange(-4096, 4096) * (math.pi / 4),
        rng.uniform(-1, 1, 10**6) * 2.0 ** rng.integers(-107, 60, 10**6),
        [0.0, -0.0, 5e-324, np.inf, -np.inf, 2.0**47, -(2.0**47), 1e300, -1e300, 2.0**19, 2.0**20],
    ])


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")  # float32 of 1e300
def test_sincos_pairs_have_norm_within_the_lemma_bound():
    """The premise ρ of the release: ||(ŝ, ĉ)||₂ <= 1 + 2⁻⁴⁷ (the Lemma proves 1 + 27u) for every
    argument. Measured on 4·10⁶ adversarial arguments: |norm − 1| <= 1.25u. The constant 2/π of
    the proof is the correctly rounded double. Broken variant caught: float32 features (the
    float32 kernel) have pair norms up to 1 ± 6.9e-8, beyond the bound the release is charged with."""
    from dpinfer.distances import rff_kernels as rk

    assert rk._TWO_OVER_PI == 2 / math.pi and rk.SINCOS_NORM_EXCESS == 2.0**-47
    x = _adversarial_arguments()
    s, c = rk.sincos_array(x)
    norm = np.sqrt(s.astype(np.longdouble) ** 2 + c.astype(np.longdouble) ** 2)
    excess = float(np.abs(norm - 1).max())
    assert excess <= 2.0**-47 - 2.0**-52, excess  # room for the check's own rounding
    assert excess <= 4 * 2.0**-53  # measured 1.25u
    s32, c32 = rk.sincos32_array(x.astype(np.float32))
    n32 = np.sqrt(s32.astype(np.float64) ** 2 + c32.astype(np.float64) ** 2)
    assert np.abs(n32 - 1).max() > 2.0**-40
    for n in (1, 100, 10**6, 2**41):
        b = rk.fixed_point_bits(n)
        assert b == min(50, 62 - n.bit_length()) and n * (2**b + 9) < 2**63  # no int64 overflow
        assert rk.fixed_point_feature_norm(n) >= 1 + 2.0**-47 + math.sqrt(2) * 2.0 ** -(b + 1)
    with pytest.raises(InvalidDataError):
        rk.fixed_point_bits(2**42)


def _exact_features(y: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The float64 features the kernels compute for 1-D data (projection y·w, then _sincos)."""
    from dpinfer.distances.rff_kernels import sincos_array

    s, c = sincos_array((y[:, None] * W[None, :, 0]).ravel())
    return c.reshape(y.size, -1), s.reshape(y.size, -1)


def _dyadic_sum(col: np.ndarray) -> Fraction:
    """The exact sum of ``col`` (each distinct double once, times its count: the same integer sum)."""
    values, counts = np.unique(col, return_counts=True)
    return Fraction(sum(int(k) * num * (2**1074 // den)
                        for (num, den), k in zip(map(float.as_integer_ratio, values), counts, strict=True)),
                    2**1074)


def _exact_int_sum(col: np.ndarray) -> int:
    """Σ int(v) over ``col`` in Python integers (each distinct value once, times its count)."""
    values, counts = np.unique(col, return_counts=True)
    return sum(int(v) * int(k) for v, k in zip(values, counts, strict=True))


def test_released_mean_is_the_exact_fixed_point_sum_within_gamma5():
    """D = 8 (√(2/D) = ½ exactly), N = 2¹⁷ + 3 records (the first half at one value, the second
    at a value whose features nearly cancel it: partial sums climb to ~N/2). The kernel's int64
    sums equal Σ rint(2ᵇ·feature) in Python integers exactly, and every released coordinate is
    within γ₅·|μ_j| of the exact mean μ_j of the fixed-point features (measured <= 0.63u relative).
    Broken variant caught: the distance's float64 path (dist.embed, recursive sums) is off the
    exact mean of its own features by more than γ₅·ρ, the exact path's E (measured 3.4e-13
    against 5.6e-16), and its float32 path is 3.7e-7 from the released mean."""
    from dpinfer.distances.rff_kernels import fixed_point_bits, fixed_point_feature_norm, rff_fixed_point_sums

    n = 2**17 + 3
    dist = RFFMMD(0.7, 8, seed=3)
    W = dist.frequencies(1)
    y = np.full(n, 0.3)
    y[n // 2:] = 0.3 + math.pi / abs(W[0, 0])
    b = fixed_point_bits(n)
    c, s = _exact_features(y, W)
    ints = [_exact_int_sum(np.rint(col * 2.0**b)) for col in np.concatenate([c, s], axis=1).T]
    got = np.empty(8, dtype=np.int64)
    rff_fixed_point_sums(y[:, None], W, float(2**b), got)
    assert [int(v) for v in got] == ints
    mu = [Fraction(k, 2**b * 2 * n) for k in ints]
    released = dist.fixed_point_mean(y[:, None])
    for m_hat, m in zip(released, mu, strict=True):
        assert abs(Fraction(float(m_hat)) - m) <= GAMMA5 * abs(m)
    rho = fixed_point_feature_norm(n)
    exact_e = float(GAMMA5) * rho
    feats = np.concatenate([c, s], axis=1)
    old_mu = [_dyadic_sum(col) / (2 * n) for col in feats.T]
    old_err = math.sqrt(sum((Fraction(float(a)) - m) ** 2 for a, m in zip(dist.embed(y[:, None]), old_mu,
                                                                              strict=True)))
    assert old_err > exact_e, (old_err, exact_e)
    f32 = RFFMMD(0.7, 8, seed=3, dtype="float32").embed(y[:, None])
    assert np.linalg.norm(f32 - np.asarray(released)) > 1000 * exact_e


def _worst_neighbour_shift(mean, w: float, n: int, trials: int = 12) -> float:
    """max ||mean(Y) − mean(Y')|| / (2/N) over adversarial neighbours: all records at one value
    (every addition rounds alike), record 0 at an angle θ or at θ + π − η (||Δφ|| ≈ 2)."""
    rng = np.random.default_rng(1)
    best = 0.0
    for t in range(trials):
        obs = np.full((n, 1), rng.uniform(0, 0.2) / abs(w))
        if t % 2:
            obs[:, 0] += rng.uniform(0, 1e-3, n) / abs(w)
        th, eta = rng.uniform(0, 2 * math.pi), rng.uniform(0, 1e-6)
        y1, y2 = obs.copy(), obs.copy()
        y1[0, 0], y2[0, 0] = th / w, (th + math.pi - eta) / w
        best = max(best, float(np.linalg.norm(mean(y1) - mean(y2))) / (2.0 / n))
    return best


def test_realised_sensitivity_of_the_release_path_is_covered_and_the_old_paths_exceed_2_over_n():
    """N = 10⁵, D = 2, adversarial neighbours. The release path's realised shift stays within the
    charged Δ̂ (measured: 2/N·(1 + 4.7e-12), the γ₅ term at work, vs Δ̂ = 2/N·(1 + 5.6e-11)).
    Broken variants caught: the distance's own paths, which the release used before, exceed 2/N
    (ignoring the rounding term): numba float64 by 6.8e-12, numba float32 by 2.6e-6 and numpy
    float32 by 1.6e-3 (the last two beyond Δ̂ too: float32 accumulation at large N)."""
    n = 10**5
    delta_hat = embedding_sensitivity(n) / (2.0 / n)
    new = RFFMMD(1.0, 2, seed=0, dtype="float32", backend="numpy")
    w = float(new.frequencies(1)[0, 0])
    assert _worst_neighbour_shift(new.fixed_point_mean, w, n) <= delta_hat
    shifts = {(dt, be): _worst_neighbour_shift(RFFMMD(1.0, 2, seed=0, dtype=dt, backend=be).embed, w, n)
              for dt, be in (("float64", "numba"), ("float32", "numba"), ("float32", "numpy"))}
    assert all(v > 1.0 for v in shifts.values()), shifts
    assert shifts["float32", "numba"] > delta_hat and shifts["float32", "numpy"] > delta_hat, shifts


def test_release_is_computed_exactly_whatever_dtype_and_backend():
    """The released embedding comes from the fixed-point path: with the same seeded PrivacyRNG,
    a float32/numpy distance and a float64/numba one release the same doubles, and the report
    charges Δ̂ > 2/N with its rounding terms. Fails on the old code: at N = 2000 the float32
    embeddings round to other grid points than the float64 one in 5 (numpy) and 3 (numba) of the
    64 coordinates."""
    n = 2000
    obs = np.random.default_rng(0).uniform(size=(n, 1))
    draws = ArrayDraws(np.zeros((3, 1)), np.random.default_rng(1).uniform(size=(3, n, 1)))
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        for kw in (dict(), dict(dtype="float32", backend="numpy"), dict(dtype="float32")):
            res = abcdp(
                obs, draws, RFFMMD(0.2, 64, seed=2, **kw), c=1, epsilon_total=50.0, epsilon_abc=100.0,
                delta=DELTA, options=ABCDPOptions(release="embedding"),
                context=ReleaseContext(privacy_rng=prng(9)),
            )
            out.append(np.asarray(res.meta["released_embedding"]))
    assert all(np.array_equal(out[0], o) for o in out[1:])
    det = res.privacy.details
    assert res.privacy.sensitivity == embedding_sensitivity(n) > 2.0 / n
    assert det["sensitivity_exact_arithmetic"] == 2.0 / n
    assert det["fixed_point_bits"] == 50 and det["feature_norm_bound"] > 1.0
    assert 0 < det["rounding_error_bound"] < 1e-15


def test_a_record_at_the_float_limit_is_released_not_refused():
    """A record whose projections overflow (1e308·w − 1e308·w' = inf − inf = NaN) made the old
    embedding NaN and the release refused it (a refusal that depends on one record); the
    fixed-point kernel maps the NaN projection to 0 (a feature of norm 1) and releases. Fails on
    the old code (InvalidDataError)."""
    dist = RFFMMD(0.01, 20, seed=0)
    obs = np.random.default_rng(0).uniform(size=(10, 2))
    obs[3] = [1e308, -1e308]
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isnan(dist.embed(obs)).any()  # the old released value: refused by release_embedding
    mu = dist.fixed_point_mean(obs)
    assert np.all(np.isfinite(mu)) and np.linalg.norm(mu) <= 1.0 + 1e-12
    draws = ArrayDraws(np.zeros((2, 1)), np.random.default_rng(1).uniform(size=(2, 10, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        res = abcdp(
            obs, draws, dist, c=1, epsilon_total=5.0, epsilon_abc=100.0, delta=DELTA,
            options=ABCDPOptions(release="embedding"), context=ReleaseContext(privacy_rng=prng(2)),
        )
    assert np.all(np.isfinite(res.meta["released_embedding"]))
