"""Independent-coordinate priors on constrained supports, and the Dirichlet on the simplex.

Each takes per-coordinate parameters (scalars or vectors, broadcast to one length = ``dim``) and
has independent coordinates, except :class:`DirichletPrior`. Densities are written out in closed
form (with :func:`scipy.special.gammaln`/:func:`~scipy.special.betaln`); ``log_prob`` is ``-inf``
outside the open support. The default :attr:`~dpinfer.models.priors.Prior.transform` (a
coordinate-wise map onto the support box) applies to all of them but the Dirichlet, which uses
stick-breaking.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
from scipy.special import betaln, gammaln

from ..errors import InvalidDataError
from ..randomness import as_generator
from .priors import Prior
from .transforms import Bijection, StickBreakingBijection


def _params(**named: Any) -> tuple[int, list[np.ndarray]]:
    """Broadcast named per-coordinate parameters to 1-d arrays of one length; all must be finite."""
    try:
        arrs = np.broadcast_arrays(*(np.atleast_1d(np.asarray(v, dtype=np.float64)) for v in named.values()))
    except ValueError:
        shapes = {k: np.shape(v) for k, v in named.items()}
        raise InvalidDataError(
            f"prior parameters must broadcast to one length, got shapes {shapes}."
        ) from None
    for name, a in zip(named, arrs, strict=True):
        if a.ndim != 1 or not np.all(np.isfinite(a)):
            raise InvalidDataError(
                f"prior parameter {name} must be finite scalars or a 1-d vector, got {a!r}."
            )
    return int(arrs[0].size), [a.copy() for a in arrs]


def _positive(name: str, a: np.ndarray) -> None:
    if np.any(a <= 0):
        raise InvalidDataError(f"prior parameter {name} must be positive, got {a.tolist()}.")


class _Independent(Prior):
    """Shared parts: ``log_prob`` sums a per-coordinate log density inside the open support."""

    lo: np.ndarray
    hi: np.ndarray

    def _logpdf(self, t: np.ndarray) -> np.ndarray:  # per coordinate, t inside the support
        raise NotImplementedError

    def log_prob(self, theta: np.ndarray) -> np.ndarray:
        t = np.asarray(theta, dtype=np.float64)
        inside = np.all((t > self.lo) & (t < self.hi), axis=-1)
        safe = np.where((t > self.lo) & (t < self.hi), t, self._centre)
        with np.errstate(divide="ignore", invalid="ignore"):
            lp = self._logpdf(safe).sum(-1)
        return np.where(inside, lp, -np.inf)

    @property
    def support(self) -> tuple[np.ndarray, np.ndarray]:
        return self.lo.copy(), self.hi.copy()

    @cached_property
    def _centre(self) -> np.ndarray:  # a point inside the support, where -inf terms are masked
        return self.transform.forward(np.zeros(self.dim))


class UniformPrior(_Independent):
    """Uniform on the box ``∏_j (low_j, high_j)``."""

    def __init__(self, low: Any, high: Any) -> None:
        self.dim, (self.lo, self.hi) = _params(low=low, high=high)
        if np.any(self.lo >= self.hi):
            raise InvalidDataError(
                f"UniformPrior needs low < high, got {self.lo.tolist()}, {self.hi.tolist()}."
            )
        self._log_vol = -np.log(self.hi - self.lo)

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        return as_generator(seed).uniform(self.lo, self.hi, size=(int(n), self.dim))

    def _logpdf(self, t: np.ndarray) -> np.ndarray:
        return np.broadcast_to(self._log_vol, t.shape)

    def __repr__(self) -> str:
        return f"UniformPrior(low={self.lo.tolist()}, high={self.hi.tolist()})"


class LogNormalPrior(_Independent):
    """``log θ_j ~ N(mu_j, sigma_j²)`` independently."""

    def __init__(self, mu: Any, sigma: Any) -> None:
        self.dim, (self.mu, self.sigma) = _params(mu=mu, sigma=sigma)
        _positive("sigma", self.sigma)
        self.lo, self.hi = np.zeros(self.dim), np.full(self.dim, np.inf)

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        return as_generator(seed).lognormal(self.mu, self.sigma, size=(int(n), self.dim))

    def _logpdf(self, t: np.ndarray) -> np.ndarray:
        lt = np.log(t)
        return -0.5 * ((lt - self.mu) / self.sigma) ** 2 - lt - np.log(self.sigma) - 0.5 * np.log(2 * np.pi)

    def __repr__(self) -> str:
        return f"LogNormalPrior(mu={self.mu.tolist()}, sigma={self.sigma.tolist()})"


class GammaPrior(_Independent):
    """``θ_j ~ Gamma(shape_j, rate_j)`` independently (mean shape/rate)."""

    def __init__(self, shape: Any, rate: Any = 1.0) -> None:
        self.dim, (self.shape, self.rate) = _params(shape=shape, rate=rate)
        _positive("shape", self.shape)
        _positive("rate", self.rate)
        self.lo, self.hi = np.zeros(self.dim), np.full(self.dim, np.inf)

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        return as_generator(seed).gamma(self.shape, 1.0 / self.rate, size=(int(n), self.dim))

    def _logpdf(self, t: np.ndarray) -> np.ndarray:
        a, r = self.shape, self.rate
        return a * np.log(r) - gammaln(a) + (a - 1.0) * np.log(t) - r * t

    def __repr__(self) -> str:
        return f"GammaPrior(shape={self.shape.tolist()}, rate={self.rate.tolist()})"


class BetaPrior(_Independent):
    """``θ_j ~ Beta(a_j, b_j)`` independently, on (0, 1)."""

    def __init__(self, a: Any, b: Any) -> None:
        self.dim, (self.a, self.b) = _params(a=a, b=b)
        _positive("a", self.a)
        _positive("b", self.b)
        self.lo, self.hi = np.zeros(self.dim), np.ones(self.dim)

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        return as_generator(seed).beta(self.a, self.b, size=(int(n), self.dim))

    def _logpdf(self, t: np.ndarray) -> np.ndarray:
        return (self.a - 1.0) * np.log(t) + (self.b - 1.0) * np.log1p(-t) - betaln(self.a, self.b)

    def __repr__(self) -> str:
        return f"BetaPrior(a={self.a.tolist()}, b={self.b.tolist()})"


class DirichletPrior(Prior):
    """``p ~ Dirichlet(alpha)`` on the K-simplex, parameterised by its first ``K - 1`` coordinates.

    ``θ = (p_1, ..., p_{K-1})`` (``dim = K - 1``) and ``p_K = 1 - Σ θ_j`` (:meth:`complete`), so
    that the density is a density on R^(K-1) (w.r.t. Lebesgue measure on the first K-1
    coordinates) and a perturbation of ``θ`` stays a valid parameter whenever it is in the
    support. :attr:`transform` is stick-breaking (:class:`~.transforms.StickBreakingBijection`).
    """

    def __init__(self, alpha: Any) -> None:
        k, (self.alpha,) = _params(alpha=alpha)
        _positive("alpha", self.alpha)
        if k < 2:
            raise InvalidDataError(
                f"a Dirichlet needs at least 2 components, got alpha={self.alpha.tolist()}."
            )
        self.dim = k - 1
        self._lognorm = gammaln(self.alpha.sum()) - gammaln(self.alpha).sum()

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        return as_generator(seed).dirichlet(self.alpha, size=int(n))[:, : self.dim]

    @staticmethod
    def complete(theta: np.ndarray) -> np.ndarray:
        """``(p_1, ..., p_K)`` from the first K - 1 coordinates."""
        t = np.asarray(theta, dtype=np.float64)
        return np.concatenate([t, 1.0 - t.sum(-1, keepdims=True)], axis=-1)

    def log_prob(self, theta: np.ndarray) -> np.ndarray:
        p = self.complete(theta)
        inside = np.all(p > 0, axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            lp = ((self.alpha - 1.0) * np.log(np.where(p > 0, p, 1.0))).sum(-1) + self._lognorm
        return np.where(inside, lp, -np.inf)

    @property
    def support(self) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(self.dim), np.ones(self.dim)

    @property
    def transform(self) -> Bijection:
        return StickBreakingBijection(self.dim)

    def __repr__(self) -> str:
        return f"DirichletPrior(alpha={self.alpha.tolist()})"


__all__ = ["BetaPrior", "DirichletPrior", "GammaPrior", "LogNormalPrior", "UniformPrior"]
