"""Release mechanisms ``s_dp = G(s, u)`` and the releases they make.

A :class:`Mechanism` is written as a deterministic map ``G`` of the confidential statistic ``s``
and ``k = noise_dim`` uniforms ``u ∈ (0, 1)^k``. The same object releases data
(:meth:`Mechanism.release`, which charges the ledger and draws ``u`` from a
:class:`~dpinfer.privacy.PrivacyRNG`) and is simulated inside inference
(:meth:`Mechanism.simulate_release`, ``u`` from a simulation seed), so the noise scale has one
source of truth.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import InvalidDataError, InvalidPrivacyParameterError
from ...randomness import as_generator, open_uniforms
from ..events import PrivacyEvent
from ..ledger import charge_or_warn
from ..report import PrivacyReport
from ..rng import PrivacyRNG, as_privacy_rng

if TYPE_CHECKING:
    from ..ledger import Ledger


@dataclass(frozen=True)
class PrivateRelease:
    """A released statistic with its privacy report (``.privacy``)."""

    value: np.ndarray
    privacy: PrivacyReport
    details: dict[str, Any] = field(default_factory=dict)


class Mechanism(ABC):
    """A release mechanism ``s_dp = G(s, u)``, ``u ∈ (0,1)^noise_dim``.

    Subclasses set ``stat_dim`` (length of ``s``), ``out_dim`` (length of ``s_dp``),
    ``noise_dim`` (``k``), ``sensitivity``, ``neighbouring`` and implement :meth:`G`,
    :meth:`event` and, where tractable, :meth:`log_density`. A mechanism whose outputs are
    counts (or any grid ``k·h``) overrides :attr:`lattice`, so that neural estimators train on
    dequantized simulations.
    """

    stat_dim: int
    out_dim: int
    noise_dim: int
    neighbouring: str
    name: str = "mechanism"
    has_density: bool = False
    accountant: str = "pure"
    delta: float = 0.0  # the δ of one release ((ε, δ) mechanisms set it; the report is at this δ)

    @abstractmethod
    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The deterministic map ``(s, u) -> s_dp``, broadcasting over leading axes."""

    @abstractmethod
    def event(self) -> PrivacyEvent:
        """The privacy event of one release."""

    def log_density(self, s_dp: np.ndarray, s: np.ndarray) -> np.ndarray:
        """``log η(s_dp | s)``, broadcasting over leading axes (if tractable)."""
        raise NotImplementedError(f"{type(self).__name__} has no tractable density.")

    @property
    def sensitivity(self) -> Any:  # pragma: no cover - overridden
        return None

    def check_statistic(self, s: Any) -> np.ndarray:
        """Validate a confidential statistic: finite, shape ``(..., stat_dim)``."""
        arr = np.asarray(s, dtype=np.float64)
        if arr.ndim == 0 or arr.shape[-1] != self.stat_dim:
            raise InvalidDataError(
                f"{self.name}: the confidential statistic must have length {self.stat_dim}, got shape "
                f"{arr.shape}."
            )
        if not np.all(np.isfinite(arr)):
            raise InvalidDataError(f"{self.name}: the confidential statistic contains NaN or inf.")
        return arr

    def check_observed(self, s_dp: Any) -> np.ndarray:
        """Validate an observed release: finite, length ``out_dim``, inside the mechanism's range."""
        arr = np.asarray(s_dp, dtype=np.float64).reshape(-1)
        if arr.shape[0] != self.out_dim:
            raise InvalidDataError(
                f"{self.name}: observed statistics must have length {self.out_dim}, got {arr.shape[0]}."
            )
        if not np.all(np.isfinite(arr)):
            raise InvalidDataError(f"{self.name}: observed statistics contain NaN or inf.")
        lo, hi = self.output_range
        if np.any(arr < lo) or np.any(arr > hi):
            raise InvalidDataError(
                f"{self.name}: observed statistics must lie in [{lo}, {hi}] (the mechanism's range), "
                f"got {arr.tolist()}."
            )
        return arr

    @property
    def output_range(self) -> tuple[float, float]:
        """Bounds of the mechanism's output (all of R for additive noise)."""
        return -np.inf, np.inf

    @property
    def lattice(self) -> np.ndarray | None:
        """Spacing ``h_j`` of the grid ``{k·h_j}`` output ``j`` lives on (0: continuous), or None
        when every output is continuous; neural estimators dequantize with it
        (:mod:`dpinfer.inference.neural.dequantize`)."""
        return None

    def simulate_release(self, s: np.ndarray, seed: Any = None) -> np.ndarray:
        """Inference-time simulation of the mechanism: ``G(s, u)`` with ``u`` from a *simulation* seed.

        This is NOT a release: it is how inference methods (SMC-ABC, SPPE, ...) simulate what the
        known mechanism would output, and it must never be applied to confidential data. A
        release is :meth:`release`, which charges the ledger and draws its noise from a
        :class:`~dpinfer.privacy.PrivacyRNG`.
        """
        s = np.asarray(s, dtype=np.float64)
        u = open_uniforms(as_generator(seed), s.shape[:-1] + (self.noise_dim,))
        return self.G(s, u)

    def privacy_report(self, insecure_rng: bool = False, accounted: bool = True) -> PrivacyReport:
        """The privacy report of one release by this mechanism."""
        return PrivacyReport.from_event(
            self.event(),
            delta=self.delta,
            accountant=self.accountant,
            sensitivity=self.sensitivity,
            mechanism=self.name,
            insecure_rng=insecure_rng,
            details=self.details(),
            accounted=accounted,
        )

    def details(self) -> dict[str, Any]:
        """Mechanism parameters for the privacy report."""
        return {}

    def release(
        self,
        s: Any,
        privacy_rng: PrivacyRNG | None = None,
        *,
        ledger: Ledger | None = None,
        dataset: str | None = None,
        label: str = "",
    ) -> PrivateRelease:
        """Release the confidential statistic ``s`` (one vector, length ``stat_dim``).

        Validation happens first; then, if ``ledger`` is given, the event is charged to
        ``dataset``; only then are the uniforms drawn from ``privacy_rng`` (OS entropy if None)
        and ``G(s, u)`` returned.
        """
        arr = self.check_statistic(s)
        if arr.ndim != 1:
            raise InvalidDataError(f"{self.name}: release one statistic vector at a time, got {arr.shape}.")
        self.validate_statistic_range(arr)
        gen = as_privacy_rng(privacy_rng)
        event = self.event()
        draw = self._prepare_release(arr)  # every check that can fail happens before the charge
        with charge_or_warn(
            ledger, dataset, event, label=label or self.name, insecure=gen.deterministic,
            what=f"{self.name}: release",
        ):
            value = draw(gen)
        return PrivateRelease(
            np.asarray(value, dtype=np.float64),
            self.privacy_report(gen.deterministic, accounted=ledger is not None),
        )

    def _prepare_release(self, s: np.ndarray) -> Callable[[PrivacyRNG], np.ndarray]:
        """Validate ``s`` for release and return the function that draws the released value.

        The default releases ``G(s, u)`` with ``u`` from the privacy RNG; mechanisms whose
        output is a real number override it with a floating-point-safe construction.
        """
        return lambda gen: self.G(s, open_uniforms(gen, (self.noise_dim,)))

    def validate_statistic_range(self, s: np.ndarray) -> None:
        """Check that ``s`` is a possible confidential statistic (the sensitivity assumes it)."""
        return None


def check_in_bounds(name: str, s: np.ndarray, bounds: tuple[np.ndarray, np.ndarray] | None) -> None:
    """Refuse a confidential statistic outside the ``(lo, hi)`` range its sensitivity assumes."""
    if bounds is None:
        return
    lo, hi = bounds
    if np.any(s < lo - 1e-12) or np.any(s > hi + 1e-12):
        raise InvalidDataError(
            f"{name}: the confidential statistic lies outside the range its sensitivity assumes "
            f"([{lo.tolist()}, {hi.tolist()}]); clamp the data first. Nothing was charged or released."
        )


def as_bounds(bounds: tuple[Any, Any] | None) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lo, hi)`` as float arrays (or None)."""
    return None if bounds is None else (np.asarray(bounds[0], float), np.asarray(bounds[1], float))


class LaplaceMechanism(Mechanism):
    """Laplace noise of scale ``b ≈ sensitivity/epsilon`` on every coordinate, released on a grid.

    Release (:meth:`release`): floating-point safe, ``γ·(round(s/γ) + Z)`` with ``Z`` exact
    discrete Laplace noise of scale ``b/γ`` grid units (:func:`dpinfer.privacy.grid.laplace`;
    γ a power of two 2¹²-2¹³ times finer than b in one dimension): exactly ε-DP for an L1
    sensitivity under ``neighbouring`` (:class:`~dpinfer.privacy.DiscreteLaplaceEvent`). ``b`` is
    the scale that actually runs, ``γ·t ≥ sensitivity/epsilon`` (at most 2⁻¹¹ larger).

    Inference (:meth:`G`, :meth:`log_density`): the continuous Laplace law of scale ``b``,
    ``G(s, u) = s - b·sgn(u - ½)·log(1 - 2|u - ½|)`` (Xiong et al. 2025, Prop. 3). It differs
    from the released law only by the grid: the release is the continuous law's discretisation
    up to a shift of the centre by at most γ/2 (the rounding of ``s``) and the discrete Laplace
    pmf, which equals ``γ·η(kγ)·(1 + O((γ/b)²))``. On any interval the two laws' probabilities
    differ by at most ~γ/b ≤ 2⁻¹², far below Monte Carlo error (tested).

    Parameters
    ----------
    stat_dim
        Length of the statistic.
    sensitivity
        L1 sensitivity of the statistic under ``neighbouring``.
    epsilon
        Privacy level.
    bounds
        Optional (lo, hi) arrays: the range a valid confidential statistic must lie in.
    """

    name = "laplace"
    has_density = True

    def __init__(
        self,
        stat_dim: int,
        sensitivity: float,
        epsilon: float,
        neighbouring: str = "replace-one",
        bounds: tuple[Any, Any] | None = None,
    ) -> None:
        from ..validation import check_epsilon, check_relation

        self.stat_dim = self.out_dim = self.noise_dim = int(stat_dim)
        self.epsilon = check_epsilon(epsilon)
        sens = float(sensitivity)
        if not np.isfinite(sens) or sens <= 0:
            raise InvalidPrivacyParameterError(f"sensitivity must be positive and finite, got {sensitivity}.")
        self._sensitivity = sens
        self.neighbouring = check_relation(neighbouring)
        from ..grid import laplace_grid

        self.grid = laplace_grid(sens, self.epsilon, self.stat_dim)
        self.scale = self.grid.scale  # the scale that runs (>= sensitivity/epsilon)
        self.bounds = as_bounds(bounds)

    @property
    def sensitivity(self) -> float:
        return self._sensitivity

    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        v = np.asarray(u, dtype=np.float64) - 0.5
        return np.asarray(s, dtype=np.float64) - self.scale * np.sign(v) * np.log1p(-2.0 * np.abs(v))

    def log_density(self, s_dp: np.ndarray, s: np.ndarray) -> np.ndarray:
        z = np.abs(np.asarray(s_dp, dtype=np.float64) - np.asarray(s, dtype=np.float64))
        return (-z / self.scale - np.log(2 * self.scale)).sum(-1)

    def event(self) -> PrivacyEvent:
        from ..events import DiscreteLaplaceEvent

        return DiscreteLaplaceEvent(self.grid.epsilon, self.grid.sensitivity_units, self.neighbouring)

    def details(self) -> dict[str, Any]:
        return {
            "noise_scale": self.scale,
            "stat_dim": self.stat_dim,
            "grid": self.grid.gamma,
            "grid_sensitivity": self.grid.sensitivity_units,
            "floating_point": "exact discrete Laplace on the grid (CKS 2020)",
        }

    def _prepare_release(self, s: np.ndarray) -> Callable[[PrivacyRNG], np.ndarray]:
        from ..grid import grid_integers, laplace_on_grid

        k = grid_integers(s, self.grid.gamma)  # refuses values too large for the grid
        return lambda gen: laplace_on_grid(k, self.grid, gen)

    def validate_statistic_range(self, s: np.ndarray) -> None:
        check_in_bounds(self.name, s, self.bounds)

    def __repr__(self) -> str:
        return (
            f"LaplaceMechanism(stat_dim={self.stat_dim}, sensitivity={self.sensitivity:g}, "
            f"epsilon={self.epsilon:g}, {self.neighbouring})"
        )
