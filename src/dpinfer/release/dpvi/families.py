"""Gaussian variational families with the reparameterisation θ = u + L ε, ε ~ N(0, I).

Both families expose the pieces the DPVI gradient needs (Jälkö et al. 2017, Section 4):

* ``sample(params, eps)``: θ as a differentiable function of the variational parameters;
* ``pullback(params, eps, g)``: the chain rule ∂θ/∂params applied to per-example gradients
  g_i = ∇_θ ℓ_i, *vectorised over examples* (closed form, no autograd);
* ``entropy(params)``: the entropy of q, analytic.

Parameter layouts (flat vectors, ``n_params`` entries):

* :class:`MeanFieldGaussian`: ``[u (D), ω (D)]`` with q = N(u, diag(exp(ω))²), as PyMC3's ADVI
  used by the authors (2D parameters);
* :class:`FullRankGaussian`: ``[u (D), the D(D+1)/2 lower-triangular entries of L row by row]``
  with the diagonal stored as log L_jj; q = N(u, L Lᵀ).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ...errors import InvalidDataError

Tensor = torch.Tensor


class GaussianFamily:
    """Common interface of the Gaussian families."""

    name = ""

    def __init__(self, dim: int) -> None:
        self.dim = int(dim)
        if self.dim < 1:
            raise InvalidDataError(f"dim must be >= 1, got {dim!r}.")

    n_params: int

    def init_params(self, dtype: torch.dtype = torch.float64) -> Tensor:
        """u = 0 and unit scale (PyMC3 ADVI's start: ω = 0)."""
        return torch.zeros(self.n_params, dtype=dtype)

    def sample(self, params: Tensor, eps: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def pullback(self, params: Tensor, eps: Tensor, g: Tensor) -> Tensor:  # pragma: no cover
        raise NotImplementedError

    def entropy(self, params: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def entropy_grad(self, params: Tensor) -> Tensor:
        """∇_params H[q] (closed form in the subclasses; autograd here)."""
        return torch.func.grad(self.entropy)(params)

    def mean(self, params: np.ndarray) -> np.ndarray:
        """Mean of q."""
        return np.asarray(params[: self.dim], dtype=np.float64).copy()

    def scale_tril(self, params: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def covariance(self, params: np.ndarray) -> np.ndarray:
        """Covariance of q."""
        L = self.scale_tril(params)
        return L @ L.T


class MeanFieldGaussian(GaussianFamily):
    """q(θ) = N(u, diag(exp(ω))²); θ = u + exp(ω) ⊙ ε."""

    name = "meanfield"

    @property
    def n_params(self) -> int:  # type: ignore[override]
        return 2 * self.dim

    def sample(self, params: Tensor, eps: Tensor) -> Tensor:
        u, omega = params[: self.dim], params[self.dim :]
        return u + torch.exp(omega) * eps

    def pullback(self, params: Tensor, eps: Tensor, g: Tensor) -> Tensor:
        """Per-example gradients w.r.t. (u, ω): ``[g_i, g_i ⊙ ε ⊙ exp(ω)]``, shape (B, 2D)."""
        scale = torch.exp(params[self.dim :])
        return torch.cat([g, g * (eps * scale)], dim=-1)

    def entropy(self, params: Tensor) -> Tensor:
        """H[q] = Σ ω_j + D/2 · log(2πe)."""
        return params[self.dim :].sum() + 0.5 * self.dim * (1.0 + math.log(2 * math.pi))

    def entropy_grad(self, params: Tensor) -> Tensor:
        """∂H/∂u = 0, ∂H/∂ω = 1."""
        out = torch.zeros_like(params)
        out[self.dim :] = 1.0
        return out

    def scale_tril(self, params: np.ndarray) -> np.ndarray:
        return np.diag(np.exp(np.asarray(params[self.dim :], dtype=np.float64)))


class FullRankGaussian(GaussianFamily):
    """q(θ) = N(u, L Lᵀ), L lower triangular with positive diagonal exp(l_jj); θ = u + L ε."""

    name = "fullrank"

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        rows, cols = np.tril_indices(self.dim)
        self._rows = torch.as_tensor(rows)
        self._cols = torch.as_tensor(cols)
        self._diag_mask = torch.as_tensor(rows == cols)

    @property
    def n_params(self) -> int:  # type: ignore[override]
        return self.dim + self.dim * (self.dim + 1) // 2

    def _entries(self, params: Tensor) -> Tensor:
        raw = params[self.dim :]
        return torch.where(self._diag_mask.to(raw.device), torch.exp(raw), raw)

    def _L(self, params: Tensor) -> Tensor:
        L = torch.zeros(self.dim, self.dim, dtype=params.dtype, device=params.device)
        idx = (self._rows.to(params.device), self._cols.to(params.device))
        return L.index_put(idx, self._entries(params))

    def sample(self, params: Tensor, eps: Tensor) -> Tensor:
        return params[: self.dim] + eps @ self._L(params).T

    def pullback(self, params: Tensor, eps: Tensor, g: Tensor) -> Tensor:
        """Per-example gradients: ∂/∂u = g_i; ∂/∂L_jk = g_ij ε_k (×L_jj on the log-diagonal)."""
        rows, cols = self._rows.to(g.device), self._cols.to(g.device)
        dL = g[:, rows] * eps[cols]
        dL = torch.where(self._diag_mask.to(g.device), dL * self._entries(params), dL)
        return torch.cat([g, dL], dim=-1)

    def entropy(self, params: Tensor) -> Tensor:
        """H[q] = Σ log L_jj + D/2 · log(2πe)."""
        diag = params[self.dim :][self._diag_mask.to(params.device)]
        return diag.sum() + 0.5 * self.dim * (1.0 + math.log(2 * math.pi))

    def entropy_grad(self, params: Tensor) -> Tensor:
        """∂H/∂u = 0, ∂H/∂l_jj = 1 on the log-diagonal, 0 off it."""
        out = torch.zeros_like(params)
        out[self.dim :] = self._diag_mask.to(device=params.device, dtype=params.dtype)
        return out

    def scale_tril(self, params: np.ndarray) -> np.ndarray:
        p = torch.as_tensor(np.asarray(params, dtype=np.float64))
        return self._L(p).numpy()


FAMILIES: dict[str, type[GaussianFamily]] = {"meanfield": MeanFieldGaussian, "fullrank": FullRankGaussian}
FAMILY_CHOICES = ("auto", *FAMILIES)

#: ``family="auto"`` takes the full-rank family up to this many coordinates (see :func:`choose_family`)
AUTO_FULLRANK_MAX_DIM = 30
#: λ at or below which the gradient noise counts as small (the value of dpinfer.release.dpvi.optim.LOW_NOISE)
LOW_NOISE = 0.05


def choose_family(
    name: str, dim: int, per_example: str = "theta", noise_error: float = 0.0
) -> tuple[str, str]:
    """The family a fit uses, and why: ``(family, reason)``.

    ``"meanfield"`` and ``"fullrank"`` are taken as given. ``"auto"`` (the default of
    :class:`dpinfer.release.dpvi.DPVI`) takes the full-rank family when ``per_example="theta"``,
    ``dim <= AUTO_FULLRANK_MAX_DIM`` and the public noise error per unit clip ``noise_error``
    (λ of :func:`dpinfer.release.dpvi.optim.noise_error_per_clip`; 0 for a non-private fit) is at most
    :data:`dpinfer.release.dpvi.optim.LOW_NOISE` (0.05), the mean-field family otherwise:

    * mean-field VI understates the marginal sd of a correlated posterior whatever the privacy
      (on a probit regression with n = 2000 the exact mean-field optimum, by quadrature, has sd
      ratios (0.71, 0.71, 0.94)), and the full-rank family does not;
    * in mode ``"theta"`` the released rows are the θ-gradients (S·D entries) whatever the family,
      so the full-rank family costs no privacy: the same clip, σ and event, and the same noise
      dimension. In the modes ``"likelihood"`` and ``"elbo"`` the rows are the gradients with
      respect to the variational parameters, D + D(D+1)/2 of them for the full-rank family, so
      the noise grows with D²: ``"auto"`` keeps the paper's mean-field family there;
    * when the noise dominates (λ > 0.05, e.g. ε = 1 with n = 2000, q = 0.05, T = 1000: λ = 0.41)
      every one of the D(D+1)/2 scale entries of the full-rank family random-walks with it, and
      its sd comes out further from the posterior's than the mean-field one (sd ratios 1.7-2.7
      against 1.2-2.0 on logistic, probit and Poisson regressions, 8 seeds; the positive-scale
      model's log σ 3.4 posterior sd off against 1.8), so ``"auto"`` is mean-field there;
    * the full-rank family's extra work is O(S·D²) per step (the draws θ = u + Lε and the
      pullback of the one privatised sum, not of every row) and its optimizer state D(D+1)/2; at
      D = 30 that is 465 scale parameters. Wall time per 1000 steps (``benchmarks/dpvi_family.py``,
      n = 2000, q = 0.05): full-rank / mean-field 1.31-1.42× for D = 3-50, 1.91× at D = 100.

    Raises
    ------
    InvalidDataError
        ``name`` is not one of :data:`FAMILY_CHOICES`.
    """
    if name not in FAMILY_CHOICES:
        raise InvalidDataError(f"family must be one of {list(FAMILY_CHOICES)}, got {name!r}.")
    if name != "auto":
        return name, "requested"
    if per_example != "theta":
        return "meanfield", (
            f"auto: per_example={per_example!r} clips the variational-parameter gradients, whose "
            "number grows as D^2 for the full-rank family (more noise); mean-field"
        )
    if dim > AUTO_FULLRANK_MAX_DIM:
        return "meanfield", f"auto: D = {dim} > {AUTO_FULLRANK_MAX_DIM}: mean-field (cost O(D^2) per step)"
    if math.isinf(noise_error):
        return "meanfield", "auto: n is secret (add-remove), so the noise level is not public: mean-field"
    if noise_error > LOW_NOISE:
        return "meanfield", (
            f"auto: the gradient noise dominates (noise error per unit clip {noise_error:.3g} > "
            f"{LOW_NOISE}): mean-field (fewer scale parameters for the noise to move)"
        )
    return "fullrank", (
        f"auto: D = {dim} <= {AUTO_FULLRANK_MAX_DIM}, noise error per unit clip {noise_error:.3g} <= "
        f"{LOW_NOISE}: full-rank (the posterior's correlations and marginal sd, at no privacy cost "
        "with per_example='theta')"
    )


def make_family(name: str, dim: int) -> GaussianFamily:
    """A family by name: ``"meanfield"`` or ``"fullrank"``."""
    try:
        return FAMILIES[name](dim)
    except KeyError:
        raise InvalidDataError(f"family must be one of {sorted(FAMILIES)}, got {name!r}.") from None
