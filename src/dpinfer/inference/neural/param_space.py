"""Where the posterior flow lives: θ itself, or z = T⁻¹(θ) for a prior with a bounded support.

A flow has full support on R^d. For a prior on a box or simplex (Gamma, Beta, Uniform,
Dirichlet, ...) SPPE's flow is trained on ``z = T⁻¹(θ)`` with the prior's bijection
``θ = T(z)`` (:mod:`dpinfer.models.transforms`), so every draw is inside the support (no
rejection, no mass renormalisation near a bound) and densities are carried back by the change of
variables

    log q(θ | x) = log q_Z(T⁻¹(θ) | x) − log|det ∂T/∂z|(T⁻¹(θ)),
    log p_Z(z)   = log p(T(z)) + log|det ∂T/∂z|(z)

(the second is the proposal prior of the atomic loss, evaluated in the same space as the flow).
Priors on all of R^d (Gaussian) keep the flow on θ, bit for bit as before. ``space="theta"``
forces θ-space with rejection into the support (the previous behaviour, and the paper's).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InvalidDataError

SPACES = ("auto", "theta", "unconstrained")


class ParamSpace:
    """``θ <-> z`` for a flow (module docstring); identity when inactive."""

    def __init__(self, prior: Any, space: str = "auto") -> None:
        if space not in SPACES:
            raise InvalidDataError(f"space must be one of {SPACES}, got {space!r}.")
        transform = getattr(prior, "transform", None)
        support = getattr(prior, "support", None)
        bounded = False
        if transform is not None and support is not None:
            lo, hi = support
            bounded = bool(np.any(np.isfinite(lo)) or np.any(np.isfinite(hi)))
        if space == "unconstrained" and transform is None:
            raise InvalidDataError(
                "space='unconstrained' needs a prior with a transform (the dpinfer.models priors)."
            )
        self.active = space == "unconstrained" or (space == "auto" and bounded)
        self.transform = transform if self.active else None
        self.name = "unconstrained" if self.active else "theta"

    def to_z(self, theta: np.ndarray) -> np.ndarray:
        if not self.active:
            return theta
        z = self.transform.inverse(np.asarray(theta, dtype=np.float64))  # type: ignore[union-attr]
        return np.nan_to_num(z, posinf=700.0, neginf=-700.0)  # a draw on a bound, in float64

    def to_theta(self, z: np.ndarray) -> np.ndarray:
        if not self.active:
            return z
        return self.transform.forward(np.asarray(z, dtype=np.float64))  # type: ignore[union-attr]

    def log_det(self, z: np.ndarray) -> np.ndarray:
        """``log|det ∂θ/∂z|`` (0 when inactive)."""
        if not self.active:
            return np.zeros(np.shape(z)[:-1])
        return np.asarray(self.transform.log_abs_det_jacobian(np.asarray(z, np.float64)))  # type: ignore[union-attr]

    def stand_in(self, theta: np.ndarray) -> np.ndarray:
        """A point of the support to stand in for θ outside it (their density is -inf anyway)."""
        if not self.active:
            return theta
        return self.to_theta(np.zeros((1, np.shape(theta)[1])))

    def prior_sample(self, prior: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` prior draws in the flow's space."""
        return self.to_z(np.asarray(prior.sample(n, rng), dtype=np.float64))

    def prior_log_prob(self, prior: Any, z: np.ndarray) -> np.ndarray:
        """The prior's log density in the flow's space at ``z`` (``-inf`` outside its support)."""
        with np.errstate(over="ignore", invalid="ignore"):
            th = self.to_theta(z)
            inside = np.isfinite(th).all(axis=1) & prior.in_support(th)
            _, lp = self.targets(prior, np.where(inside[:, None], th, self.stand_in(th)))
        return np.where(inside, lp, -np.inf)

    def targets(self, prior: Any, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The flow's training targets and their prior log density in the same space."""
        theta = np.asarray(theta, dtype=np.float64)
        logp = np.asarray(prior.log_prob(theta), dtype=np.float64)
        if not self.active:
            return theta, logp
        z = self.to_z(theta)
        return z, logp + self.log_det(z)


__all__ = ["SPACES", "ParamSpace"]
