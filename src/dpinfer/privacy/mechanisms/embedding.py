"""The Gaussian release of a D-dimensional embedding, floating-point safe, with its exact accounting.

ABCDP's one-release variant (:mod:`dpinfer.release.embedding`) publishes a noisy random-feature
mean embedding μ̃ of the confidential data (L2 sensitivity Δ = 2/N). Releasing
``μ + float_noise`` is not differentially private for any useful δ: the set of doubles reachable
from ``μ + noise`` depends on μ (Mironov 2012), and one release tells neighbouring data sets
apart. This module releases instead

    μ̃ = γ·(k + Z),   k = round(μ/γ) ∈ Z^D,   Z ~ N_Z(0, σ_γ²)^D  (exact discrete Gaussian),

with Z drawn by the exact sampler of Canonne, Kamath & Steinke (2020, Algorithm 3; CKS below)
from the :class:`~dpinfer.privacy.PrivacyRNG`. Every released coordinate is an exact double
(``|k + Z| < 2⁵³``), a function of the noisy integer only: the support of the release is the
lattice γ·Z^D whatever the data.

Grid (public quantities only: Δ, D and the continuous noise σ_c = s·Δ)
---------------------------------------------------------------------
γ = min(2^(⌊log₂(Δ/√D)⌋ − 10), 2^(⌊log₂ σ_c⌋ − 10)), so that Δ/γ ≥ 2¹⁰·√D and σ_c/γ ≥ 2¹⁰.

Sensitivity in grid units. Rounding moves each coordinate by at most ½, so for neighbouring
data with ||μ − μ'||₂ <= Δ,

    ||round(μ/γ) − round(μ'/γ)||₂ <= ||μ − μ'||₂/γ + ||e − e'||₂ <= Δ/γ + √D =: Δ_γ,

(e, e' ∈ [−½, ½]^D the rounding errors). By the choice of γ, √D <= 2⁻¹⁰·Δ/γ: rounding costs at
most 0.1% more noise.

Accounting: a discrete Gaussian is a post-processed continuous one, up to 10⁻⁵⁴⁰
-------------------------------------------------------------------------------
Theorem. Let t > 0, σ_γ² = s_γ² + t², and η = 2 Σ_{j>=1} exp(−2π²t²j²). For integer vectors
k, k' with ||k − k'||₂ <= Δ_γ, every output set S and every ε >= 0,

    P[k + Z ∈ S] <= e^ε P[k' + Z ∈ S] + δ_G(ε; s_γ/Δ_γ) + (1 + e^ε)(e^{Dζ} − 1),
    ζ = log((1 + η)/(1 − η)),

where δ_G(ε; z) = Φ(1/(2z) − εz) − e^ε Φ(−1/(2z) − εz) is the exact privacy curve of the Gaussian
mechanism with noise multiplier z (Balle & Wang 2018, Theorem 8).

Proof. Let G ~ N(0, s_γ² I_D) and let K be the randomised map that, given g ∈ R^D, draws each
coordinate from the discrete Gaussian centred at g_j, P(n | g_j) = exp(−(n − g_j)²/(2t²))/Θ(g_j),
Θ(g) = Σ_m exp(−(m − g)²/(2t²)). Θ has period 1, so K(g + k) has the law of K(g) + k for
integer k: M̃(k) := K(k + G) is a post-processing of the Gaussian mechanism k ↦ k + G, whose
multiplier on integer vectors at L2 distance <= Δ_γ is s_γ/Δ_γ; M̃ therefore satisfies the
Gaussian curve δ_G (post-processing; Dwork & Roth 2014, Prop. 2.1). By Poisson summation,
Θ(g) = √(2π)·t·(1 + 2 Σ_j exp(−2π²t²j²) cos(2πjg)) ∈ [√(2π)t(1 − η), √(2π)t(1 + η)]. With Θ
replaced by its mean √(2π)t, the law of one coordinate of K(G) would be
∫ φ_{s_γ}(g) exp(−(n − g)²/(2t²)) dg/(√(2π)t) = φ_{σ_γ}(n) (Gaussian convolution), while the
discrete Gaussian has P(Z_j = n) = exp(−n²/(2σ_γ²))/(√(2π)σ_γ(1 + η_σ)) with
0 <= η_σ <= η (Poisson summation again, σ_γ >= t). Hence the pmf of K(G) lies within a factor
e^{±ζ} of that of Z per coordinate and e^{±Dζ} jointly, so for every S,
|P[k + Z ∈ S] − P[M̃(k) ∈ S]| <= e^{Dζ} − 1, and the claim follows from M̃'s curve applied
between the two bounds. ∎

Here t = 8 grid units (σ_γ >= 2¹⁰, so the noise grows by a factor <= 1 + 3·10⁻⁵): η < 10⁻⁵⁴⁸ and
the last term is below 10⁻²⁰⁰ for every ε <= 700 and D <= 10¹², far below the float resolution of
any δ. The release is therefore charged as :class:`~dpinfer.privacy.events.GaussianEvent` with
the multiplier s of the continuous calibration (``"pld"``: the exact analytic Gaussian), and
s_γ = √(σ_γ² − t²) >= s·Δ_γ by construction of the integer σ_γ². The privacy-loss accountants
(PLD: exact; RDP: its conversion) therefore account the discrete release itself, on any ledger.
The slack bound is recorded in the report (``noise_slack_log10``). The check against the exact
one-dimensional discrete Gaussian curve (CKS Theorem 7) is in the tests.

Sensitivity of the *computed* mean (floating-point rounding)
-----------------------------------------------------------
The Δ of the plan must bound what is released, the computed μ̂(Y), not the exact mean. Let the
unscaled features x_i ∈ R^D (D = 2J, J cos/sin pairs) of the N records be computed by a fixed
feature map with pair norms ||(x_ij, x_i,J+j)||₂ <= ρ (so ||x_i||₂ <= √J·ρ and the scaled
feature φ̃(y_i) = √(2/D)·x_i has ||φ̃||₂ <= ρ: the feature map's own rounding is in ρ), let
μ(Y) = (1/N)Σ_i φ̃(y_i) exactly (reals), and let the computed mean satisfy ||μ̂(Y) − μ(Y)||₂ <= E for
every data set of N records. Then for neighbours (one record replaced)

    ||μ̂(Y) − μ̂(Y')||₂ <= ||μ(Y) − μ(Y')||₂ + ||μ̂(Y) − μ(Y)||₂ + ||μ̂(Y') − μ(Y')||₂ <= 2ρ/N + 2E

(:func:`computed_mean_sensitivity`). E for the accumulations in the code (:func:`mean_rounding_error`;
u = 2⁻⁵³ in float64, u₃₂ = 2⁻²⁴ in float32, γ_k = ku/(1 − ku)). Every path scales the sums by
c = √(2/D)/N with at most five roundings (2/D, √, /N, the product, and converting an integer sum):
Ŝ_j·c·(1 + θ_j), |θ_j| <= γ₅ (Higham 2002, "Accuracy and Stability of Numerical
Algorithms", Lemma 3.1; a square root of 1 + δ is 1 + δ', |δ'| <= |δ|).

* ``"exact"`` (the release path, :meth:`~dpinfer.distances.mmd.RFFMMD.fixed_point_mean`): the
  sums are exact, so μ̂_j = μ_j(1 + θ_j) and E = γ₅·||μ||₂ <= γ₅·ρ.
* ``"float64"`` (the numba float64 kernels, numpy's float64 BLAS, torch's float64 sums): any
  summation order gives |Ŝ_j − S_j| <= γ_{N−1}·Σ_i |x_ij| (Higham 2002, §4.2: Ŝ_j = Σ_i x_ij(1 + δ_i)
  with each term rounded by at most the N − 1 additions on its path, |δ_i| <= γ_{N−1}), so
  |μ̂_j − μ_j| <= c·(γ_{N−1} + γ₅ + γ_{N−1}γ₅)·Σ_i|x_ij| <= c·γ_{N+4}·Σ_i|x_ij| (Higham 2002,
  Lemma 3.3). By Minkowski's inequality ||(Σ_i |x_ij|)_j||₂ <= Σ_i ||x_i||₂ <= N√J·ρ,
  and c·N√J = 1: E = γ_{N+4}·ρ (in float32 features too: ρ carries their precision).
* ``"float32"`` with blocks of B terms (the numba float32 kernel, B = 64; the numpy float32 path,
  B = ⌊2¹⁷/J⌋): block sums in float32 err by <= γ^{(32)}_{B−1}·Σ_{block}|x_ij|, their float64 sum
  over ⌈N/B⌉ blocks and the scaling as above: E = (g + (1 + g)·γ_{⌈N/B⌉+4})·ρ, g = γ^{(32)}_{B−1}.

Relative to 2/N the inflation 2E/(2ρ/N) = N·E/ρ is N·γ₅ <= 5.6·10⁻¹⁶·N for ``"exact"`` (5.6·10⁻¹⁰ at
N = 10⁶), about N²·u for ``"float64"`` (1.1·10⁻⁴ at N = 10⁶; a worst-case bound: adversarial
features reach 6% of its E in the tests) and N·63·u₃₂ for the float32 kernel (38% at N = 10⁵).
The release therefore computes its mean by the exact path whatever the distance's dtype and
backend (:mod:`dpinfer.release.embedding`) and charges 2ρ_N/N + 2γ₅ρ_N.

Refusals (nothing charged, nothing released): a non-finite or wrongly sized embedding, a value
too large for its grid (``|μ|/γ >= 2⁵⁰``) and a noise scale outside the exact sampler's range.

Post-processing. :func:`simulate_release` draws the *released* law (grid rounding plus a discrete
Gaussian N_Z(0, σ_γ²), CKS Algorithm 3 with floating-point acceptance probabilities) from a
public numpy Generator, for ABC on the released embedding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from ...errors import InvalidDataError, InvalidPrivacyParameterError, refuse_removed_keywords
from ..calibration import composed_gaussian_multiplier
from ..context import FLAT_RELEASE_KEYWORDS, ReleaseContext
from ..events import REPLACE_ONE, GaussianEvent
from ..grid import grid_integers, power_of_two_grid
from ..validation import check_delta, check_epsilon, check_relation, check_sensitivity

__all__ = [
    "EMBEDDING_GRID_BITS",
    "SMOOTHING_UNITS",
    "EmbeddingGrid",
    "computed_distance_bound",
    "computed_distance_sensitivity",
    "computed_mean_sensitivity",
    "embedding_grid",
    "mean_rounding_error",
    "public_discrete_gaussian",
    "release_embedding",
    "simulate_release",
]

#: Bits of the grid below Δ/√D and below σ: rounding adds at most 2⁻¹⁰ of the sensitivity.
EMBEDDING_GRID_BITS = 10
#: t of the theorem (grid units): the discrete Gaussian is a post-processed N(0, σ_γ² − t²).
SMOOTHING_UNITS = 8
#: Largest σ_γ² the exact sampler accepts (:data:`dpinfer.privacy.discrete.MAX_GAUSSIAN_SIGMA2`).
_MAX_SIGMA2_UNITS = 2**100


#: The accumulations of :func:`mean_rounding_error` and their unit roundoffs.
_UNIT_ROUNDOFF = {"float64": Fraction(1, 2**53), "float32": Fraction(1, 2**24)}
ACCUMULATIONS = ("exact", "float64", "float32")


def _gamma(k: int, u: Fraction) -> Fraction:
    """γ_k = k·u/(1 − k·u) (Higham 2002, Lemma 3.1), exactly; k·u < 1 required."""
    if k * u >= 1:
        raise InvalidPrivacyParameterError(
            f"no rounding-error bound: {k} roundings of unit roundoff {float(u):.3g} (k·u >= 1); "
            "accumulate exactly or in higher precision."
        )
    return k * u / (1 - k * u)


def _round_up(x: Fraction) -> float:
    """The least double >= the rational x."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def _check_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidPrivacyParameterError(f"{name} must be an integer >= 1, got {value!r}.")
    return int(value)


def _check_feature_norm(value: Any) -> Fraction:
    try:
        rho = float(value)
    except (TypeError, ValueError):
        rho = math.nan
    if not (math.isfinite(rho) and rho >= 1.0):
        raise InvalidPrivacyParameterError(
            f"feature_norm must be a finite bound >= 1 on the features' pair norm, got {value!r}."
        )
    return Fraction(rho)


def _rounding_error(n: int, rho: Fraction, accumulation: str, block: int) -> Fraction:
    u = _UNIT_ROUNDOFF["float64"]
    if accumulation == "exact":
        return _gamma(5, u) * rho
    if accumulation == "float64":
        return _gamma(n + 4, u) * rho
    if accumulation == "float32":
        g = _gamma(min(block, n) - 1, _UNIT_ROUNDOFF["float32"])
        return (g + (1 + g) * _gamma(-(-n // block) + 4, u)) * rho
    raise InvalidPrivacyParameterError(f"accumulation must be one of {ACCUMULATIONS}, got {accumulation!r}.")


def mean_rounding_error(
    n_records: int, *, feature_norm: float, accumulation: str = "exact", block: int = 64
) -> float:
    """E >= ||μ̂(Y) − μ(Y)||₂ for every data set of N records: the rounding error of a computed
    random-feature mean embedding (module docstring, "Sensitivity of the computed mean").

    Parameters
    ----------
    n_records
        N >= 1 (public).
    feature_norm
        ρ >= 1, a bound on the pair norm ||(cos, sin)||₂ of the *computed* features (e.g.
        :func:`dpinfer.distances.rff_kernels.fixed_point_feature_norm` for the release kernel).
    accumulation
        ``"exact"`` (exact sums, five roundings of the scaling), ``"float64"`` (sums in float64,
        any order) or ``"float32"`` (float32 partial sums of ``block`` terms, totals in float64).
    block
        B, the float32 block size (``"float32"`` only).

    Returns
    -------
    float
        E, rounded up to a double (a function of N, ρ and the algorithm only).

    Raises
    ------
    InvalidPrivacyParameterError
        For invalid arguments, or an accumulation with k·u >= 1 (no bound).
    """
    n = _check_count(n_records, "n_records")
    return _round_up(_rounding_error(n, _check_feature_norm(feature_norm), accumulation,
                                     _check_count(block, "block")))


def computed_mean_sensitivity(
    n_records: int, *, feature_norm: float, accumulation: str = "exact", block: int = 64
) -> float:
    """Δ̂ = 2ρ/N + 2E >= ||μ̂(Y) − μ̂(Y')||₂ for replace-one neighbours: the L2 sensitivity of the
    *computed* mean embedding (module docstring), rounded up; arguments as
    :func:`mean_rounding_error`. With ρ = 1 and E = 0 it is the exact-arithmetic 2/N."""
    n = _check_count(n_records, "n_records")
    rho = _check_feature_norm(feature_norm)
    err = _rounding_error(n, rho, accumulation, _check_count(block, "block"))
    return _round_up(2 * rho / n + 2 * err)


# --------------------------------------------------------------------------------------------
# The computed distance ρ̂ = ||v − μ̂|| of the sparse vector and private SMC (RFF MMD)
# --------------------------------------------------------------------------------------------
def _distance_terms(n_records: Any, feature_norm: Any, dimension: Any, public_radius: Any
                    ) -> tuple[Fraction, Fraction, Fraction, Fraction]:
    """(Δ_a, A, V, γ_{D+3}) of :func:`computed_distance_sensitivity`, exactly."""
    n = _check_count(n_records, "n_records")
    d = _check_count(dimension, "dimension")
    rho = _check_feature_norm(feature_norm)
    try:
        radius = float(public_radius)
    except (TypeError, ValueError):
        radius = math.nan
    if not (math.isfinite(radius) and radius > 0.0):
        raise InvalidPrivacyParameterError(f"public_radius must be a finite R > 0, got {public_radius!r}.")
    u = _UNIT_ROUNDOFF["float64"]
    g5 = _gamma(5, u)
    delta_a = 2 * rho / n + 2 * g5 * rho  # ||μ̂(Y) − μ̂(Y')||₂ (exact path, module docstring)
    a = (1 + g5) * rho  # ||μ̂(Y)||₂
    v = Fraction(radius) * (1 + _gamma(3, u)) / (1 - _gamma(d, u))  # ||v'||₂ after the projection
    return delta_a, a, v, _gamma(d + 3, u)


def computed_distance_sensitivity(
    n_records: int, *, feature_norm: float, dimension: int, public_radius: float
) -> float:
    """Δ̂ρ >= |ρ̂(Y*, Y) − ρ̂(Y*', Y)| for replace-one neighbours Y*, Y*' and every simulated Y: the
    sensitivity of the *computed* RFF MMD ρ̂ = fl(√(fl(Σ_j fl(v_j − μ̂_j)²))), rounded up.

    Setting (:class:`dpinfer.distances.RFFMMD`, all in float64, u = 2⁻⁵³, γ_k = ku/(1 − ku)):
    μ̂ = μ̂(Y*) is the observed mean computed by the exact path (module docstring: every coordinate
    μ_j(1 + θ_j), |θ_j| <= γ₅, μ the exact mean of features of pair norm <= ρ = ``feature_norm``), so
    ||μ̂ − μ̂'||₂ <= Δ_a = 2ρ/N + 2γ₅ρ (:func:`computed_mean_sensitivity`) and ||μ̂||₂ <= A = (1 + γ₅)ρ.
    v ∈ R^D is the simulated data set's embedding, computed from public inputs only (the same
    double vector for both neighbours, in any precision or backend) and then projected: if the
    computed n̂ = fl(Σ_j v_j²) exceeds R² (R = ``public_radius``) it is replaced by fl(v·fl(R/fl(√n̂))).
    Then ||v'||₂ <= V = R(1 + γ₃)/(1 − γ_D): without the projection ||v||² <= n̂/(1 − γ_D) <= R²/(1 − γ_D)
    (an inner product of length D errs by <= γ_D Σ_j v_j², Higham 2002, "Accuracy and Stability
    of Numerical Algorithms", eq. (3.5)); with it the factor is R/(||v||√(1 + η))·(1 + γ₂), |η| <= γ_D,
    and the product rounds once more (Lemma 3.3).

    Proof. Let e = v' − μ̂ (reals). The subtraction gives fl(e_j) = e_j(1 + ε_j), |ε_j| <= u; the inner
    product s = Σ_j e_j²(1 + ε_j)²(1 + δ_j), |δ_j| <= γ_D (eq. (3.5), any summation order, a fused
    multiply-add only removing roundings), so s = ||e||²(1 + η), |η| <= γ_{D+2} (Lemma 3.3); the square
    root gives ρ̂ = √(1 + η)(1 + ε')·||e||₂ = ||e||₂(1 + θ), |θ| <= γ_{D+3} (|√(1 + η) − 1| <= |η|).
    For the neighbour, e' = v' − μ̂' with the same v', and

        |ρ̂ − ρ̂'| <= | ||e|| − ||e'|| | + |θ|·||e|| + |θ'|·||e'|| <= ||μ̂ − μ̂'|| + γ_{D+3}(||e|| + ||e'||)
                  <= Δ_a + 2γ_{D+3}(V + A).  ∎

    The first term is Lemma 1 of Park, Vinaroz & Jitkrittum (2021) for the computed features
    (2ρ/N) plus the rounding of the observed side; the rest is the rounding of the subtraction,
    squares, sum and square root. At D = 100 the excess over 2/N is about 5·10⁻¹⁴ (absolute).

    Parameters
    ----------
    n_records
        N >= 1 (public).
    feature_norm
        ρ >= 1, the pair-norm bound of the exact path's features
        (:func:`dpinfer.distances.rff_kernels.fixed_point_feature_norm`).
    dimension
        D, the number of features.
    public_radius
        R > 0, the radius the simulated embeddings are projected to.
    """
    delta_a, a, v, g = _distance_terms(n_records, feature_norm, dimension, public_radius)
    return _round_up(delta_a + 2 * g * (v + a))


def computed_distance_bound(
    n_records: int, *, feature_norm: float, dimension: int, public_radius: float
) -> float:
    """B >= ρ̂ for every computed RFF MMD of :func:`computed_distance_sensitivity` (same arguments):
    ρ̂ = ||e||₂(1 + θ) <= (V + A)(1 + γ_{D+3}), rounded up."""
    _, a, v, g = _distance_terms(n_records, feature_norm, dimension, public_radius)
    return _round_up((v + a) * (1 + g))


def _log10_eta(t: float) -> float:
    """log₁₀ of η = 2 Σ_{j>=1} exp(−2π²t²j²) (the j >= 2 terms add a factor < 1 + 10⁻¹⁶⁰⁰)."""
    return math.log10(2.0) - 2.0 * math.pi**2 * t * t / math.log(10.0)


@dataclass(frozen=True)
class EmbeddingGrid:
    """The plan of one floating-point-safe Gaussian embedding release (module docstring).

    Attributes
    ----------
    gamma
        The grid γ, a power of two chosen from public quantities.
    dimension
        D, the number of released coordinates.
    l2_sensitivity
        Δ, the L2 sensitivity of the embedding (data units).
    sensitivity_units
        Δ_γ >= Δ/γ + √D, the L2 sensitivity of the rounded embedding (grid units).
    sigma2_units
        σ_γ², the variance parameter of the discrete Gaussian noise (an integer, grid units).
    noise_multiplier
        s, the continuous multiplier the release is accounted with (``event``).
    event
        ``GaussianEvent(s)``: what the release is charged as.
    """

    gamma: float
    dimension: int
    l2_sensitivity: float
    sensitivity_units: float
    sigma2_units: int
    noise_multiplier: float
    event: GaussianEvent

    @property
    def sigma(self) -> float:
        """The discrete Gaussian's scale in data units, γ·σ_γ (its variance is within 10⁻⁵⁰⁰ of σ²)."""
        return self.gamma * math.sqrt(self.sigma2_units)

    @property
    def noise_slack_log10(self) -> float:
        """log₁₀ of an upper bound on (e^{Dζ} − 1) of the theorem; times (1 + e^ε) it is the
        additive δ slack beside the Gaussian curve."""
        # ζ = log((1 + η)/(1 − η)) <= 2.01·η and e^x − 1 <= 1.01·x for the x < 10⁻⁵⁰⁰ here
        return math.log10(2.04 * self.dimension) + _log10_eta(SMOOTHING_UNITS)

    def details(self) -> dict[str, Any]:
        """The plan's numbers for a privacy report."""
        return {
            "grid": self.gamma,
            "sigma2_units": self.sigma2_units,
            "sensitivity_units": self.sensitivity_units,
            "smoothing_units": SMOOTHING_UNITS,
            "noise_slack_log10": self.noise_slack_log10,
        }


def embedding_grid(
    l2_sensitivity: float,
    epsilon: float,
    delta: float,
    dimension: int,
    *,
    neighbouring: str = REPLACE_ONE,
) -> EmbeddingGrid:
    """Plan the floating-point-safe (ε, δ) Gaussian release of a D-dimensional embedding.

    The multiplier s is the least one the ``"pld"`` accountant certifies for a Gaussian
    mechanism at (ε, δ) (the exact analytic Gaussian of Balle & Wang 2018); the grid and the
    integer σ_γ² follow the module docstring, and only public quantities enter.

    Parameters
    ----------
    l2_sensitivity
        Δ, the L2 sensitivity of the embedding under ``neighbouring`` (e.g. 2/N).
    epsilon, delta
        The privacy level of the release; 0 < δ < 1.
    dimension
        D >= 1, the number of coordinates.
    neighbouring
        The relation Δ is computed under.

    Raises
    ------
    InvalidPrivacyParameterError
        For invalid parameters or a noise scale the exact sampler cannot draw.
    """
    sens = check_sensitivity(l2_sensitivity, "l2_sensitivity")
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    relation = check_relation(neighbouring)
    if not 0.0 < dlt < 1.0:
        raise InvalidPrivacyParameterError(
            f"a Gaussian release is (epsilon, delta)-DP: delta must be in (0, 1), got {delta!r}."
        )
    try:
        d = int(dimension)
        valid = not isinstance(dimension, bool) and d == dimension and d >= 1
    except (TypeError, ValueError, OverflowError):
        valid = False
    if not valid:
        raise InvalidPrivacyParameterError(f"dimension must be an integer >= 1, got {dimension!r}.")
    return _plan(sens, eps, dlt, d, relation)


@lru_cache(maxsize=64)  # a pure function of public numbers; the calibration costs ~10 ms
def _plan(sens: float, eps: float, dlt: float, d: int, relation: str) -> EmbeddingGrid:
    s = composed_gaussian_multiplier(eps, dlt, 1, "pld")
    root_d = math.nextafter(math.sqrt(d), math.inf)
    gamma = min(
        power_of_two_grid(sens / root_d, EMBEDDING_GRID_BITS),
        power_of_two_grid(s * sens, EMBEDDING_GRID_BITS),
    )
    units = math.nextafter(sens / gamma + root_d, math.inf)  # Δ/γ is exact (γ a power of two)
    # σ_γ² = ⌈(s·Δ_γ)²(1 + 2⁻⁴⁰)⌉ + t²: then √(σ_γ² − t²) >= s·Δ_γ despite float rounding
    sigma2 = math.ceil((s * units) ** 2 * (1.0 + 2.0**-40)) + SMOOTHING_UNITS**2
    if sigma2 > _MAX_SIGMA2_UNITS:
        raise InvalidPrivacyParameterError(
            f"the noise of this release would be {math.sqrt(sigma2):.3g} grid units, beyond the exact "
            "sampler's range (2^50): epsilon is too small for this dimension. Choose a larger "
            "epsilon or fewer features. Nothing was charged or released."
        )
    event = GaussianEvent(s, neighbouring=relation)
    return EmbeddingGrid(gamma, d, sens, units, int(sigma2), s, event)


def _check_embedding(mu: Any, plan: EmbeddingGrid) -> np.ndarray:
    try:
        arr = np.asarray(mu, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidDataError("the embedding must be an array of numbers; nothing was released.") from None
    if arr.ndim != 1 or arr.size != plan.dimension:
        raise InvalidDataError(
            f"the embedding must be a vector of {plan.dimension} coordinates (the plan's dimension), "
            f"got shape {arr.shape}; nothing was charged or released."
        )
    if not np.all(np.isfinite(arr)):
        raise InvalidDataError(
            "the embedding of the observed data is NaN or infinite (a record too large for the "
            "feature map's arithmetic?); check the data. Nothing was charged or released."
        )
    return arr


@refuse_removed_keywords(FLAT_RELEASE_KEYWORDS)
def release_embedding(mu: Any, plan: EmbeddingGrid, *, context: ReleaseContext, what: str = "") -> np.ndarray:
    """Release ``γ·(round(μ/γ) + Z)``: validate, charge ``plan.event`` through ``context``, draw.

    Parameters
    ----------
    mu
        The confidential embedding, shape (D,).
    plan
        From :func:`embedding_grid`.
    context
        The :class:`~dpinfer.privacy.context.ReleaseContext` that charges the event (or warns
        that the release is unaccounted) and holds the PrivacyRNG.
    what
        Names the release in warnings and the ledger.

    Returns
    -------
    numpy.ndarray
        The released embedding, shape (D,): exact multiples of ``plan.gamma``.
    """
    from ..discrete import sample_discrete_gaussian

    if not isinstance(plan, EmbeddingGrid):
        raise InvalidPrivacyParameterError(f"plan must be an EmbeddingGrid, got {type(plan).__name__}.")
    if not isinstance(context, ReleaseContext):
        raise InvalidPrivacyParameterError(f"context must be a ReleaseContext, got {type(context).__name__}.")
    k = grid_integers(_check_embedding(mu, plan), plan.gamma)  # refuses values too large for the grid

    def draw(rng: Any) -> np.ndarray:
        noise = sample_discrete_gaussian(plan.sigma2_units, k.size, rng)
        return (k + noise).astype(np.float64) * plan.gamma  # |k + Z| < 2^53: exact doubles

    return context.release(plan.event, draw, what=what or "Gaussian embedding release")


def public_discrete_gaussian(sigma2: int, size: Any, rng: np.random.Generator) -> np.ndarray:
    """Discrete Gaussian N_Z(0, σ²) draws from a *public* numpy Generator (simulation only).

    CKS (2020) Algorithm 3 with t = ⌊σ⌋ + 1: Y = G₁ − G₂ with G₁, G₂ i.i.d. geometric on
    {0, 1, ...} of ratio e^{−1/t} is discrete Laplace(t); it is accepted with probability
    exp(−(|Y| − σ²/t)²/(2σ²)). The law is exact up to the double-precision rounding of the
    geometric and acceptance probabilities (relative 10⁻¹⁵), far below any Monte Carlo error.
    Never use it for privacy noise: it is reproducible from the seed.

    Returns
    -------
    numpy.ndarray
        float64 integers of shape ``size``.
    """
    s2 = int(sigma2)
    if s2 < 1:
        raise InvalidPrivacyParameterError(f"sigma2 must be an integer >= 1, got {sigma2!r}.")
    shape = (int(size),) if np.ndim(size) == 0 else tuple(int(x) for x in size)
    n = math.prod(shape)
    t = math.isqrt(s2) + 1
    p = -math.expm1(-1.0 / t)
    out = np.empty(n, dtype=np.float64)
    todo = np.arange(n)
    while todo.size:
        m = todo.size
        y = (rng.geometric(p, m) - rng.geometric(p, m)).astype(np.float64)
        dev = np.abs(y) - s2 / t
        ok = rng.random(m) < np.exp(-dev * dev / (2.0 * s2))
        out[todo[ok]] = y[ok]
        todo = todo[~ok]
    return out.reshape(shape)


def simulate_release(embeddings: Any, plan: EmbeddingGrid, rng: np.random.Generator) -> np.ndarray:
    """The released law applied to public embeddings: ``γ·(round(e/γ) + Z)``, Z from ``rng``.

    For ABC on the released embedding: each row (a simulated data set's embedding) goes through
    the same grid rounding as :func:`release_embedding` and gets discrete Gaussian noise of the
    same σ_γ² from :func:`public_discrete_gaussian` (public randomness from the seed). Non-finite
    rows stay non-finite.
    """
    arr = np.asarray(embeddings, dtype=np.float64)
    v = arr / plan.gamma
    k = np.floor(v)
    k += (v - k) >= 0.5  # round half up, as grid_integers
    return (k + public_discrete_gaussian(plan.sigma2_units, arr.shape, rng)) * plan.gamma
