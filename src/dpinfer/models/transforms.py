"""Bijections from unconstrained space to a prior's support, with their log-Jacobians.

Every :class:`~dpinfer.models.priors.Prior` exposes ``prior.transform``: a :class:`Bijection`
``T: R^k -> support`` (``θ = T(z)``) with :meth:`~Bijection.inverse` and
:meth:`~Bijection.log_abs_det_jacobian` ``log|det ∂T/∂z|``. A method that wants to move freely
works on ``z`` and uses the change of variables

    p_Z(z) = p_Θ(T(z))·|det ∂T/∂z|                                        (change of variables)

(:meth:`~dpinfer.models.priors.Prior.log_prob_unconstrained`). How the methods use it:

* a random-walk or Gaussian perturbation kernel (SMC-ABC) proposes ``z' = z + L·ξ`` and maps back
  with ``θ' = T(z')``: every proposal is in the support (no redraw loop at a bound), and the
  kernel density of ``θ'`` is ``N(z'; z, Σ)·|det ∂T⁻¹/∂θ'|``, i.e. the importance weight of a
  particle gains the factor ``exp(-log_abs_det_jacobian(z'))`` in its denominator (the
  log-Jacobians of the ancestors cancel in the normalisation);
* a normalising flow (SPPE/SPLE) is trained on ``z = T⁻¹(θ)`` and its density is carried back to
  ``θ`` with ``log q(θ) = log q_Z(T⁻¹(θ)) - log_abs_det_jacobian(T⁻¹(θ))``.

The maps are the usual ones (Stan reference manual, "Constraint transforms"): identity on R,
``lo + exp(z)`` on ``(lo, ∞)``, ``hi - exp(-z)`` on ``(-∞, hi)``, ``lo + (hi - lo)·σ(z)`` on
``(lo, hi)`` and stick-breaking onto the open simplex.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit, log_expit, logit

from ..errors import InvalidDataError


class Bijection:
    """A smooth bijection ``T: R^dim -> support ⊂ R^dim`` (batched over leading axes)."""

    dim: int

    def forward(self, z: np.ndarray) -> np.ndarray:
        """``θ = T(z)``."""
        raise NotImplementedError

    def inverse(self, theta: np.ndarray) -> np.ndarray:
        """``z = T⁻¹(θ)`` (``θ`` inside the support)."""
        raise NotImplementedError

    def log_abs_det_jacobian(self, z: np.ndarray) -> np.ndarray:
        """``log|det ∂T/∂z|`` at ``z``, shape ``z.shape[:-1]``."""
        raise NotImplementedError


class BoxBijection(Bijection):
    """Coordinate-wise map of R onto ``(lo_j, hi_j)``; either end may be infinite.

    ``lo = -inf, hi = inf``: identity; ``hi = inf``: ``lo + exp(z)``; ``lo = -inf``:
    ``hi - exp(-z)``; both finite: ``lo + (hi - lo)·σ(z)`` with the logistic σ.
    """

    def __init__(self, lo: Any, hi: Any) -> None:
        self.lo = np.atleast_1d(np.asarray(lo, dtype=np.float64))
        self.hi = np.atleast_1d(np.asarray(hi, dtype=np.float64))
        if self.lo.shape != self.hi.shape or self.lo.ndim != 1 or np.any(self.lo >= self.hi):
            raise InvalidDataError(f"a box needs lo < hi coordinate-wise, got lo={lo!r}, hi={hi!r}.")
        self.dim = int(self.lo.size)
        fl, fh = np.isfinite(self.lo), np.isfinite(self.hi)
        self._real, self._lower = ~fl & ~fh, fl & ~fh
        self._upper, self._both = ~fl & fh, fl & fh
        self._lo0 = np.where(fl, self.lo, 0.0)
        self._hi0 = np.where(fh, self.hi, 0.0)
        self._width = np.where(self._both, self._hi0 - self._lo0, 1.0)

    def forward(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64)
        with np.errstate(over="ignore"):
            out = np.where(self._lower, self._lo0 + np.exp(z), z)
            out = np.where(self._upper, self._hi0 - np.exp(-z), out)
        return np.where(self._both, self._lo0 + self._width * expit(z), out)

    def inverse(self, theta: np.ndarray) -> np.ndarray:
        t = np.asarray(theta, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(self._lower, np.log(t - self._lo0), t)
            out = np.where(self._upper, -np.log(self._hi0 - t), out)
            return np.where(self._both, logit((t - self._lo0) / self._width), out)

    def log_abs_det_jacobian(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64)
        per = np.where(self._lower, z, 0.0)
        per = np.where(self._upper, -z, per)
        per = np.where(self._both, np.log(self._width) + log_expit(z) + log_expit(-z), per)
        return per.sum(-1)

    def __repr__(self) -> str:
        return f"BoxBijection(lo={self.lo.tolist()}, hi={self.hi.tolist()})"


class StickBreakingBijection(Bijection):
    """R^(K-1) onto the open simplex ``{p ∈ R^(K-1): p_j > 0, Σ p_j < 1}`` (``p_K = 1 - Σ p_j``).

    Stan's stick-breaking: ``b_j = σ(z_j - log(K - j))`` (j = 1..K-1, the offset makes ``z = 0``
    the centre of the simplex), ``p_j = b_j·(1 - Σ_{i<j} p_i)``. The Jacobian is triangular:
    ``log|det| = Σ_j log b_j + log(1 - b_j) + log(1 - Σ_{i<j} p_i)``.
    """

    def __init__(self, dim: int) -> None:
        self.dim = int(dim)
        self._offset = np.log(self.dim + 1 - np.arange(1, self.dim + 1, dtype=np.float64))

    def _parts(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        y = np.asarray(z, dtype=np.float64) - self._offset
        b = expit(y)
        remaining = np.cumprod(1.0 - b, axis=-1)
        before = np.concatenate([np.ones(remaining.shape[:-1] + (1,)), remaining[..., :-1]], axis=-1)
        return y, b * before, before

    def forward(self, z: np.ndarray) -> np.ndarray:
        return self._parts(z)[1]

    def inverse(self, theta: np.ndarray) -> np.ndarray:
        p = np.asarray(theta, dtype=np.float64)
        before = 1.0 - np.concatenate([np.zeros(p.shape[:-1] + (1,)), np.cumsum(p, -1)[..., :-1]], axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return logit(p / before) + self._offset

    def log_abs_det_jacobian(self, z: np.ndarray) -> np.ndarray:
        y, _, before = self._parts(z)
        return (log_expit(y) + log_expit(-y) + np.log(before)).sum(-1)

    def __repr__(self) -> str:
        return f"StickBreakingBijection(dim={self.dim})"


class BlockBijection(Bijection):
    """Independent blocks side by side: coordinates ``[a_i, b_i)`` go through ``parts[i]``."""

    def __init__(self, parts: list[Bijection]) -> None:
        self.parts = list(parts)
        self._cuts = np.cumsum([0] + [p.dim for p in self.parts])
        self.dim = int(self._cuts[-1])

    def _apply(self, method: str, x: np.ndarray) -> list[np.ndarray]:
        x = np.asarray(x, dtype=np.float64)
        return [
            getattr(p, method)(x[..., a:b])
            for p, a, b in zip(self.parts, self._cuts[:-1], self._cuts[1:], strict=True)
        ]

    def forward(self, z: np.ndarray) -> np.ndarray:
        return np.concatenate(self._apply("forward", z), axis=-1)

    def inverse(self, theta: np.ndarray) -> np.ndarray:
        return np.concatenate(self._apply("inverse", theta), axis=-1)

    def log_abs_det_jacobian(self, z: np.ndarray) -> np.ndarray:
        return np.sum(self._apply("log_abs_det_jacobian", z), axis=0)

    def __repr__(self) -> str:
        return f"BlockBijection({self.parts!r})"


__all__ = ["Bijection", "BlockBijection", "BoxBijection", "StickBreakingBijection"]
