"""Posteriors known in closed form or by quadrature (naive and confidential baselines, references).

:class:`GaussianPosterior` (conjugate normal), :class:`DrawsPosterior` (equal-weight draws, e.g.
products of Beta posteriors) and :class:`GridPosterior` (one-dimensional, tabulated on a grid).
They share the summary interface ``mean``, ``sd``, ``interval(level)`` and ``sample(n, seed)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidPrivacyParameterError
from ..randomness import as_generator


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


class GridPosterior:
    """A one-dimensional posterior tabulated on a grid (trapezoidal quadrature).

    Parameters
    ----------
    grid
        Increasing θ values.
    log_density
        Unnormalised log density at ``grid``.
    """

    def __init__(self, grid: np.ndarray, log_density: np.ndarray) -> None:
        self.grid = np.asarray(grid, dtype=np.float64)
        ld = np.asarray(log_density, dtype=np.float64)
        if self.grid.ndim != 1 or ld.shape != self.grid.shape or self.grid.size < 3:
            raise InvalidPrivacyParameterError(
                "grid and log_density must be 1-D arrays of equal length >= 3."
            )
        dens = np.exp(ld - ld.max())
        dens /= np.trapezoid(dens, self.grid)
        self.density = dens
        cum = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * np.diff(self.grid))])
        self._cdf = cum / cum[-1]

    @property
    def mean(self) -> float:
        return float(np.trapezoid(self.grid * self.density, self.grid))

    @property
    def sd(self) -> float:
        m = self.mean
        return float(np.sqrt(np.trapezoid((self.grid - m) ** 2 * self.density, self.grid)))

    def cdf(self, x: Any) -> np.ndarray:
        """The posterior CDF (linear interpolation of the cumulative trapezoid)."""
        return np.interp(x, self.grid, self._cdf, left=0.0, right=1.0)

    def quantile(self, q: Any) -> np.ndarray:
        return np.interp(q, self._cdf, self.grid)

    def interval(self, level: float = 0.95) -> np.ndarray:
        """Equal-tailed credible interval."""
        return self.quantile([0.5 - level / 2, 0.5 + level / 2])

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        """Draws by inverse-CDF interpolation, shape (n, 1)."""
        return self.quantile(as_generator(seed).random(int(n)))[:, None]
