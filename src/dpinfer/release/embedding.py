"""ABCDP by one release: a noisy random-feature mean embedding, then ABC for free.

The sparse vector pays for every accepted sample (its noise grows linearly in c, Theorem 1 of
Park et al. 2021). Here the confidential data Y* (N records) are touched once:

    μ̃ = γ·(round(μ(Y*)/γ) + Z),   Z ~ N_Z(0, σ_γ² I_D),   μ(Y) = (1/|Y|) Σ_i φ(y_i),

with φ the paired random Fourier features of :class:`~dpinfer.distances.RFFMMD`
(φ(x) = √(2/D)[cos(Wx), sin(Wx)]), γ a power-of-two grid fixed by public quantities and Z exact
discrete Gaussian noise (Canonne, Kamath & Steinke 2020): every released coordinate is an exact
multiple of γ, so the floating-point pattern of μ̃ carries nothing about μ (the float release
``μ + N(0, σ²)`` it replaces identified the true data set in a single release; Mironov 2012).
The release, its grid and its accounting are :mod:`dpinfer.privacy.mechanisms.embedding`.

Sensitivity (replace-one, L2) of the value actually computed. In exact arithmetic ||φ(x)|| = 1
(cos² + sin² = 1, so ||φ(x)||² = (2/D)·(D/2)) and replacing record y by y' moves the mean by
(φ(y') − φ(y))/N, of norm <= 2/N. The released value is a floating-point computation, μ̂(Y), and
its rounding error can make ||μ̂(Y) − μ̂(Y')||₂ exceed 2/N: on adversarial neighbours at N = 10⁵
the distance's own paths, which the release used before, exceeded it by 1.6·10⁻³ (numpy
float32), 2.6·10⁻⁶ (numba float32) and 6.8·10⁻¹² (numba float64; its worst-case bound is about
N²·2⁻⁵³ relative). The release therefore never uses the distance's own accumulation: μ̂ is
:meth:`~dpinfer.distances.mmd.RFFMMD.fixed_point_mean` of the observed data, whatever the
distance's ``dtype``, ``backend`` or ``device`` (these apply to the public simulations only).

Claim: for every pair of neighbouring data sets of N records,

    ||μ̂(Y) − μ̂(Y')||₂ <= Δ̂_N := 2ρ_N/N + 2γ₅ρ_N,   ρ_N = 1 + 2⁻⁴⁷ + √2·2⁻⁽ᵇ⁺¹⁾,   γ₅ = 5u/(1 − 5u),

u = 2⁻⁵³, b = ``fixed_point_bits(N)`` = min(50, 62 − bitlength(N)) (:func:`embedding_sensitivity`).

Proof. (1) Features. The kernel :func:`~dpinfer.distances.rff_kernels.rff_fixed_point_sums`
computes each pair (ĉ, ŝ) = ``_sincos`` of a float64 projection (a NaN projection counts as 0),
and ||(ĉ, ŝ)||₂ <= 1 + 2⁻⁴⁷ for every double argument (the Lemma of
:mod:`dpinfer.distances.rff_kernels`: reduced argument |r| < 0.85, Horner error bounds of the
two polynomials, Higham 2002, §5.1). It rounds each value to k = rint(v·2ᵇ), an exact operation
with |k·2⁻ᵇ − v| <= 2⁻⁽ᵇ⁺¹⁾, so each pair of φ̃(y) = √(2/D)·2⁻ᵇ·k(y) has norm <= ρ_N before the
factor √(2/D), and ||φ̃(y)||₂ <= √(2/D)·√(D/2)·ρ_N = ρ_N for every record y: φ̃ is a fixed
feature map, the same for every data set. (2) Sums. The integer sums K = Σ_i k(y_i) are exact
(no overflow: |k| < 2^(b+1), N < 2^bitlength(N), b <= 62 − bitlength(N)), so the exact mean
μ(Y) = (1/N)Σ_i φ̃(y_i) satisfies ||μ(Y) − μ(Y')||₂ = ||φ̃(y') − φ̃(y)||₂/N <= 2ρ_N/N and
||μ(Y)||₂ <= ρ_N. (3) Scaling. μ̂_j = fl(fl(K_j)·fl(fl(√fl(2/D))/N)·2⁻ᵇ): five roundings (×2⁻ᵇ
is exact), so μ̂_j = μ_j(1 + θ_j), |θ_j| <= γ₅ (Higham 2002, Lemma 3.1), and
||μ̂(Y) − μ(Y)||₂ <= γ₅||μ(Y)||₂ <= γ₅ρ_N. (4) The triangle inequality through μ(Y) and μ(Y')
gives the claim. ∎ (The general statement, and the bounds for the float64 and float32
accumulations of the other kernels, are in :mod:`dpinfer.privacy.mechanisms.embedding`.)

Δ̂_N·N/2 − 1 is 6·10⁻¹⁴ at N = 100, 3·10⁻¹³ at 500, 6·10⁻¹¹ at 10⁵ and 6·10⁻¹⁰ at 10⁶: the noise grows
by that factor or less (the grid's integer σ_γ² absorbs it almost always), in float64 and
float32 alike since both release the same fixed-point mean. With s the Gaussian multiplier
meeting (ε, δ) (the exact analytic Gaussian, Balle & Wang 2018, certified by the ``"pld"``
accountant), the discrete release has noise σ_γ >= s·(Δ̂_N/γ + √D) grid units (the grid
rounding's effect on the L2 sensitivity included) and is charged as ``GaussianEvent(s)``: a
discrete Gaussian is a post-processed continuous Gaussian up to a factor e^{±10⁻⁵⁰⁰} (proof in
the privacy module). It is charged through a :class:`~dpinfer.privacy.context.ReleaseContext`
after every check has passed, before the noise is drawn. A ledger on the ``"rdp"`` accountant
accounts the same event at a slightly larger ε (its conversion is looser than the exact bound).

Post-processing (no further privacy cost, any number of samples c, any number of simulations T):
ABC on the observed statistic μ̃ with the *released* law simulated inside the simulator, so that
the accepted θ target p(θ | μ̃), the posterior given what was actually released:

    Y_t ~ p(y | θ_t),  μ̃_t = γ·(round(μ(Y_t)/γ) + Z_t),  Z_t ~ N_Z(0, σ_γ² I_D)  (public, from the seed),
    accept θ_t if ||μ̃_t - μ̃|| <= ε_abc,

(as ε_abc -> 0 this is exact for the observation model of the release; Wilkinson 2013; the same
device as the library's private-data SMC-ABC). Dropping the simulated noise would condition on a
noise-free embedding and give an over-confident posterior.

Timing. The released mean is computed by one code path whatever the records' magnitudes and
whatever the distance's backend (the fixed-point kernel above, float64 trigonometry of a single
branch-free scheme); the simulations use the distance's own backend. Before, one record beyond
~4e5 bandwidths switched the embedding of the observed data to a 4x slower kernel.

The simulated embeddings μ(Y_t) come from the distance's backend, not from the fixed-point path.
In float64 the two differ by about 10⁻¹⁶ per coordinate plus the grid 2⁻⁽ᵇ⁺¹⁾ (b >= 20 up to
N < 2⁴²), negligible against the noise σ >= s·2/N. A float32 distance simulates with float32
rounding (about 10⁻⁷ per coordinate, measured 3.7·10⁻⁷ in L2 at N = 2¹⁷, D = 8): a small
misspecification of the simulated law at large N; choose float64 there if it matters.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..distances.base import as_batch, as_points
from ..distances.mmd import RFFMMD
from ..distances.rff_kernels import fixed_point_bits, fixed_point_feature_norm
from ..errors import InvalidDataError, InvalidPrivacyParameterError, refuse_removed_keywords
from ..privacy.context import FLAT_RELEASE_KEYWORDS, ReleaseContext
from ..privacy.events import REPLACE_ONE
from ..privacy.mechanisms.embedding import (
    computed_mean_sensitivity,
    embedding_grid,
    mean_rounding_error,
    release_embedding,
    simulate_release,
)
from ..privacy.report import PrivacyReport
from ..privacy.validation import check_delta, check_epsilon
from .abc_result import ABCDPResult, check_param_names

__all__ = ["embedding_abc", "embedding_sensitivity"]


def embedding_sensitivity(n_records: int) -> float:
    """Replace-one L2 sensitivity of the *computed* RFF mean embedding that is released,
    Δ̂_N = 2ρ_N/N + 2γ₅ρ_N >= 2/N (module docstring: the fixed-point features' norm bound ρ_N and
    the rounding of the final scaling), rounded up to a double. Public: a function of N only."""
    n = int(n_records)
    return computed_mean_sensitivity(n, feature_norm=fixed_point_feature_norm(n), accumulation="exact")


def embed_batch(distance: RFFMMD, W: np.ndarray, sims: Any, d: int) -> np.ndarray:
    """Mean embeddings μ(Y_b) of a batch of simulated data sets; shape (B, D)."""
    arr = as_batch(sims, d)
    return distance.feature_sums(arr, W) * (math.sqrt(2.0 / distance.n_features) / arr.shape[1])


@refuse_removed_keywords(FLAT_RELEASE_KEYWORDS)
def embedding_abc(
    observed: Any,
    source: Any,
    distance: Any,
    *,
    c: int,
    epsilon: float,
    delta: float,
    epsilon_abc: float,
    seed: Any = 0,
    context: ReleaseContext | None = None,
    param_names: tuple[str, ...] = (),
    meta: dict[str, Any] | None = None,
) -> ABCDPResult:
    """Release μ̃ once (discrete Gaussian on a grid), then accept up to c θ_t with ||μ̃_t - μ̃|| <= ε_abc.

    Called by :func:`dpinfer.release.abcdp` with ``ABCDPOptions(release="embedding")``; ``source``
    is its draw source, c, ε_abc as there (validated by the caller). ``context`` is the
    :class:`~dpinfer.privacy.context.ReleaseContext` the release is charged through (its label
    defaults to ``"abcdp-embedding"``). ``seed`` drives the simulated mechanism noise (public).
    The result's ``b`` and ``sigma_query`` are the noise scale γ·σ_γ; ``meta`` holds the released
    embedding (``released_embedding``, exact multiples of the grid ``released_grid``).
    """
    eps, dlt = check_epsilon(epsilon, "epsilon_total"), check_delta(delta)
    if not 0.0 < dlt < 1.0:
        raise InvalidPrivacyParameterError(
            f"the embedding release is (epsilon, delta)-DP: delta must be in (0, 1), got {delta!r}."
        )
    if not isinstance(distance, RFFMMD):
        raise InvalidPrivacyParameterError(
            "release='embedding' needs an RFFMMD distance (a feature map with ||φ(x)|| = 1 bounds "
            f"the sensitivity), got {type(distance).__name__}; use release='svt' for others."
        )
    ctx = ReleaseContext.of(context, label="abcdp-embedding")
    points = as_points(observed, "observed data")  # checks the observed data
    n_obs, dim = points.shape
    W = distance.frequencies(dim)
    delta2 = embedding_sensitivity(n_obs)  # of the computed mean; refuses N >= 2^42
    plan = embedding_grid(delta2, eps, dlt, distance.n_features, neighbouring=REPLACE_ONE)
    mu = distance.fixed_point_mean(points, W)  # the exact path, whatever dtype/backend/device
    sigma = plan.sigma
    batches = source.batches()
    theta0, sims0 = next(batches)
    emb0 = embed_batch(distance, W, sims0, dim)  # checks shapes before the charge
    check_param_names(param_names, np.shape(theta0)[1])
    if not np.all(np.isfinite(emb0)):
        raise InvalidDataError("an embedding of the first batch is NaN or infinite; nothing was released.")
    rng = np.random.default_rng(seed)
    # validates μ (finite, size, grid range), charges plan.event, then draws the noise
    released = release_embedding(mu, plan, context=ctx, what="ABCDP embedding release")
    accepted, index, offset, n_acc = [], [], 0, 0
    theta, emb = theta0, emb0
    while True:
        noisy = simulate_release(emb, plan, rng)  # the released law, simulated (public noise)
        dist = np.sqrt(np.sum((noisy - released) ** 2, axis=1))
        need = int(c) - n_acc
        hit = np.flatnonzero(dist <= epsilon_abc)[:need]
        accepted.append(theta[hit])
        index.append(hit + offset)
        n_acc += hit.size
        if hit.size == need:
            offset += int(hit[-1]) + 1
            break
        offset += emb.shape[0]
        try:
            theta, sims = next(batches)
        except StopIteration:
            break
        emb = embed_batch(distance, W, sims, dim)
    report = PrivacyReport.from_event(
        plan.event, delta=dlt, accountant="pld", sensitivity=delta2, accounted=ctx.accounted,
        mechanism="abcdp-discrete-gaussian-embedding", insecure_rng=ctx.insecure,
        details={"sigma": sigma, "noise_multiplier": plan.noise_multiplier,
                 "n_features": distance.n_features, "distance": distance.config(),
                 "epsilon_abc": float(epsilon_abc), "c": int(c), "n_draws_examined": offset,
                 **plan.details(),
                 "sensitivity_exact_arithmetic": 2.0 / n_obs,
                 "fixed_point_bits": fixed_point_bits(n_obs),
                 "feature_norm_bound": fixed_point_feature_norm(n_obs),
                 "rounding_error_bound": mean_rounding_error(
                     n_obs, feature_norm=fixed_point_feature_norm(n_obs), accumulation="exact"),
                 "post_processing": "ABC on the released embedding, the released law (grid rounding "
                 "and discrete Gaussian noise) simulated from the public seed; no cost beyond the "
                 "one release",
                 "theorem": "Gaussian mechanism, L2 sensitivity of the computed RFF mean embedding "
                            "2ρ/N + 2γ₅ρ (fixed-point features of norm <= ρ summed exactly, five "
                            "roundings of the scaling; 2/N in exact arithmetic), Δ̂/γ + √D grid "
                            "units after rounding; exact discrete "
                            "Gaussian noise (Canonne, Kamath & Steinke 2020) accounted as the "
                            "analytic Gaussian (Balle & Wang 2018) it post-processes"},
    )
    return ABCDPResult(
        accepted=np.concatenate(accepted), accepted_index=np.concatenate(index), n_draws=int(offset),
        epsilon_abc=float(epsilon_abc), param_names=tuple(param_names),
        meta=dict(meta or {}) | {"released_embedding": released.tolist(), "released_grid": plan.gamma},
        c=int(c), b=sigma, privacy=report, noise="gaussian-embedding", sigma_query=sigma,
    )
