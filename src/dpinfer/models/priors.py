"""Priors over ``θ ∈ R^dim``: the abstract :class:`Prior` and the multivariate normal.

Other families (uniform box, log-normal, gamma, beta, Dirichlet) are in
:mod:`~dpinfer.models.prior_families`; the independent product and the adapters for scipy.stats
and torch.distributions in :mod:`~dpinfer.models.prior_adapters`. A prior lives on its natural
(constrained) support; :attr:`Prior.transform` maps R^dim onto it (:mod:`~dpinfer.models.transforms`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from ..randomness import as_generator
from .transforms import Bijection, BoxBijection


class Prior(ABC):
    """A prior over ``θ ∈ R^dim``, on its natural support (a box, or a simplex for a Dirichlet).

    Every prior has :meth:`sample`, :meth:`log_prob` (``-inf`` outside the support),
    :attr:`support` and :attr:`transform`, a bijection from R^dim onto the support with its
    log-Jacobian (:mod:`~dpinfer.models.transforms`), for methods that work unconstrained.
    """

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

    @property
    def transform(self) -> Bijection:
        """``T: R^dim -> support`` (coordinate-wise onto the :attr:`support` box by default)."""
        return BoxBijection(*self.support)

    def log_prob_unconstrained(self, z: np.ndarray) -> np.ndarray:
        """Log density of ``z = T⁻¹(θ)``: ``log p(T(z)) + log|det ∂T/∂z|`` (change of variables)."""
        t = self.transform
        return self.log_prob(t.forward(z)) + t.log_abs_det_jacobian(z)

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
