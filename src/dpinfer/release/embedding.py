"""ABCDP by one release: a Gaussian-noised random-feature mean embedding, then ABC for free.

The sparse vector pays for every accepted sample (its noise grows linearly in c, Theorem 1 of
Park et al. 2021). Here the confidential data Y* (N records) are touched once:

    μ̃ = μ(Y*) + N(0, σ² I_D),   μ(Y) = (1/|Y|) Σ_i φ(y_i),

with φ the paired random Fourier features of :class:`~dpinfer.distances.RFFMMD`
(φ(x) = √(2/D)[cos(Wx), sin(Wx)]).

Sensitivity (replace-one, L2). Claim: ||μ(Y*) - μ(Y*')||₂ <= 2/N. Proof: cos² + sin² = 1 gives
||φ(x)||² = (2/D)·(D/2) = 1 for every x and every W; replacing record a by b moves the mean by
(φ(b) - φ(a))/N, whose norm is at most (||φ(a)|| + ||φ(b)||)/N = 2/N. So σ = s·2/N, s the
Gaussian multiplier meeting (ε, δ) (the exact analytic Gaussian, Balle & Wang 2018, certified by
the ``"pld"`` accountant), makes the release the event ``GaussianEvent(s)``; it is charged to
the ledger before the noise is drawn, and the noise comes from the
:class:`~dpinfer.privacy.PrivacyRNG`. A ledger on the ``"rdp"`` accountant accounts the same
event at a slightly larger ε (its conversion is looser than the exact analytic bound).

Post-processing (no further privacy cost, any number of samples c, any number of simulations T):
ABC on the observed statistic μ̃ with the mechanism simulated inside the simulator, so that the
accepted θ target p(θ | μ̃), the posterior given what was actually released:

    Y_t ~ p(y | θ_t),  μ̃_t = μ(Y_t) + N(0, σ² I_D)  (public noise, from the seed),
    accept θ_t if ||μ̃_t - μ̃|| <= ε_abc,

(as ε_abc -> 0 this is exact for the observation model "μ̃ = μ(Y) + Gaussian noise"; Wilkinson
2013; the same device as the library's private-data SMC-ABC). Dropping the simulated noise
would condition on a noise-free embedding and give an over-confident posterior.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..distances.base import as_batch
from ..distances.mmd import RFFMMD
from ..errors import InvalidDataError, InvalidPrivacyParameterError
from ..privacy.calibration import composed_gaussian_multiplier
from ..privacy.events import REPLACE_ONE, GaussianEvent
from ..privacy.ledger import charge_or_warn
from ..privacy.report import PrivacyReport
from ..privacy.rng import PrivacyRNG, as_privacy_rng
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
    privacy_rng: PrivacyRNG | None = None,
    ledger: Ledger | None = None,
    dataset: str | None = None,
    label: str = "abcdp-embedding",
    param_names: tuple[str, ...] = (),
    meta: dict[str, Any] | None = None,
) -> ABCDPResult:
    """Release μ̃ once (Gaussian mechanism), then accept up to c θ_t with ||μ̃_t - μ̃|| <= ε_abc.

    Called by :func:`dpinfer.release.abcdp` with ``release="embedding"``; ``source`` is its draw
    source, c, ε_abc as there (validated by the caller). ``seed`` drives the simulated
    mechanism noise (public). The result's ``b`` and ``sigma_query`` are σ; ``meta`` holds the
    released embedding (``released_embedding``).
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
    if ledger is not None and not dataset:
        raise InvalidPrivacyParameterError("charging a ledger needs the dataset name.")
    gen = as_privacy_rng(privacy_rng)
    prepared = distance.prepare(observed)  # checks the observed data
    delta2 = embedding_sensitivity(prepared.n)
    s = composed_gaussian_multiplier(eps, dlt, 1, "pld")
    sigma = s * delta2
    event = GaussianEvent(s, neighbouring=REPLACE_ONE)
    batches = source.batches()
    theta0, sims0 = next(batches)
    emb0 = embed_batch(distance, prepared.W, sims0, prepared.d)  # checks shapes before the charge
    if not np.all(np.isfinite(emb0)):
        raise InvalidDataError("an embedding of the first batch is NaN or infinite; nothing was released.")
    rng = np.random.default_rng(seed)
    with charge_or_warn(ledger, dataset, event, label=label, insecure=gen.deterministic,
                        what="ABCDP embedding release"):
        released = prepared.mu + np.asarray(gen.normal(sigma, prepared.mu.size), dtype=np.float64)
    accepted, index, offset, n_acc = [], [], 0, 0
    theta, emb = theta0, emb0
    while True:
        noisy = emb + sigma * rng.standard_normal(emb.shape)  # the mechanism, simulated
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
        event, delta=dlt, accountant="pld", sensitivity=delta2, accounted=ledger is not None,
        mechanism="abcdp-gaussian-embedding", insecure_rng=gen.deterministic,
        details={"sigma": sigma, "noise_multiplier": s, "n_features": distance.n_features,
                 "distance": distance.config(), "epsilon_abc": float(epsilon_abc), "c": int(c),
                 "n_draws_examined": offset, "post_processing": "ABC on the released embedding, "
                 "mechanism noise simulated from the public seed; no cost beyond the one release",
                 "theorem": "Gaussian mechanism, L2 sensitivity 2/N of the RFF mean embedding "
                            "(||φ(x)|| = 1); analytic calibration (Balle & Wang 2018)"},
    )
    return ABCDPResult(
        accepted=np.concatenate(accepted), accepted_index=np.concatenate(index), n_draws=int(offset),
        epsilon_abc=float(epsilon_abc), param_names=tuple(param_names),
        meta=dict(meta or {}) | {"released_embedding": released.tolist()}, c=int(c), b=sigma,
        privacy=report, noise="gaussian-embedding", sigma_query=sigma,
    )
