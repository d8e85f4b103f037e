"""The private-data model contract: prior, confidential simulator and release mechanism.

A private-data model describes how an observed privatized statistic ``s_dp`` came about:

1. ``θ ~ prior``;
2. ``s = S(x)``, ``x ~ p(x | θ)``: the *confidential* summary, produced by a batched, seeded
   simulator (:meth:`PrivateDataModel.simulate_confidential`);
3. ``s_dp = G(s, u)``, ``u ~ U(0, 1)^k``: the *release mechanism*, written as a deterministic map of
   ``k = noise_dim`` uniforms (:meth:`Mechanism.G`).

Writing the mechanism as a map of uniforms makes Monte Carlo and (randomised) quasi-Monte Carlo
noise interchangeable: SMC-ABC feeds pseudo-random ``u``; nested RQMC estimators of the private
likelihood ``∫ η(s_dp | s) p(s | θ) ds`` feed scrambled Sobol points (Xiong et al. 2025, §3.4).

The same :class:`Mechanism` object releases data (:meth:`Mechanism.release`, which charges the
ledger and draws ``u`` from a :class:`~dpinfer.privacy.PrivacyRNG`) and is used inside inference
(:meth:`PrivateDataModel.simulate`, which draws ``u`` from the simulation seed), so the noise
scale has one source of truth.

Shapes
------
All methods are batched over leading axes: ``theta`` is ``(..., theta_dim)``, ``s`` is
``(..., stat_dim)``, ``u`` is ``(..., noise_dim)`` and ``G`` broadcasts ``s`` against ``u`` over the
leading axes, so ``G(s[:, None, :], u)`` with ``u`` of shape ``(n, M, k)`` gives ``M`` privatised
copies of each of ``n`` confidential summaries.
"""

from __future__ import annotations

import dataclasses
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidDataError, InvalidPrivacyParameterError, PrivacyWarning
from ..privacy import PrivacyReport, PrivacyRNG, as_privacy_rng
from ..privacy.events import PrivacyEvent

if TYPE_CHECKING:
    from ..privacy import Ledger

SeedLike = "int | np.random.SeedSequence | np.random.Generator | None"

# Smallest and largest doubles used for uniforms: keep u strictly inside (0, 1).
_U_LO = 2.0**-54
_U_HI = 1.0 - 2.0**-53


def as_generator(seed: Any) -> np.random.Generator:
    """A numpy Generator from an int, a SeedSequence, a Generator (returned as is) or None."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, (int, np.integer, np.random.SeedSequence)):
        return np.random.default_rng(seed)
    raise TypeError(
        f"a simulation seed must be an int, a numpy SeedSequence or Generator, got {type(seed).__name__}."
    )


def open_uniforms(gen: np.random.Generator | Any, shape: tuple[int, ...]) -> np.ndarray:
    """Uniforms strictly inside (0, 1) (``Generator.random`` can return exactly 0).

    ``gen`` may be a numpy Generator or a :class:`~dpinfer.privacy.PrivacyRNG`.
    """
    u = gen.uniform(size=shape) if not isinstance(gen, np.random.Generator) else gen.random(shape)
    return np.clip(u, _U_LO, _U_HI)


# ----------------------------------------------------------------------------------------------
# priors
# ----------------------------------------------------------------------------------------------
class Prior(ABC):
    """A prior over ``θ ∈ R^dim`` (models re-parameterise constrained parameters to R^dim)."""

    dim: int

    @abstractmethod
    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        """``n`` draws, shape ``(n, dim)``."""

    @abstractmethod
    def log_prob(self, theta: np.ndarray) -> np.ndarray:
        """Log density at ``theta`` (shape ``(..., dim)``), ``-inf`` outside the support."""

    def in_support(self, theta: np.ndarray) -> np.ndarray:
        """Boolean mask of draws inside the support."""
        return np.isfinite(self.log_prob(theta))

    @property
    def support(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of a box containing the support (``±inf`` if unbounded)."""
        return np.full(self.dim, -np.inf), np.full(self.dim, np.inf)

    def check_theta(self, theta: Any) -> np.ndarray:
        """``theta`` as a float array of shape ``(n, dim)``; clear error on a shape mismatch."""
        arr = np.asarray(theta, dtype=np.float64)
        if arr.ndim == 1 and self.dim == arr.shape[0]:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise InvalidDataError(
                f"theta must have shape (n, {self.dim}) for this prior, got {np.shape(theta)}; "
                "pass one parameter vector per row."
            )
        return arr


class GaussianPrior(Prior):
    """Multivariate normal prior ``N(mean, cov)`` (``cov`` a matrix, or a vector of variances)."""

    def __init__(self, mean: Any, cov: Any) -> None:
        self.mean = np.atleast_1d(np.asarray(mean, dtype=np.float64))
        self.dim = int(self.mean.shape[0])
        c = np.asarray(cov, dtype=np.float64)
        if c.ndim == 0:
            c = np.full(self.dim, float(c))
        if c.ndim == 1:
            c = np.diag(c)
        if c.shape != (self.dim, self.dim):
            raise InvalidDataError(f"prior covariance must be {self.dim}x{self.dim}, got shape {c.shape}.")
        try:
            self._chol = np.linalg.cholesky(c)
        except np.linalg.LinAlgError as exc:
            raise InvalidDataError("prior covariance must be symmetric positive definite.") from exc
        self.cov = c
        self._logdet = 2.0 * np.log(np.diag(self._chol)).sum()

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        z = as_generator(seed).standard_normal((int(n), self.dim))
        return self.mean + z @ self._chol.T

    def log_prob(self, theta: np.ndarray) -> np.ndarray:
        t = np.asarray(theta, dtype=np.float64) - self.mean
        z = np.linalg.solve(self._chol, t.reshape(-1, self.dim).T).T.reshape(t.shape)
        return -0.5 * (z**2).sum(-1) - 0.5 * self._logdet - 0.5 * self.dim * np.log(2 * np.pi)

    @property
    def sd(self) -> np.ndarray:
        """Marginal standard deviations."""
        return np.sqrt(np.diag(self.cov))

    def __repr__(self) -> str:
        return f"GaussianPrior(mean={self.mean.tolist()}, cov={self.cov.tolist()})"


# ----------------------------------------------------------------------------------------------
# mechanisms and releases
# ----------------------------------------------------------------------------------------------
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
    :meth:`event` and, where tractable, :meth:`log_density`.
    """

    stat_dim: int
    out_dim: int
    noise_dim: int
    neighbouring: str
    name: str = "mechanism"
    has_density: bool = False
    accountant: str = "pure"

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
        report = PrivacyReport.from_event(
            self.event(),
            delta=0.0,
            accountant=self.accountant,
            sensitivity=self.sensitivity,
            mechanism=self.name,
            insecure_rng=insecure_rng,
            details=self.details(),
        )
        return dataclasses.replace(report, accounted=bool(accounted))

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
        if ledger is not None and dataset is None:
            raise InvalidPrivacyParameterError("a ledger charge needs the dataset name.")
        if ledger is None:
            warnings.warn(
                f"{self.name}: release {label or self.name!r} made WITHOUT a ledger: it is not "
                "accounted against any budget (its report says accounted: false). Pass ledger=... "
                "and dataset=... to charge it.",
                PrivacyWarning,
                stacklevel=2,
            )
            value = draw(gen)
        else:
            with ledger.charge(dataset, event, label=label or self.name, insecure=gen.deterministic):
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


class LaplaceMechanism(Mechanism):
    """Laplace noise of scale ``b ≈ sensitivity/epsilon`` on every coordinate, released on a grid.

    Release (:meth:`release`): floating-point safe, ``γ·(round(s/γ) + Z)`` with ``Z`` exact
    discrete Laplace noise of scale ``b/γ`` grid units (:func:`dpinfer.privacy.mechanisms.laplace`;
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
        from ..privacy.validation import check_epsilon, check_relation

        self.stat_dim = self.out_dim = self.noise_dim = int(stat_dim)
        self.epsilon = check_epsilon(epsilon)
        sens = float(sensitivity)
        if not np.isfinite(sens) or sens <= 0:
            raise InvalidPrivacyParameterError(f"sensitivity must be positive and finite, got {sensitivity}.")
        self._sensitivity = sens
        self.neighbouring = check_relation(neighbouring)
        from ..privacy.mechanisms import laplace_grid

        self.grid = laplace_grid(sens, self.epsilon, self.stat_dim)
        self.scale = self.grid.scale  # the scale that runs (>= sensitivity/epsilon)
        self.bounds = None if bounds is None else (np.asarray(bounds[0], float), np.asarray(bounds[1], float))

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
        from ..privacy import DiscreteLaplaceEvent

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
        from ..privacy.discrete import sample_discrete_laplace
        from ..privacy.mechanisms import _grid_integers

        k = _grid_integers(s, self.grid.gamma)  # refuses values too large for the grid
        t = self.grid.scale_units
        return lambda gen: (k + sample_discrete_laplace(t, k.size, gen)).astype(np.float64) * self.grid.gamma

    def validate_statistic_range(self, s: np.ndarray) -> None:
        if self.bounds is None:
            return
        lo, hi = self.bounds
        if np.any(s < lo - 1e-12) or np.any(s > hi + 1e-12):
            raise InvalidDataError(
                f"{self.name}: the confidential statistic lies outside the range its sensitivity assumes "
                f"([{lo.tolist()}, {hi.tolist()}]); clamp the data first."
            )

    def __repr__(self) -> str:
        return (
            f"LaplaceMechanism(stat_dim={self.stat_dim}, sensitivity={self.sensitivity:g}, "
            f"epsilon={self.epsilon:g}, {self.neighbouring})"
        )


# ----------------------------------------------------------------------------------------------
# the model
# ----------------------------------------------------------------------------------------------
class PrivateDataModel(ABC):
    """Prior + batched seeded confidential simulator + release mechanism.

    Subclasses implement :meth:`simulate_confidential`; the rest is shared. ``param_names`` name
    the coordinates of ``θ``.
    """

    name: str = "model"
    prior: Prior
    mechanism: Mechanism
    param_names: tuple[str, ...]

    @property
    def theta_dim(self) -> int:
        return self.prior.dim

    @property
    def stat_dim(self) -> int:
        return self.mechanism.stat_dim

    @property
    def obs_dim(self) -> int:
        return self.mechanism.out_dim

    @property
    def noise_dim(self) -> int:
        """``k``: the number of uniforms the mechanism consumes per release."""
        return self.mechanism.noise_dim

    @abstractmethod
    def simulate_confidential(self, theta: np.ndarray, seed: Any = None) -> np.ndarray:
        """Confidential summaries ``s`` for each row of ``theta``: shape ``(n, stat_dim)``."""

    def simulate(self, theta: np.ndarray, seed: Any = None, u: np.ndarray | None = None) -> np.ndarray:
        """Privatised summaries ``G(s, u)``, ``s`` simulated from ``theta``.

        The uniforms come from ``u`` if given (shape ``(n, noise_dim)``), else from the simulation
        seed. This is inference-time simulation of the known mechanism, not a release.
        """
        gen = as_generator(seed)
        theta = self.prior.check_theta(theta)
        s = self.simulate_confidential(theta, gen)
        if u is None:
            u = open_uniforms(gen, (theta.shape[0], self.noise_dim))
        else:
            u = np.asarray(u, dtype=np.float64)
            if u.shape != (theta.shape[0], self.noise_dim):
                raise InvalidDataError(
                    f"u must have shape ({theta.shape[0]}, {self.noise_dim}), got {u.shape}."
                )
        return self.mechanism.G(s, u)

    def check_observed(self, observed: Any) -> np.ndarray:
        """Validate an observed release for this model (length and range)."""
        return self.mechanism.check_observed(observed)

    def privacy_report(self) -> PrivacyReport:
        """The privacy guarantee of the release this model describes."""
        return self.mechanism.privacy_report()

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (for results and the CLI)."""
        return {
            "model": self.name,
            "param_names": list(self.param_names),
            "theta_dim": self.theta_dim,
            "stat_dim": self.stat_dim,
            "noise_dim": self.noise_dim,
            "mechanism": repr(self.mechanism),
        }


# ----------------------------------------------------------------------------------------------
# closed-form posteriors (naive and confidential baselines)
# ----------------------------------------------------------------------------------------------
class GaussianPosterior:
    """A multivariate normal posterior ``N(mean, cov)`` (conjugate baselines).

    ``valid`` is False when the inputs did not define a proper posterior (e.g. a noisy Gram
    matrix that is not positive definite); ``reason`` then says why, and the moments are NaN.
    """

    def __init__(
        self,
        mean: Any,
        cov: Any,
        param_names: tuple[str, ...] | None = None,
        valid: bool = True,
        reason: str = "",
    ) -> None:
        self.mean = np.atleast_1d(np.asarray(mean, dtype=np.float64))
        self.cov = np.atleast_2d(np.asarray(cov, dtype=np.float64))
        self.param_names = tuple(param_names or (f"theta{i}" for i in range(self.mean.size)))
        self.valid = bool(valid)
        self.reason = reason

    @classmethod
    def invalid(cls, dim: int, reason: str, param_names: tuple[str, ...] | None = None) -> GaussianPosterior:
        """A posterior that could not be formed (moments NaN, ``valid`` False)."""
        return cls(np.full(dim, np.nan), np.full((dim, dim), np.nan), param_names, False, reason)

    @property
    def sd(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))

    def interval(self, level: float = 0.95) -> np.ndarray:
        """Equal-tailed marginal credible intervals, shape ``(dim, 2)``."""
        from scipy.stats import norm

        z = norm.ppf(0.5 + level / 2)
        return np.stack([self.mean - z * self.sd, self.mean + z * self.sd], axis=1)

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        if not self.valid:
            raise ValueError(f"this posterior is not defined: {self.reason}")
        return as_generator(seed).multivariate_normal(self.mean, self.cov, size=int(n))

    def marginal_cdf(self, i: int) -> Any:
        """The CDF of marginal ``i`` (a callable, e.g. for a KS test)."""
        from scipy.stats import norm

        return norm(self.mean[i], self.sd[i]).cdf


class DrawsPosterior:
    """A posterior represented by equal-weight draws (e.g. products of Beta posteriors)."""

    def __init__(self, draws: Any, param_names: tuple[str, ...] | None = None) -> None:
        self.draws = np.atleast_2d(np.asarray(draws, dtype=np.float64))
        self.param_names = tuple(param_names or (f"theta{i}" for i in range(self.draws.shape[1])))
        self.valid = True
        self.reason = ""

    @property
    def mean(self) -> np.ndarray:
        return self.draws.mean(axis=0)

    @property
    def sd(self) -> np.ndarray:
        return self.draws.std(axis=0, ddof=1)

    def interval(self, level: float = 0.95) -> np.ndarray:
        return np.quantile(self.draws, [0.5 - level / 2, 0.5 + level / 2], axis=0).T

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        idx = as_generator(seed).integers(0, self.draws.shape[0], int(n))
        return self.draws[idx]
