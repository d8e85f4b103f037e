"""The (ε, δ) Gaussian mechanism for private-data models, released floating-point safely.

Release (:meth:`GaussianMechanism.release`): ``γ·(round(s/γ) + Z)`` with ``Z`` exact discrete
Gaussian noise ``N_Z(0, σ_γ²)`` on a power-of-two grid γ ≈ σ/2¹⁰
(:func:`dpinfer.privacy.grid.gaussian_grid`): the continuous analytic calibration of Balle &
Wang (2018) gives the starting σ, which is then raised until the *discrete* mechanism itself is
(ε, δ)-DP (Canonne, Kamath & Steinke 2020: Thm 7 via the PLD accountant in one dimension, the
zCDP bound of Thm 14 via the RDP accountant in d dimensions).

Inference (:meth:`G`, :meth:`log_density`): the continuous ``N(s, σ²)`` with the σ that runs,
``G(s, u) = s + σ·Φ⁻¹(u)``. The released law differs from it only by the grid (a shift of at most
γ/2 <= σ/2¹¹ and the lattice), which is far below Monte Carlo error.

A release whose σ is *published* rather than calibrated to (ε, δ) (census counts with discrete
Gaussian noise of σ = 10, say) is :meth:`GaussianMechanism.known`, a
:class:`~dpinfer.privacy.mechanisms.known.KnownNoiseMechanism`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.special import ndtri

from ..events import PrivacyEvent
from ..rng import PrivacyRNG
from ..validation import check_count, check_epsilon, check_relation, check_sensitivity
from .base import Mechanism, as_bounds, check_in_bounds

if TYPE_CHECKING:
    from .known import KnownNoiseMechanism


class GaussianMechanism(Mechanism):
    """Gaussian noise calibrated to (ε, δ) for an L2 sensitivity, on every coordinate.

    Parameters
    ----------
    stat_dim
        Length of the statistic.
    l2_sensitivity
        L2 sensitivity of the statistic under ``neighbouring``.
    epsilon, delta
        The privacy level of one release.
    neighbouring
        ``"replace-one"`` or ``"add-remove"`` (the relation the sensitivity is computed under).
    calibration
        ``"analytic"`` (Balle & Wang 2018, default) or ``"classical"`` (σ = Δ√(2 log(1.25/δ))/ε,
        valid for ε < 1 only): the starting point of the discrete calibration.
    bounds
        Optional (lo, hi): the range a valid confidential statistic must lie in.
    """

    name = "gaussian"
    has_density = True
    exact_release = True

    def __init__(
        self,
        stat_dim: int,
        l2_sensitivity: float,
        epsilon: float,
        delta: float,
        neighbouring: str = "replace-one",
        calibration: str = "analytic",
        bounds: tuple[Any, Any] | None = None,
    ) -> None:
        from ..grid import gaussian_grid

        self.stat_dim = self.out_dim = self.noise_dim = check_count(stat_dim, "stat_dim")
        self.epsilon = check_epsilon(epsilon)
        self.neighbouring = check_relation(neighbouring)
        check_sensitivity(l2_sensitivity, "l2_sensitivity")
        self.grid = gaussian_grid(
            l2_sensitivity, self.epsilon, delta, self.stat_dim, calibration, self.neighbouring
        )
        self.delta = float(delta)
        self._sensitivity = float(l2_sensitivity)
        self.sigma = self.grid.sigma  # the σ that runs, in the statistic's units
        self.calibration = calibration
        self.accountant = "pld" if self.stat_dim == 1 else "rdp"
        self.bounds = as_bounds(bounds)

    @classmethod
    def known(
        cls,
        sigma: Any,
        stat_dim: int = 1,
        *,
        discrete: bool = False,
        sensitivity: float | None = None,
        neighbouring: str = "replace-one",
        delta: float = 1e-6,
        bounds: tuple[Any, Any] | None = None,
    ) -> KnownNoiseMechanism:
        """Gaussian noise of a *published* σ (one, or one per coordinate), not calibrated to ε.

        ``discrete=True``: an integer statistic plus exact discrete Gaussian noise N_Z(0, σ²)
        (e.g. census counts, σ = 10); otherwise a real statistic on a power-of-two grid. The
        privacy event is computed from σ and ``sensitivity`` (L2) when given; without it the
        report says the guarantee is not computed and a release is refused. See
        :class:`~dpinfer.privacy.mechanisms.known.KnownNoiseMechanism`.
        """
        from .known import KnownNoiseMechanism

        return KnownNoiseMechanism(
            "gaussian", sigma, stat_dim, discrete=discrete, sensitivity=sensitivity,
            neighbouring=neighbouring, delta=delta, bounds=bounds,
        )

    @property
    def sensitivity(self) -> float:
        return self._sensitivity

    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        return np.asarray(s, dtype=np.float64) + self.sigma * ndtri(np.asarray(u, dtype=np.float64))

    def log_density(self, s_dp: np.ndarray, s: np.ndarray) -> np.ndarray:
        z = (np.asarray(s_dp, dtype=np.float64) - np.asarray(s, dtype=np.float64)) / self.sigma
        return (-0.5 * z**2 - math.log(self.sigma) - 0.5 * math.log(2 * math.pi)).sum(-1)

    def event(self) -> PrivacyEvent:
        return self.grid.event

    def details(self) -> dict[str, Any]:
        return {
            "noise_sd": self.sigma,
            "stat_dim": self.stat_dim,
            "calibration": self.calibration,
            "grid": self.grid.gamma,
            "floating_point": "exact discrete Gaussian on the grid (CKS 2020)",
        }

    def _prepare_release(
        self, s: np.ndarray, *, unsafe_float_release: bool = False
    ) -> Callable[[PrivacyRNG], np.ndarray]:
        from ..discrete import sample_discrete_gaussian
        from ..grid import grid_integers

        k = grid_integers(s, self.grid.gamma)  # refuses values too large for the grid

        def draw(gen: PrivacyRNG) -> np.ndarray:
            noise = sample_discrete_gaussian(self.grid.sigma2_units, k.size, gen)
            return (k + noise).astype(np.float64) * self.grid.gamma  # |k + Z| < 2^53: exact

        return draw

    def validate_statistic_range(self, s: np.ndarray) -> None:
        check_in_bounds(self.name, s, self.bounds)

    def __repr__(self) -> str:
        return (
            f"GaussianMechanism(stat_dim={self.stat_dim}, l2_sensitivity={self.sensitivity:g}, "
            f"epsilon={self.epsilon:g}, delta={self.delta:g}, {self.neighbouring}, sigma={self.sigma:.4g})"
        )


__all__ = ["GaussianMechanism"]
