"""The sparse-vector pass of ABCDP (Algorithm 1 of Park, Vinaroz & Jitkrittum 2021).

:class:`SparseVector` is the stateful engine: it holds the noisy threshold ε̂ = ε_abc + Lap(b)
and the acceptance count, and answers the queries ρ_1, ρ_2, ... in order:

    ρ̂_t = ρ_t + Lap(2b);  τ̃_t = 1 if ρ̂_t <= ε̂ (then count += 1 and, with RESAMPLE, a new
    ε̂ = ε_abc + Lap(b)) else 0;  stop once count = c.

Batches are processed by a compiled loop that is exactly this sequential rule (the noise for
a batch is drawn up front from the :class:`~dpinfer.privacy.PrivacyRNG`: i.i.d. draws, so the
joint law of the outputs is that of the per-query algorithm; noise drawn for queries after
the stop is discarded and never influences any output).

Query limit. The engine counts the queries it answers and answers no more than ``max_queries``,
the number its noise was calibrated for, whatever a caller or a draw source declares or yields.
The Gaussian pass needs it: its Rényi guarantee (Zhu & Wang 2020, Theorem 8) grows with the
number of queries k through ln Σ_{i<c} C(k, i), so ``max_queries`` is mandatory there and
:meth:`GaussianSparseVector.from_event` takes it from the charged event. Theorem 1 of Park et al.
holds for any number of queries, so the Laplace pass has no limit unless one is given.

Noise source. The engines draw through a :class:`~dpinfer.privacy.context.ReleaseContext` (whose
release the caller has charged before constructing the engine: the first threshold is drawn at
construction) or, inside :mod:`dpinfer.privacy` and in tests, a
:class:`~dpinfer.privacy.PrivacyRNG`. Seeds and numpy Generators are refused.

Secret randomness and floating point: the threshold and distance noise are secret (the proof of
Theorem 1 needs them unknown to the adversary), so they come only from the
:class:`~dpinfer.privacy.PrivacyRNG` (OS CSPRNG), never from the simulation seed, and are never
stored. Only the 0/1 answers are released — the noisy values are compared, never output — so the
reachability attack on floating-point Laplace releases (Mironov 2012) has no released value to
read. The residual floating-point effect is the sampler's: each Laplace draw is the inverse CDF of
a 52-bit uniform, whose CDF is within 2⁻⁵² of the exact one at every point, so each answer's
probability is within 2⁻⁵² of the ideal algorithm's (over n answered queries, at most an additive
n·2⁻⁵² beside the pure ε of Theorem 1, e.g. 2e-10 for a million queries). A noise scale below
2⁻⁴⁰ of the magnitudes it is compared with (the threshold ε_abc, the distances' public bound) is
refused (:func:`check_noise_scale`): the comparison would be noise-free in floating point.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import numba
import numpy as np

from ...errors import InvalidDataError, InvalidPrivacyParameterError
from ..context import ReleaseContext
from ..events import GaussianSparseVectorEvent, SparseVectorEvent
from ..rng import PrivacyRNG
from ..svt_scale import svt_laplace_scale

T = TypeVar("T")

#: The least noise scale, relative to the magnitudes the noisy values are compared with.
MIN_RELATIVE_NOISE = 2.0**-40


def check_noise_scale(scale: Any, *, magnitude: float = 0.0, name: str = "noise scale") -> float:
    """``scale`` as a float after checking that the noise it gives does not vanish.

    Refused (:class:`~dpinfer.errors.InvalidPrivacyParameterError`): a scale that is not finite,
    <= 0, below the normal doubles (2.2e-308), or below ``MIN_RELATIVE_NOISE`` times
    ``magnitude`` (the largest public magnitude of the values compared: the threshold, the
    distances' bound), where adding the noise would leave the comparison unchanged in floating
    point. The message names only public quantities.
    """
    try:
        value = float(scale)
    except (TypeError, ValueError):
        value = float("nan")
    mag = abs(float(magnitude)) if math.isfinite(float(magnitude)) else 0.0
    if isinstance(scale, bool) or not math.isfinite(value) or value < sys.float_info.min:
        raise InvalidPrivacyParameterError(
            f"the {name} is {scale!r}: it must be a finite positive normal double. The sensitivity or "
            "epsilon that produced it is out of range (a sensitivity of 0 or 1e-300, or an epsilon "
            "of 1e300, leaves no noise). Nothing was charged or released."
        )
    if value < MIN_RELATIVE_NOISE * mag:
        raise InvalidPrivacyParameterError(
            f"the {name} {value:.3g} is below 2^-40 of the values it is compared with (up to {mag:.3g}): "
            "the noise would vanish in floating point. Check the distance's sensitivity (it must come "
            "from public bounds) and epsilon. Nothing was charged or released."
        )
    return value


def _drawer(source: Any) -> Callable[[Callable[[PrivacyRNG], Any]], Any]:
    """How an engine draws: through the release context, or a privacy RNG (privacy-internal)."""
    if isinstance(source, ReleaseContext):
        return source.draw
    if isinstance(source, PrivacyRNG):
        return lambda draw: draw(source)
    raise TypeError(
        "the sparse vector's noise source must be a dpinfer.privacy.ReleaseContext (or a PrivacyRNG "
        f"inside dpinfer.privacy), got {type(source).__name__}: seeds and numpy Generators never "
        "drive privacy noise."
    )


def _check_max_queries(max_queries: Any, c: int) -> int | None:
    if max_queries is None:
        return None
    if isinstance(max_queries, bool) or not isinstance(max_queries, (int, np.integer)) or max_queries < c:
        raise InvalidPrivacyParameterError(
            f"max_queries must be an integer >= c = {c} (the number of queries the noise is "
            f"calibrated for), got {max_queries!r}."
        )
    return int(max_queries)


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
        The Laplace scale from Theorem 1 (:meth:`from_event`, or
        :func:`dpinfer.diagnostics.svt_noise_scale`); refused if the noise would vanish
        (:func:`check_noise_scale` against ε_abc).
    epsilon_abc
        The ABC threshold (>= 0).
    resample
        Redraw the threshold noise after every acceptance.
    rng
        The noise source: a :class:`~dpinfer.privacy.context.ReleaseContext` whose release is
        already charged, or a :class:`~dpinfer.privacy.PrivacyRNG` (inside the privacy core,
        tests). The first threshold is drawn here.
    max_queries
        Answer at most this many queries (None: no limit, as Theorem 1 allows). Once reached the
        engine is :attr:`done` and :attr:`exhausted`.
    """

    #: distance noise scale as a multiple of b (Lap(2b) in Algorithm 1; tests override it to
    #: check that the privacy audit catches a broken variant)
    query_noise_factor: float = 2.0

    def __init__(
        self,
        c: int,
        b: float,
        epsilon_abc: float,
        resample: bool,
        rng: ReleaseContext | PrivacyRNG,
        *,
        max_queries: int | None = None,
    ) -> None:
        if isinstance(c, bool) or int(c) != c or c < 1:
            raise InvalidPrivacyParameterError(f"c must be an integer >= 1, got {c!r}.")
        self.c = int(c)
        self.epsilon_abc = float(epsilon_abc)
        if not math.isfinite(self.epsilon_abc):
            raise InvalidPrivacyParameterError(f"epsilon_abc must be finite, got {epsilon_abc!r}.")
        self._check_noise(b)
        self.b = float(b)
        self.resample = bool(resample)
        self.max_queries = _check_max_queries(max_queries, self.c)
        self._draw = _drawer(rng)
        self.count = 0
        self.n_queries = 0
        self.threshold = self.epsilon_abc + float(self._threshold_noise(None))  # Alg. 1, line 2

    @classmethod
    def from_event(
        cls,
        event: SparseVectorEvent,
        sensitivity: float,
        epsilon_abc: float,
        rng: ReleaseContext | PrivacyRNG,
        *,
        max_queries: int | None = None,
    ) -> SparseVector:
        """The engine whose noise is the one ``event`` was charged for (Theorem 1, eq. (9)):
        b = (c + 1)·Δρ/ε with one threshold draw, 2c·Δρ/ε when it is redrawn."""
        if not isinstance(event, SparseVectorEvent):
            raise InvalidPrivacyParameterError(f"expected a SparseVectorEvent, got {type(event).__name__}.")
        b = svt_laplace_scale(event.c, event.epsilon, float(sensitivity), resample=event.resample)
        return cls(event.c, b, epsilon_abc, event.resample, rng, max_queries=max_queries)

    def _check_noise(self, b: float) -> None:
        check_noise_scale(b, magnitude=self.epsilon_abc, name="sparse vector noise scale b")

    def _threshold_noise(self, size: int | None) -> np.ndarray:
        return self._draw(lambda rng: rng.laplace(self.b, size))

    def _query_noise(self, size: int) -> np.ndarray:
        return self._draw(lambda rng: rng.laplace(self.query_noise_factor * self.b, size))

    @property
    def exhausted(self) -> bool:
        """True once ``max_queries`` queries have been answered."""
        return self.max_queries is not None and self.n_queries >= self.max_queries

    @property
    def done(self) -> bool:
        """True once c queries have been accepted or the query limit is reached."""
        return self.count >= self.c or self.exhausted

    def process(self, rho: np.ndarray) -> np.ndarray:
        """Answer the queries ``rho`` in order; returns the released 0/1 answers.

        The returned array is shorter than ``rho`` if the c-th acceptance happens inside the
        batch or the query limit is reached (the remaining queries are never answered).
        """
        if self.done:
            return np.zeros(0, dtype=np.uint8)
        rho = np.ascontiguousarray(rho, dtype=np.float64)
        if rho.ndim != 1:
            raise InvalidDataError(f"distances must be a 1-D array, got shape {rho.shape}.")
        if self.max_queries is not None:
            rho = rho[: self.max_queries - self.n_queries]
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
    Wang 2020, Theorem 8); the guarantee holds for at most the event's ``max_queries`` answered
    queries, which the engine enforces itself: ``max_queries`` is mandatory.

    Parameters
    ----------
    c, epsilon_abc, resample, rng
        As for :class:`SparseVector`.
    sigma_threshold, sigma_query
        Standard deviations σ1 and σ2 of the threshold and distance noise.
    max_queries
        The number of queries the noise is calibrated for (the event's ``max_queries``); no
        query beyond it is answered.
    """

    def __init__(
        self,
        c: int,
        sigma_threshold: float,
        sigma_query: float,
        epsilon_abc: float,
        resample: bool,
        rng: ReleaseContext | PrivacyRNG,
        *,
        max_queries: int,
    ) -> None:
        if max_queries is None:
            raise InvalidPrivacyParameterError(
                "a Gaussian sparse vector needs max_queries, the number of queries its noise is "
                "calibrated for (Zhu & Wang 2020, Theorem 8): use GaussianSparseVector.from_event."
            )
        self.sigma_threshold = float(sigma_threshold)
        self.sigma_query = float(sigma_query)
        super().__init__(c, sigma_threshold, epsilon_abc, resample, rng, max_queries=max_queries)

    @classmethod
    def from_event(  # type: ignore[override]
        cls,
        event: GaussianSparseVectorEvent,
        sensitivity: float,
        epsilon_abc: float,
        rng: ReleaseContext | PrivacyRNG,
    ) -> GaussianSparseVector:
        """The engine whose noise and query limit are those ``event`` was charged for:
        σ1 = threshold multiplier·Δρ, σ2 = query multiplier·Δρ, at most ``event.max_queries``."""
        if not isinstance(event, GaussianSparseVectorEvent):
            raise InvalidPrivacyParameterError(
                f"expected a GaussianSparseVectorEvent, got {type(event).__name__}."
            )
        delta_rho = float(sensitivity)
        return cls(
            event.c, event.threshold_noise_multiplier * delta_rho, event.query_noise_multiplier * delta_rho,
            epsilon_abc, event.resample, rng, max_queries=event.max_queries,
        )

    def _check_noise(self, b: float) -> None:
        for name, v in (("sigma_threshold", self.sigma_threshold), ("sigma_query", self.sigma_query)):
            check_noise_scale(v, magnitude=self.epsilon_abc, name=f"Gaussian sparse vector {name}")

    def _threshold_noise(self, size: int | None) -> np.ndarray:
        return self._draw(lambda rng: rng.normal(self.sigma_threshold, size))

    def _query_noise(self, size: int) -> np.ndarray:
        return self._draw(lambda rng: rng.normal(self.sigma_query, size))
