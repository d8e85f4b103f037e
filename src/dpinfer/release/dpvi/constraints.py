"""Constrained parameters for DPVI: ADVI-style bijections from R^k (Kucukelbir et al., JMLR 2017).

The DPVI paper (Jälkö, Dikmen & Honkela 2017) names ADVI's transformations as its extension to
constrained parameters: the Gaussian variational family lives on the unconstrained ζ ∈ R^D, each
parameter block is θ_b = T_b(ζ_b), and the ELBO becomes

    E_q[ log p(y | T(ζ)) + log p(T(ζ)) + log |det J_T(ζ)| ] + H[q].

Every bijection maps a batch ζ of shape (..., k) to a value of shape (..., *shape) and gives
``log_abs_det_jacobian(ζ)`` of shape (...). The transforms are Stan's (Stan Reference Manual,
"Constraint transforms"):

* :class:`Real`: identity, log|J| = 0;
* :class:`Positive`: θ = exp(ζ) (ADVI's and Stan's choice; exp, not softplus), log|J| = Σ ζ;
* :class:`Interval`: θ = lo + (hi - lo) σ(ζ), log|J| = Σ log(hi - lo) + log σ(ζ) + log σ(-ζ);
* :class:`Simplex`: stick-breaking, K - 1 unconstrained values → K weights summing to one;
* :class:`CholeskyFactor`: a d × d lower-triangular matrix with diagonal exp(ζ_jj) (a covariance
  Cholesky factor), log|J| = Σ_j ζ_jj.

:class:`ParamLayout` stacks named blocks into one flat ζ (the order given); the model
(:class:`dpinfer.release.dpvi.models.Model` with ``params=``) uses it, and :func:`constrained_sample` draws
the fitted constrained posterior by name. The Jacobian term is data-free, so DPVI adds its gradient
with the prior's, outside the per-example clipping (:func:`dpinfer.release.dpvi.gradients.data_free_grad`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ...errors import InvalidDataError

Tensor = torch.Tensor


def _size(shape: tuple[int, ...]) -> int:
    return int(math.prod(shape))


class Constraint:
    """A bijection from R^k onto a constrained set (batched over leading dimensions).

    Attributes
    ----------
    unconstrained_dim
        k, the number of unconstrained coordinates.
    shape
        Shape of one constrained value (``()`` for a scalar).
    """

    unconstrained_dim: int
    shape: tuple[int, ...]

    def forward(self, zeta: Tensor) -> Tensor:  # pragma: no cover - abstract
        """θ = T(ζ): ζ of shape ``(..., k)`` → θ of shape ``(..., *shape)``."""
        raise NotImplementedError

    def log_abs_det_jacobian(self, zeta: Tensor) -> Tensor:  # pragma: no cover - abstract
        """``log |det ∂T(ζ)/∂ζ|``, shape (...) (for a Simplex, of ζ → the first K - 1 weights)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.shape}"


class _Elementwise(Constraint):
    def __init__(self, size: int | None = None) -> None:
        if size is not None and int(size) < 1:
            raise InvalidDataError(f"a parameter block needs size >= 1, got {size!r}.")
        self.shape = () if size is None else (int(size),)
        self.unconstrained_dim = 1 if size is None else int(size)

    def _out(self, value: Tensor) -> Tensor:
        return value.reshape((*value.shape[:-1], *self.shape))


class Real(_Elementwise):
    """Unconstrained real values: θ = ζ. ``Real()`` is a scalar, ``Real(k)`` a vector of k."""

    def forward(self, zeta: Tensor) -> Tensor:
        return self._out(zeta)

    def log_abs_det_jacobian(self, zeta: Tensor) -> Tensor:
        return torch.zeros(zeta.shape[:-1], dtype=zeta.dtype, device=zeta.device)


class Positive(_Elementwise):
    """Positive values: θ = exp(ζ), log|J| = Σ ζ (ADVI/Stan's log transform)."""

    def forward(self, zeta: Tensor) -> Tensor:
        return self._out(torch.exp(zeta))

    def log_abs_det_jacobian(self, zeta: Tensor) -> Tensor:
        return zeta.sum(-1)


class Interval(_Elementwise):
    """Values in (lo, hi): θ = lo + (hi - lo) σ(ζ) (Stan's scaled logit), elementwise.

    log|J| = Σ [log(hi - lo) + log σ(ζ) + log σ(-ζ)].
    """

    def __init__(self, lo: float, hi: float, size: int | None = None) -> None:
        super().__init__(size)
        self.lo, self.hi = float(lo), float(hi)
        if not (math.isfinite(self.lo) and math.isfinite(self.hi) and self.lo < self.hi):
            raise InvalidDataError(f"Interval needs finite lo < hi, got ({lo!r}, {hi!r}).")

    def forward(self, zeta: Tensor) -> Tensor:
        return self._out(self.lo + (self.hi - self.lo) * torch.sigmoid(zeta))

    def log_abs_det_jacobian(self, zeta: Tensor) -> Tensor:
        log_width = math.log(self.hi - self.lo)
        return (log_width + F.logsigmoid(zeta) + F.logsigmoid(-zeta)).sum(-1)

    def __repr__(self) -> str:
        return f"Interval({self.lo}, {self.hi}){self.shape}"


class Simplex(Constraint):
    """K weights on the simplex from K - 1 unconstrained values (Stan's stick-breaking).

    z_k = σ(ζ_k - log(K - k)) (k = 1..K-1; the offset makes ζ = 0 the uniform point),
    θ_k = (1 - Σ_{j<k} θ_j) z_k, θ_K = 1 - Σ_{j<K} θ_j, and
    log|J| = Σ_k [log z_k + log(1 - z_k) + log(1 - Σ_{j<k} θ_j)]
    (the Jacobian of ζ → (θ_1, ..., θ_{K-1}), the free coordinates).
    """

    def __init__(self, K: int) -> None:
        if int(K) < 2:
            raise InvalidDataError(f"a Simplex needs K >= 2 weights, got {K!r}.")
        self.K = int(K)
        self.shape = (self.K,)
        self.unconstrained_dim = self.K - 1

    def _sticks(self, zeta: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        offset = torch.log(torch.arange(self.K - 1, 0, -1, dtype=zeta.dtype, device=zeta.device))
        x = zeta - offset
        log_z, log_1mz = F.logsigmoid(x), F.logsigmoid(-x)
        # log of the stick left before break k: Σ_{j<k} log(1 - z_j)
        log_rest = torch.cumsum(log_1mz, -1)
        log_left = torch.cat([torch.zeros_like(log_rest[..., :1]), log_rest[..., :-1]], -1)
        return log_z, log_1mz, log_left

    def forward(self, zeta: Tensor) -> Tensor:
        log_z, log_1mz, log_left = self._sticks(zeta)
        last = (log_left[..., -1:] + log_1mz[..., -1:]).exp()
        return torch.cat([torch.exp(log_left + log_z), last], -1)

    def log_abs_det_jacobian(self, zeta: Tensor) -> Tensor:
        log_z, log_1mz, log_left = self._sticks(zeta)
        return (log_z + log_1mz + log_left).sum(-1)


class CholeskyFactor(Constraint):
    """A d × d lower-triangular matrix with positive diagonal (a covariance Cholesky factor).

    ζ holds the d(d+1)/2 lower-triangular entries row by row (``numpy.tril_indices`` order); the
    diagonal is exp(ζ_jj), the rest is ζ itself, so log|J| = Σ_j ζ_jj. LL^T is then any
    positive-definite covariance.
    """

    def __init__(self, d: int) -> None:
        if int(d) < 1:
            raise InvalidDataError(f"CholeskyFactor needs d >= 1, got {d!r}.")
        self.d = int(d)
        self.shape = (self.d, self.d)
        self.unconstrained_dim = self.d * (self.d + 1) // 2
        rows, cols = np.tril_indices(self.d)
        self._rows, self._cols = torch.as_tensor(rows), torch.as_tensor(cols)
        self._diag = torch.as_tensor(rows == cols)
        self._place = torch.zeros(self.unconstrained_dim, self.d * self.d, dtype=torch.float64)
        self._place[torch.arange(self.unconstrained_dim), self._rows * self.d + self._cols] = 1.0

    def forward(self, zeta: Tensor) -> Tensor:
        entries = torch.where(self._diag.to(zeta.device), torch.exp(zeta), zeta)
        # one-hot placement (no in-place writes, so vmap and autograd go through it)
        flat = entries @ self._place.to(device=zeta.device, dtype=zeta.dtype)
        return flat.reshape(*zeta.shape[:-1], self.d, self.d)

    def log_abs_det_jacobian(self, zeta: Tensor) -> Tensor:
        return (zeta * self._diag.to(device=zeta.device, dtype=zeta.dtype)).sum(-1)


ParamSpec = Mapping[str, Constraint] | Iterable[tuple[str, Constraint]]


class ParamLayout:
    """Named parameter blocks stacked into one flat unconstrained vector ζ (in the given order).

    Parameters
    ----------
    params
        ``{"beta": Real(3), "sigma": Positive()}`` or a list of (name, constraint) pairs.
    """

    def __init__(self, params: ParamSpec) -> None:
        items = list(params.items()) if isinstance(params, Mapping) else list(params)
        if not items:
            raise InvalidDataError("params must declare at least one parameter block.")
        self.blocks: list[tuple[str, Constraint, slice]] = []
        start = 0
        for name, con in items:
            if not isinstance(con, Constraint):
                raise InvalidDataError(
                    f"parameter {name!r} needs a constraint (Real, Positive, Interval, Simplex, "
                    f"CholeskyFactor), got {type(con).__name__}."
                )
            if any(name == b[0] for b in self.blocks):
                raise InvalidDataError(f"parameter {name!r} is declared twice.")
            self.blocks.append((str(name), con, slice(start, start + con.unconstrained_dim)))
            start += con.unconstrained_dim
        self.dim = start

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(b[0] for b in self.blocks)

    def unpack(self, zeta: Tensor) -> dict[str, Tensor]:
        """The constrained parameters by name from ζ of shape (..., dim)."""
        return {name: con.forward(zeta[..., sl]) for name, con, sl in self.blocks}

    def log_abs_det_jacobian(self, zeta: Tensor) -> Tensor:
        """Σ_b log|det J_b(ζ_b)|, shape (...)."""
        out = torch.zeros(zeta.shape[:-1], dtype=zeta.dtype, device=zeta.device)
        for _, con, sl in self.blocks:
            out = out + con.log_abs_det_jacobian(zeta[..., sl])
        return out

    def config(self) -> list[list[Any]]:
        """A readable description of the blocks (for reports)."""
        return [[name, repr(con)] for name, con, _ in self.blocks]


def constrained_sample(
    model: Any, family: Any, params: np.ndarray, n: int = 1000, seed: int | np.random.Generator | None = None
) -> dict[str, np.ndarray]:
    """Draws of the fitted constrained posterior by name: ζ ~ q, θ = T(ζ) (post-processing).

    Parameters
    ----------
    model
        A :class:`~dpinfer.release.dpvi.models.Model`; an unconstrained one gives ``{"theta": draws}``.
    family
        The fit's Gaussian family (:mod:`dpinfer.release.dpvi.families`).
    params
        The fitted variational parameters.
    n, seed
        Number of draws and the seed.

    Returns
    -------
    dict
        name → array of shape ``(n, *block shape)``.
    """
    rng = np.random.default_rng(seed)
    params = np.asarray(params, dtype=np.float64)
    L = family.scale_tril(params)
    zeta = family.mean(params) + rng.standard_normal((int(n), family.dim)) @ L.T
    layout = getattr(model, "layout", None)
    if layout is None:
        return {"theta": zeta}
    with torch.no_grad():
        out = layout.unpack(torch.as_tensor(zeta))
    return {k: v.numpy().copy() for k, v in out.items()}


def pad_covariates(X: np.ndarray, n_features: int, dim: int) -> np.ndarray:
    """The X a constrained model hands the engine: its n_features columns, zero-padded to dim.

    The engine checks that X has ``dim`` columns (one per coordinate of a regression's θ); a
    constrained model reads only ``X[:, :n_features]``, so the padding is never used.
    """
    if X.shape[1] < n_features:
        raise InvalidDataError(f"X has {X.shape[1]} column(s) but the model uses n_features={n_features}.")
    if n_features > dim:
        raise InvalidDataError(
            f"n_features={n_features} exceeds the model's {dim} unconstrained coordinates, which the "
            "DPVI engine's data check does not support yet."
        )
    out = np.zeros((X.shape[0], dim))
    out[:, :n_features] = X[:, :n_features]
    return out


def link_predict(
    model: Any, mean: np.ndarray, cov: np.ndarray, X: Any, n_samples: int = 1000, seed: int = 0
) -> np.ndarray:
    """Posterior predictive mean E_q[link(θ, x)] of a custom model, Monte Carlo over ζ ~ N(mean, cov).

    Raises
    ------
    InvalidDataError
        The model has no ``link``; the message says what to supply.
    """
    if model.link is None:
        raise InvalidDataError(
            "this custom model has no link: pass Model(..., link=lambda theta, X: E[y | X, theta] "
            "(a tensor of shape (n,); theta as log_likelihood receives it)) to get predictions."
        )
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    if model.layout is not None:
        X = X[:, : model.n_features]
    zeta = np.random.default_rng(seed).multivariate_normal(mean, cov, size=int(n_samples))
    Xt = torch.as_tensor(X)
    with torch.no_grad():
        draws = [model.link(model._theta(torch.as_tensor(z)), Xt) for z in zeta]
    return torch.stack(draws).mean(0).numpy()


__all__ = [
    "CholeskyFactor",
    "Constraint",
    "Interval",
    "ParamLayout",
    "Positive",
    "Real",
    "Simplex",
    "constrained_sample",
    "link_predict",
    "pad_covariates",
]
