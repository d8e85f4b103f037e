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

Sensitivity (replace-one, L2). Claim: ||μ(Y*) - μ(Y*')||₂ <= 2/N. Proof: cos² + sin² = 1 gives
||φ(x)||² = (2/D)·(D/2) = 1 for every x and every W; replacing record a by b moves the mean by
(φ(b) - φ(a))/N, whose norm is at most (||φ(a)|| + ||φ(b)||)/N = 2/N. With s the Gaussian
multiplier meeting (ε, δ) (the exact analytic Gaussian, Balle & Wang 2018, certified by the
``"pld"`` accountant), the discrete release has noise σ_γ >= s·(2/(Nγ) + √D) grid units (the
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

Timing. With the numba backends (the default) and the torch backend, the features of the
observed data are computed by one code path whatever the records' magnitudes
(:mod:`dpinfer.distances.rff_kernels`, :mod:`dpinfer.distances.rff_torch`): before, one record
beyond ~4e5 bandwidths switched the embedding to a 4x slower kernel. ``backend="numpy"`` calls
numpy's ``cos``/``sin``, whose cost can still depend on the argument's magnitude.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..distances.base import as_batch
from ..distances.mmd import RFFMMD
from ..errors import InvalidDataError, InvalidPrivacyParameterError
from ..privacy.context import ReleaseContext
from ..privacy.events import REPLACE_ONE
from ..privacy.mechanisms.embedding import embedding_grid, release_embedding, simulate_release
from ..privacy.report import PrivacyReport
from ..privacy.validation import check_delta, check_epsilon
from .abc_result import ABCDPResult

if TYPE_CHECKING:
    from ..privacy.ledger import Ledger

__all__ = ["embedding_abc", "embedding_sensitivity"]


def embedding_sensitivity(n_records: int) -> float:
    """Replace-one L2 sensitivity of the RFF mean embedding: 2/N (module docstring)."""
    return 2.0 / int(n_records)


def embed_batch(distance: RFFMMD, W: np.ndarray, sims: Any, d: int) -> np.ndarray:
    """Mean embeddings μ(Y_b) of a batch of simulated data sets; shape (B, D)."""
    arr = as_batch(sims, d)
    return distance.feature_sums(arr, W) * (math.sqrt(2.0 / distance.n_features) / arr.shape[1])


def embedding_abc(
    observed: Any,
    source: Any,
    distance: Any,
    c: int,
    epsilon: float,
    delta: float,
    epsilon_abc: float,
    *,
    seed: Any = 0,
    privacy_rng: Any = None,
    ledger: Ledger | None = None,
    dataset: str | None = None,
    label: str = "abcdp-embedding",
    param_names: tuple[str, ...] = (),
    meta: dict[str, Any] | None = None,
    context: ReleaseContext | None = None,
) -> ABCDPResult:
    """Release μ̃ once (discrete Gaussian on a grid), then accept up to c θ_t with ||μ̃_t - μ̃|| <= ε_abc.

    Called by :func:`dpinfer.release.abcdp` with ``release="embedding"``; ``source`` is its draw
    source, c, ε_abc as there (validated by the caller). ``privacy_rng``, ``ledger``,
    ``dataset`` and ``label`` (or one ``context``) make the
    :class:`~dpinfer.privacy.context.ReleaseContext` the release is charged through. ``seed``
    drives the simulated mechanism noise (public). The result's ``b`` and ``sigma_query`` are the
    noise scale γ·σ_γ; ``meta`` holds the released embedding (``released_embedding``, exact
    multiples of the grid ``released_grid``).
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
    ctx = ReleaseContext.of(context, ledger=ledger, dataset=dataset, privacy_rng=privacy_rng, label=label)
    prepared = distance.prepare(observed)  # checks the observed data
    delta2 = embedding_sensitivity(prepared.n)
    plan = embedding_grid(delta2, eps, dlt, distance.n_features, neighbouring=REPLACE_ONE)
    sigma = plan.sigma
    batches = source.batches()
    theta0, sims0 = next(batches)
    emb0 = embed_batch(distance, prepared.W, sims0, prepared.d)  # checks shapes before the charge
    if not np.all(np.isfinite(emb0)):
        raise InvalidDataError("an embedding of the first batch is NaN or infinite; nothing was released.")
    rng = np.random.default_rng(seed)
    # validates μ (finite, size, grid range), charges plan.event, then draws the noise
    released = release_embedding(prepared.mu, plan, ctx, what="ABCDP embedding release")
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
        emb = embed_batch(distance, prepared.W, sims, prepared.d)
    report = PrivacyReport.from_event(
        plan.event, delta=dlt, accountant="pld", sensitivity=delta2, accounted=ctx.accounted,
        mechanism="abcdp-discrete-gaussian-embedding", insecure_rng=ctx.insecure,
        details={"sigma": sigma, "noise_multiplier": plan.noise_multiplier,
                 "n_features": distance.n_features, "distance": distance.config(),
                 "epsilon_abc": float(epsilon_abc), "c": int(c), "n_draws_examined": offset,
                 **plan.details(),
                 "post_processing": "ABC on the released embedding, the released law (grid rounding "
                 "and discrete Gaussian noise) simulated from the public seed; no cost beyond the "
                 "one release",
                 "theorem": "Gaussian mechanism, L2 sensitivity 2/N of the RFF mean embedding "
                            "(||φ(x)|| = 1), 2/(Nγ) + √D grid units after rounding; exact discrete "
                            "Gaussian noise (Canonne, Kamath & Steinke 2020) accounted as the "
                            "analytic Gaussian (Balle & Wang 2018) it post-processes"},
    )
    return ABCDPResult(
        accepted=np.concatenate(accepted), accepted_index=np.concatenate(index), n_draws=int(offset),
        epsilon_abc=float(epsilon_abc), param_names=tuple(param_names),
        meta=dict(meta or {}) | {"released_embedding": released.tolist(), "released_grid": plan.gamma},
        c=int(c), b=sigma, privacy=report, noise="gaussian-embedding", sigma_query=sigma,
    )
