"""Known-noise mechanisms: releases whose noise scale is published, not calibrated to an ε.

Census-style releases publish the noise rather than a privacy level: e.g. counts in five age bands
with discrete Gaussian noise of σ = 10 (the 2020 US Census TopDown algorithm publishes its
discrete Gaussian variances; Abowd et al. 2022). :class:`KnownNoiseMechanism` is such a release,
Gaussian or Laplace, with one σ (or Laplace scale b) for every coordinate or one per coordinate:

* ``discrete=True``: an integer statistic plus integer noise with exactly the published law,
  N_Z(0, σ²) (P(z) ∝ exp(-z²/(2σ²))) or the discrete Laplace law P(z) ∝ exp(-|z|/b) (Canonne,
  Kamath & Steinke 2020, Definitions 1 and 3). Inference sees the same law: ``G`` is its quantile
  function, ``log_density`` its pmf and ``lattice`` the integers.
* ``discrete=False``: a real statistic released on a data-independent power-of-two grid γ
  (:mod:`dpinfer.privacy.grid`: γ ≤ 2⁻¹⁰·σ, 2⁻¹²·b), ``γ·(round(s/γ) + Z)``, with ``Z`` the discrete
  law of variance parameter ``σ_γ² = ⌈(σ/γ)²⌉`` or scale ``t = ⌈b/γ⌉`` (to 2⁻¹⁶) grid units:
  never less noise than published (at most a factor 1 + 2⁻²⁰ more). Inference uses the
  continuous N(s, σ²) or Laplace(s, b) of the scale that runs, as for
  :class:`~dpinfer.privacy.mechanisms.gaussian.GaussianMechanism`.

Privacy. With a declared ``sensitivity`` (L2 for the Gaussian, L1 for the Laplace, under
``neighbouring``) the event is computed from the noise that runs: a
:class:`~dpinfer.privacy.events.DiscreteGaussianEvent` (CKS 2020: Thm 7 in one dimension through
the ``"pld"`` accountant, ½(Δ/σ)²-zCDP, Thm 14, in d dimensions through ``"rdp"``) or a
:class:`~dpinfer.privacy.events.DiscreteLaplaceEvent` (pure ε = Δ/b). With several scales the
smallest one is used (a change of L2 norm Δ costs at most Δ²/(2σ_min²) in zCDP, of L1 norm Δ at
most Δ/b_min in ε): conservative. Without a sensitivity the guarantee is **not computed**: the
report (:meth:`Mechanism.privacy_report`) says so with ``epsilon = inf``, and a release is refused
(nothing is charged against a ledger for an unknown guarantee). Inference, which only needs the
law, works either way.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.special import ndtri

from ...errors import InvalidPrivacyParameterError
from ..discrete_pmf import discrete_gaussian_logpmf, discrete_laplace_logpmf
from ..events import DiscreteGaussianEvent, DiscreteLaplaceEvent, PrivacyEvent
from ..grid import (
    GAUSSIAN_GRID_BITS,
    LAPLACE_GRID_BITS,
    gaussian_grid_bits,
    grid_integers,
    power_of_two_grid,
)
from ..rng import PrivacyRNG
from ..validation import check_delta, check_relation
from .base import Mechanism, as_bounds, check_in_bounds
from .counts import check_integers, discrete_laplace_ppf

NOISES = ("gaussian", "laplace")
#: Above this σ the discrete Gaussian quantile uses the rounded continuous one (module docstring
#: of :func:`discrete_gaussian_ppf`); below it an exact table of the CDF.
_TABLE_SIGMA = 2.0**14
_SCALE_BITS = 16


@lru_cache(maxsize=16)
def _dg_cdf_table(sigma2: float) -> tuple[int, np.ndarray]:
    """``(K, F)``: the CDF of N_Z(0, σ²) at ``-K..K`` (tail mass beyond ``K = ⌈14σ⌉ + 2`` below
    10⁻⁴², far under the 2⁻⁵³ resolution of the uniforms), summed from the left."""
    big_k = math.ceil(14.0 * math.sqrt(sigma2)) + 2
    ks = np.arange(-big_k, big_k + 1, dtype=np.float64)
    pmf = np.exp(discrete_gaussian_logpmf(ks, sigma2))
    cdf = np.cumsum(pmf)
    cdf /= cdf[-1]
    cdf.setflags(write=False)
    return big_k, cdf


def discrete_gaussian_ppf(u: Any, sigma2: float) -> np.ndarray:
    """The quantile ``F⁻¹(u) = min{k : F(k) >= u}`` of the discrete Gaussian N_Z(0, σ²).

    For σ <= 2¹⁴, by search in the CDF table (:func:`_dg_cdf_table`), accurate in both tails:
    ``u <= ½`` is searched in the lower tail, ``u > ½`` through the symmetry
    ``F(k) >= u ⇔ F(-k-1) <= 1 - u`` (``1 - u`` is exact there). Above, ``round(σ·Φ⁻¹(u))``:
    its pmf differs from N_Z's by a relative O(1/σ²) < 10⁻⁸ (Euler-Maclaurin on the Gaussian
    density). Inference only: releases use the exact sampler.
    """
    u = np.asarray(u, dtype=np.float64)
    s2 = float(sigma2)
    if math.sqrt(s2) > _TABLE_SIGMA:
        return np.floor(math.sqrt(s2) * ndtri(u) + 0.5)
    big_k, cdf = _dg_cdf_table(s2)
    low = np.searchsorted(cdf, u, side="left") - big_k
    j = np.searchsorted(cdf, 1.0 - u, side="right") - 1 - big_k
    return np.where(u <= 0.5, low, -j - 1).astype(np.float64)


def _scales(name: str, scale: Any, stat_dim: int) -> np.ndarray:
    arr = np.asarray(scale, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(stat_dim, float(arr))
    if arr.shape != (stat_dim,) or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise InvalidPrivacyParameterError(
            f"the published {name} must be one positive finite number or one per coordinate "
            f"({stat_dim}), got {scale!r}."
        )
    return arr


def _round_up(x: Fraction) -> float:
    """The smallest double >= the rational ``x``."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


class KnownNoiseMechanism(Mechanism):
    """Gaussian or Laplace noise of a published scale on every coordinate (module docstring).

    Parameters
    ----------
    noise
        ``"gaussian"`` (``scale`` is σ) or ``"laplace"`` (``scale`` is b).
    scale
        The published σ or b: one number, or one per coordinate.
    stat_dim
        Length of the statistic.
    discrete
        True: an integer statistic plus integer noise of exactly the published law; False: a real
        statistic released on a power-of-two grid (module docstring).
    sensitivity
        The statistic's sensitivity under ``neighbouring`` (L2 for the Gaussian, L1 for the
        Laplace; an integer for a one-dimensional discrete Gaussian), if known: the privacy event
        is then computed from the noise. Without it the guarantee is not computed.
    neighbouring
        ``"replace-one"`` or ``"add-remove"``.
    delta
        The δ at which the report of a Gaussian states ε (the noise does not depend on it).
    bounds
        Optional (lo, hi): the range a valid confidential statistic must lie in.
    """

    has_density = True
    exact_release = True

    def __init__(
        self,
        noise: str,
        scale: Any,
        stat_dim: int = 1,
        *,
        discrete: bool = False,
        sensitivity: float | None = None,
        neighbouring: str = "replace-one",
        delta: float = 1e-6,
        bounds: tuple[Any, Any] | None = None,
    ) -> None:
        if noise not in NOISES:
            raise InvalidPrivacyParameterError(f"noise must be one of {NOISES}, got {noise!r}.")
        if isinstance(stat_dim, bool) or int(stat_dim) != stat_dim or int(stat_dim) < 1:
            raise InvalidPrivacyParameterError(f"stat_dim must be a positive integer, got {stat_dim!r}.")
        self.noise = noise
        self.discrete = bool(discrete)
        self.stat_dim = self.out_dim = self.noise_dim = int(stat_dim)
        self.published = _scales("sigma" if noise == "gaussian" else "scale", scale, self.stat_dim)
        self.neighbouring = check_relation(neighbouring)
        self.bounds = as_bounds(bounds)
        self._sensitivity = None if sensitivity is None else float(sensitivity)
        if self._sensitivity is not None and not (math.isfinite(self._sensitivity) and self._sensitivity > 0):
            raise InvalidPrivacyParameterError(
                f"sensitivity must be positive and finite, got {sensitivity!r}."
            )
        d = self.stat_dim
        if noise == "gaussian":
            self.delta = check_delta(delta) if delta else 0.0
            self.accountant = "pld" if d == 1 else "rdp"
        else:
            self.delta = 0.0
            self.accountant = "pure"
        self.name = f"known {'discrete ' if self.discrete else ''}{noise} noise"
        if self.discrete:
            self.gamma = 1.0
            if noise == "gaussian":
                self.units = [Fraction(float(v)) ** 2 for v in self.published]  # σ² exactly
            else:
                self.units = [Fraction(float(v)) for v in self.published]  # b exactly
            self.scale = self.published.copy()
            if noise == "gaussian" and d == 1 and self._sensitivity is not None:
                if self._sensitivity != math.floor(self._sensitivity):
                    raise InvalidPrivacyParameterError(
                        "a one-dimensional discrete Gaussian on an integer statistic needs an integer "
                        f"sensitivity (the statistic moves by whole units), got {sensitivity!r}."
                    )
            return
        # a real statistic on a data-independent grid (public σ or b, and the sensitivity)
        small = float(self.published.min())
        if noise == "gaussian":
            sens = self._sensitivity if self._sensitivity is not None else small
            bits = gaussian_grid_bits(small, sens, d) if self._sensitivity is not None else (
                GAUSSIAN_GRID_BITS + (math.ceil(math.log2(d) / 2) if d > 1 else 0)
            )
            self.gamma = power_of_two_grid(small, bits)
            self.units = [Fraction(math.ceil((float(v) / self.gamma) ** 2)) for v in self.published]
            self.scale = self.gamma * np.sqrt(np.array([float(u) for u in self.units]))
        else:
            # γ <= 2^-12·min(b, Δ/d): rounding costs at most 2^-12 of the noise scale and of ε
            ref = small if self._sensitivity is None else min(small, self._sensitivity / d)
            self.gamma = power_of_two_grid(ref, LAPLACE_GRID_BITS)
            den = 2**_SCALE_BITS
            q = den / Fraction(self.gamma)  # scales rounded up to a multiple of 2^-16 grid units
            self.units = [Fraction(math.ceil(Fraction(float(b)) * q), den) for b in self.published]
            self.scale = self.gamma * np.array([float(u) for u in self.units])

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def gaussian(cls, sigma: Any, stat_dim: int = 1, **kwargs: Any) -> KnownNoiseMechanism:
        """Gaussian noise of published σ (keywords as for the class)."""
        return cls("gaussian", sigma, stat_dim, **kwargs)

    @classmethod
    def laplace(cls, scale: Any, stat_dim: int = 1, **kwargs: Any) -> KnownNoiseMechanism:
        """Laplace noise of published scale b (keywords as for the class)."""
        return cls("laplace", scale, stat_dim, **kwargs)

    # -- the law ------------------------------------------------------------------------------
    @property
    def sensitivity(self) -> float | None:
        return self._sensitivity

    @property
    def lattice(self) -> np.ndarray | None:
        """Integer statistic plus integer noise: the integers (None for the grid release, whose
        inference law is continuous)."""
        return np.ones(self.out_dim) if self.discrete else None

    def _noise(self, u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=np.float64)
        if not self.discrete:
            if self.noise == "gaussian":
                return self.scale * ndtri(u)
            v = u - 0.5
            return -self.scale * np.sign(v) * np.log1p(-2.0 * np.abs(v))
        out = np.empty(u.shape)
        for value in np.unique(self.published):
            cols = self.published == value
            if self.noise == "gaussian":
                out[..., cols] = discrete_gaussian_ppf(u[..., cols], float(value) ** 2)
            else:
                out[..., cols] = discrete_laplace_ppf(u[..., cols], float(value))
        return out

    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        return np.asarray(s, dtype=np.float64) + self._noise(u)

    def log_density(self, s_dp: np.ndarray, s: np.ndarray) -> np.ndarray:
        z = np.asarray(s_dp, dtype=np.float64) - np.asarray(s, dtype=np.float64)
        if self.discrete:
            out = np.zeros(z.shape)
            for value in np.unique(self.published):
                cols = self.published == value
                if self.noise == "gaussian":
                    out[..., cols] = discrete_gaussian_logpmf(z[..., cols], float(value) ** 2)
                else:
                    out[..., cols] = discrete_laplace_logpmf(z[..., cols], float(value))
            return out.sum(-1)
        if self.noise == "gaussian":
            return (-0.5 * (z / self.scale) ** 2 - np.log(self.scale) - 0.5 * math.log(2 * math.pi)).sum(-1)
        return (-np.abs(z) / self.scale - np.log(2 * self.scale)).sum(-1)

    # -- privacy ------------------------------------------------------------------------------
    def event(self) -> PrivacyEvent:
        """The event of the noise that runs, from the declared sensitivity (module docstring)."""
        if self._sensitivity is None:
            raise InvalidPrivacyParameterError(
                f"{self.name}: the noise is known (scale {self.published.tolist()}) but no sensitivity was "
                "declared, so the privacy guarantee is not computed. Pass sensitivity=... (L2 for "
                "Gaussian noise, L1 for Laplace noise) to compute it; a release needs it."
            )
        d, sens = self.stat_dim, self._sensitivity
        small = min(self.units)
        if self.noise == "gaussian":
            if self.discrete:
                units: float = sens
            else:
                units = float(math.ceil(sens / self.gamma)) if d == 1 else sens / self.gamma + math.sqrt(d)
            sigma = math.sqrt(float(small))
            sigma = sigma if Fraction(sigma) ** 2 <= small else math.nextafter(sigma, 0.0)
            return DiscreteGaussianEvent(sigma, units, d, self.neighbouring)
        if self.discrete:
            int_units = math.ceil(sens)  # an integer statistic moves by whole units
        else:
            int_units = math.ceil(sens / self.gamma) + d - 1
        return DiscreteLaplaceEvent(_round_up(Fraction(int_units) / small), int_units, self.neighbouring)

    def details(self) -> dict[str, Any]:
        key = "noise_sd" if self.noise == "gaussian" else "noise_scale"
        out: dict[str, Any] = {
            "noise": self.noise,
            "published_scale": self.published.tolist(),
            key: self.scale.tolist(),
            "stat_dim": self.stat_dim,
            "discrete": self.discrete,
            "sensitivity": self._sensitivity,
            "guarantee": "computed from the noise and the declared sensitivity"
            if self._sensitivity is not None else "not computed (no sensitivity declared)",
        }
        if not self.discrete:
            out["grid"] = self.gamma
            out["floating_point"] = f"exact discrete {self.noise} on the grid (CKS 2020)"
        else:
            out["sampler"] = f"exact discrete {self.noise} (CKS 2020)"
        return out

    # -- validation and release ---------------------------------------------------------------
    def validate_statistic_range(self, s: np.ndarray) -> None:
        if self.discrete:
            check_integers(self.name, s, "the confidential statistic")
        check_in_bounds(self.name, s, self.bounds)

    def check_observed(self, s_dp: Any) -> np.ndarray:
        arr = super().check_observed(s_dp)
        if self.discrete:
            check_integers(self.name, arr, "observed releases", public=True)
        return arr

    def _prepare_release(
        self, s: np.ndarray, *, unsafe_float_release: bool = False
    ) -> Callable[[PrivacyRNG], np.ndarray]:
        from ..discrete import sample_discrete_gaussian, sample_discrete_laplace

        if self._sensitivity is None:
            self.event()  # refuses: a release needs a computed guarantee
        k = s.astype(np.int64) if self.discrete else grid_integers(s, self.gamma)
        sampler = sample_discrete_gaussian if self.noise == "gaussian" else sample_discrete_laplace
        groups: dict[Fraction, list[int]] = {}
        for j, unit in enumerate(self.units):
            groups.setdefault(unit, []).append(j)

        def draw(gen: PrivacyRNG) -> np.ndarray:
            noise = np.zeros(k.size, dtype=np.int64)
            for unit, cols in groups.items():
                noise[cols] = sampler(unit, len(cols), gen)
            return (k + noise).astype(np.float64) * self.gamma  # |k + Z| < 2^53: exact

        return draw

    def __repr__(self) -> str:
        scale = self.published.tolist() if np.unique(self.published).size > 1 else float(self.published[0])
        return (
            f"KnownNoiseMechanism({self.noise!r}, {scale!r}, stat_dim={self.stat_dim}, "
            f"discrete={self.discrete}, sensitivity={self._sensitivity!r}, {self.neighbouring})"
        )


__all__ = ["KnownNoiseMechanism", "discrete_gaussian_ppf"]
