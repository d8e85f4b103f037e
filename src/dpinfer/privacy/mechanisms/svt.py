"""The sparse-vector pass of ABCDP (Algorithm 1 of Park, Vinaroz & Jitkrittum 2021).

:class:`SparseVector` is the stateful engine: it holds the noisy threshold ε̂ = ε_abc + Lap(b)
and the acceptance count, and answers the queries ρ_1, ρ_2, ... in order:

    ρ̂_t = ρ_t + Lap(2b);  τ̃_t = 1 if ρ̂_t <= ε̂ (then count += 1 and, with RESAMPLE, a new
    ε̂ = ε_abc + Lap(b)) else 0;  stop once count = c.

Batches are processed by a compiled loop that is exactly this sequential rule (the noise for
a batch is drawn up front from the :class:`~dpinfer.privacy.PrivacyRNG`: i.i.d. draws, so the
joint law of the outputs is that of the per-query algorithm; noise drawn for queries after
the stop is discarded and never influences any output).

Secret randomness and floating point: the threshold and distance noise are secret (the proof of
Theorem 1 needs them unknown to the adversary), so they come only from the
:class:`~dpinfer.privacy.PrivacyRNG` (OS CSPRNG), never from the simulation seed, and are never
stored. Only the 0/1 answers are released — the noisy values are compared, never output — so the
reachability attack on floating-point Laplace releases (Mironov 2012) has no released value to
read. The residual floating-point effect is the sampler's: each Laplace draw is the inverse CDF of
a 52-bit uniform, whose CDF is within 2⁻⁵² of the exact one at every point, so each answer's
probability is within 2⁻⁵² of the ideal algorithm's (over n answered queries, at most an additive
n·2⁻⁵² beside the pure ε of Theorem 1, e.g. 2e-10 for a million queries).
"""

from __future__ import annotations

import numba
import numpy as np

from ...errors import InvalidDataError, InvalidPrivacyParameterError
from ..rng import PrivacyRNG


@numba.njit(cache=True)
def _svt_pass(
    rho: np.ndarray,
    dist_noise: np.ndarray,
    thr_noise: np.ndarray,
    threshold: float,
    epsilon_abc: float,
    resample: bool,
    count: int,
    c: int,
    out: np.ndarray,
) -> tuple[int, int, float]:  # pragma: no cover - jitted
    """Answer the queries of one batch in order; returns (processed, count, threshold)."""
    k = 0
    for i in range(rho.shape[0]):
        if rho[i] + dist_noise[i] <= threshold:
            out[i] = 1
            count += 1
            if count >= c:
                return i + 1, count, threshold
            if resample:
                threshold = epsilon_abc + thr_noise[k]
                k += 1
        else:
            out[i] = 0
    return rho.shape[0], count, threshold


class SparseVector:
    """Algorithm 1 as a stateful engine over a stream of distances.

    Parameters
    ----------
    c
        Stop after c acceptances.
    b
        The Laplace scale from Theorem 1 (:func:`dpinfer.diagnostics.svt_noise_scale`).
    epsilon_abc
        The ABC threshold (>= 0).
    resample
        Redraw the threshold noise after every acceptance.
    rng
        The privacy RNG (the only source of the noise).
    """

    #: distance noise scale as a multiple of b (Lap(2b) in Algorithm 1; tests override it to
    #: check that the privacy audit catches a broken variant)
    query_noise_factor: float = 2.0

    def __init__(self, c: int, b: float, epsilon_abc: float, resample: bool, rng: PrivacyRNG) -> None:
        if int(c) != c or c < 1:
            raise InvalidPrivacyParameterError(f"c must be an integer >= 1, got {c!r}.")
        if not np.isfinite(b) or b < 0:
            raise InvalidPrivacyParameterError(f"b must be finite and >= 0, got {b!r}.")
        self.c = int(c)
        self.b = float(b)
        self.epsilon_abc = float(epsilon_abc)
        self.resample = bool(resample)
        self.rng = rng
        self.count = 0
        self.n_queries = 0
        self.threshold = self.epsilon_abc + float(self._threshold_noise(None))  # Alg. 1, line 2

    def _threshold_noise(self, size: int | None) -> np.ndarray:
        return self.rng.laplace(self.b, size)  # type: ignore[no-any-return]

    def _query_noise(self, size: int) -> np.ndarray:
        return self.rng.laplace(self.query_noise_factor * self.b, size)  # type: ignore[no-any-return]

    @property
    def done(self) -> bool:
        """True once c queries have been accepted."""
        return self.count >= self.c

    def process(self, rho: np.ndarray) -> np.ndarray:
        """Answer the queries ``rho`` in order; returns the released 0/1 answers.

        The returned array is shorter than ``rho`` if the c-th acceptance happens inside the
        batch (the remaining queries are never answered).
        """
        if self.done:
            return np.zeros(0, dtype=np.uint8)
        rho = np.ascontiguousarray(rho, dtype=np.float64)
        if rho.ndim != 1:
            raise InvalidDataError(f"distances must be a 1-D array, got shape {rho.shape}.")
        if not np.all(np.isfinite(rho)):
            raise InvalidDataError(
                "a distance is NaN or infinite; check the simulator output and the distance. "
                "The query was not answered."
            )
        n = rho.shape[0]
        dist_noise = np.asarray(self._query_noise(n), dtype=np.float64)
        n_thr = min(n, self.c - self.count) if self.resample else 0
        thr_noise = np.asarray(self._threshold_noise(n_thr), dtype=np.float64).reshape(n_thr)
        out = np.empty(n, dtype=np.uint8)
        processed, count, threshold = _svt_pass(
            rho, dist_noise, thr_noise, self.threshold, self.epsilon_abc, self.resample,
            self.count, self.c, out,
        )
        self.count = int(count)
        self.threshold = float(threshold)
        self.n_queries += int(processed)
        return out[:processed]


class GaussianSparseVector(SparseVector):
    """The same pass with Gaussian noise: threshold ε_abc + N(0, σ1²), distances + N(0, σ2²).

    The noise scales come from :func:`dpinfer.privacy.calibrate_gaussian_svt` (Rényi DP, Zhu &
    Wang 2020, Theorem 8); the guarantee also needs the number of answered queries to stay at
    most the event's ``max_queries`` (the stream length T, enforced by the caller).

    Parameters
    ----------
    c, epsilon_abc, resample, rng
        As for :class:`SparseVector`.
    sigma_threshold, sigma_query
        Standard deviations σ1 and σ2 of the threshold and distance noise.
    """

    def __init__(
        self,
        c: int,
        sigma_threshold: float,
        sigma_query: float,
        epsilon_abc: float,
        resample: bool,
        rng: PrivacyRNG,
    ) -> None:
        for name, v in (("sigma_threshold", sigma_threshold), ("sigma_query", sigma_query)):
            if not np.isfinite(v) or v < 0:
                raise InvalidPrivacyParameterError(f"{name} must be finite and >= 0, got {v!r}.")
        self.sigma_threshold = float(sigma_threshold)
        self.sigma_query = float(sigma_query)
        super().__init__(c, sigma_threshold, epsilon_abc, resample, rng)

    def _threshold_noise(self, size: int | None) -> np.ndarray:
        return self.rng.normal(self.sigma_threshold, size)  # type: ignore[no-any-return]

    def _query_noise(self, size: int) -> np.ndarray:
        return self.rng.normal(self.sigma_query, size)  # type: ignore[no-any-return]
