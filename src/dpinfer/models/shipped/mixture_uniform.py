"""The ABCDP toy model: a mixture of five uniforms with a Dirichlet(1) prior on the weights.

Park, Vinaroz & Jitkrittum (2021), eq. (11) (following K2-ABC, Park et al. 2016):
π(θ) = Dirichlet(θ; 1), p(y | θ) = Σ_{i=1..5} θ_i Uniform(y; [i-1, i]),
θ* = [0.25, 0.04, 0.33, 0.04, 0.34], N = 5000 observed points.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ...errors import InvalidDataError
from ..smc_prior import SMCPrior

THETA_TRUE = np.array([0.25, 0.04, 0.33, 0.04, 0.34])


@numba.njit(cache=True)
def _inverse_cdf(w: np.ndarray, u: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - jitted
    """out[b, i, 0] = F_b^{-1}(u[b, i]) for the piecewise-linear mixture CDF of weights w[b]."""
    B, K = w.shape
    for b in range(B):
        for i in range(u.shape[1]):
            x = u[b, i]
            acc = 0.0
            k = 0
            while k < K - 1 and x >= acc + w[b, k]:
                acc += w[b, k]
                k += 1
            frac = (x - acc) / w[b, k] if w[b, k] > 0 else 0.5
            out[b, i, 0] = k + min(max(frac, 0.0), 1.0)


class MixtureOfUniforms:
    """Mixture of K uniforms U[i-1, i] with Dirichlet(1) weights; data sets of ``n_points``."""

    name = "mixture-uniform"

    def __init__(self, n_points: int = 5000, n_components: int = 5) -> None:
        if int(n_points) < 1 or int(n_components) < 2:
            raise InvalidDataError("n_points must be >= 1 and n_components >= 2.")
        self.n_points = int(n_points)
        self.k = int(n_components)
        self.param_names = tuple(f"w{i + 1}" for i in range(self.k))
        self.theta_true = THETA_TRUE.copy() if self.k == 5 else np.full(self.k, 1.0 / self.k)

    def prior_sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """θ ~ Dirichlet(1, ..., 1); shape (n, K)."""
        return rng.dirichlet(np.ones(self.k), size=n)

    def smc_prior(self) -> SMCPrior:
        """The Dirichlet(1) prior in free coordinates: the first K-1 weights (flat on the simplex)."""

        def to_theta(z: np.ndarray) -> np.ndarray:
            return np.column_stack([z, 1.0 - z.sum(1)])

        def log_density(z: np.ndarray) -> np.ndarray:
            return np.where(np.all(to_theta(z) >= 0, axis=1), 0.0, -np.inf)

        return SMCPrior(self.prior_sample, to_theta, lambda th: th[:, :-1], log_density)

    def simulate(self, theta: Any, rng: np.random.Generator, n_points: int | None = None) -> np.ndarray:
        """Y ~ p(y | θ) for each row of θ; shape (B, n_points, 1).

        Exact inverse-CDF sampling with one uniform per point: the mixture CDF is piecewise
        linear, F(y) = C_{k} + θ_{k+1}(y - k) on [k, k+1] (C the cumulative weights), so
        y = k + (u - C_k)/θ_{k+1} with k the number of cumulative weights <= u.
        """
        th = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        if th.shape[1] != self.k or np.any(th < 0):
            raise InvalidDataError(f"theta must be (B, {self.k}) non-negative weights, got {th.shape}.")
        m = self.n_points if n_points is None else int(n_points)
        w = th / th.sum(axis=1, keepdims=True)
        u = rng.random((th.shape[0], m))
        out = np.empty((th.shape[0], m, 1))
        _inverse_cdf(w, u, out)
        return out

    # -- synthetic records (dpinfer.models.record_synthesis.SupportsRecordSynthesis) -------------
    def record_columns(self) -> tuple[str, ...]:
        """One synthetic record is one point ``y`` of the mixture."""
        return ("y",)

    def simulate_records(self, theta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One point per row of θ; shape (B, 1)."""
        return self.simulate(theta, rng, n_points=1)[:, 0, :]

    def observed(self, seed: int = 0, theta: Any = None) -> np.ndarray:
        """A synthetic observed data set Y* at θ* (the paper's set-up); shape (n_points, 1)."""
        th = self.theta_true if theta is None else np.asarray(theta, dtype=np.float64)
        return self.simulate(th[None], np.random.default_rng(seed))[0]
