"""The noise-aware posterior of a privately released GLM (the analyst's side: post-processing only).

What was released
-----------------
:func:`dpinfer.release.glm.release_glm_statistics` (the data owner) scales every feature to
``x̃ ∈ [-1, 1]`` by its declared public bounds (the offset too, ``õ``), scales the response to ``ỹ``
(``[-1, 1]`` for the linear family, ``y / y_max`` for Poisson, ``{0, 1}`` otherwise) and releases

    z = Σ_i t(x_i, y_i) + N(0, σ² I),     t = [ỹ·r_y / R_y,  vech(r rᵀ)∖{1} / R_x,  (ỹ²)],

with ``r = (1, x̃, õ)``, ``r_y = (1, x̃)``, ``R_y`` and ``R_x`` the largest norms of the two blocks
under the bounds (so each block has norm at most 1; ``ỹ²`` only for the linear family) and σ the
Gaussian mechanism's for the L2 sensitivity 2·√(number of blocks) (replace-one). These are the
sufficient statistics of the second-order (polynomial) approximation of the GLM log-likelihood in
the linear predictor η (Kulkarni, Jälkö, Koskela, Kaski & Honkela 2021), and exactly the sufficient
statistics of the Gaussian linear model (Bernstein & Sheldon 2019).

The model of the release (the approximation)
--------------------------------------------
The posterior is *not* computed from the polynomial approximation of the likelihood: as in
Kulkarni et al. (2021, Sec. 3) and Bernstein & Sheldon (2019), the released sum is modelled by the
central limit theorem,

    Σ_i t_i | θ, φ ≈ N(n m(θ, φ), n V(θ, φ)),    so    z | θ, φ ≈ N(n m, n V + σ² I),

where m and V are the mean and covariance of one record's statistic under the exact GLM
p(y | η) and a **covariate model** u = (x̃, õ) ~ N(μ, Σ) whose parameters φ = (μ, Σ = L Lᵀ) are
inferred jointly with θ from the same released moments. Given θ, η = c + aᵀu is Gaussian and u | η
is Gaussian, so every moment of t (up to the fourth order of u, with E[ỹᵏ | η] of the family) is a
one-dimensional Gauss–Hermite integral over η (32 nodes) of closed-form Gaussian moments
(Isserlis): no Monte Carlo error in m or V.

When it breaks
--------------
* small n, or rare events (a logistic regression with a handful of positives, Poisson counts that
  are mostly 0 at n of a few hundred): the CLT for Σ t_i is then poor;
* covariates far from Gaussian inside their bounds (strongly skewed, heavy-tailed or discrete
  features): m(θ, φ) uses the Gaussian covariate model's moments beyond the second (E[x g(xᵀθ)]),
  so θ can be biased; features piled up at their bounds (clamped data) do the same;
* a linear family whose errors are not Gaussian or whose ỹ is often at its bounds;
* a Poisson count model whose counts reach ``y_max`` (the model does not know about the cap).

SBC over the whole generative process, with covariates drawn from the covariate model, is in
``examples/private_glm/calibration.py``.

Sampling
--------
The MAP (L-BFGS) and its Hessian give a Laplace approximation. By default it is the proposal of
self-normalised importance sampling (multivariate t₅, scale 1.5× the inverse Hessian, as in the
exact references of the test suite), checked by the Pareto k̂ of the weights (Vehtari et al. 2024;
k̂ > 0.7 warns, :class:`~dpinfer.errors.WeightDegeneracyWarning`). ``method="hmc"`` instead runs
Hamiltonian Monte Carlo (Neal 2011) preconditioned by it: ``chains`` chains in one batch, a
dual-averaging step size (Hoffman & Gelman 2014) during warm-up and a jittered number of leapfrog
steps; split R-hat above 1.01 warns (:class:`~dpinfer.errors.ConvergenceWarning`).
"""

from __future__ import annotations

import math
import textwrap
import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch

from ..diagnostics.checks import pareto_khat
from ..errors import ConvergenceWarning, InvalidDataError, WeightDegeneracyWarning
from ..privacy.report import PrivacyReport
from ..randomness import as_generator
from ..results.format import Record, ResultFile, draws_to_arviz

FAMILIES = ("logistic", "probit", "poisson", "linear")
_GH_NODES = 32


@dataclass(frozen=True)
class GLMRelease:
    """What the data owner released: the noisy statistic and the public facts to read it.

    Attributes
    ----------
    family
        ``"logistic"``, ``"probit"``, ``"poisson"`` or ``"linear"``.
    z
        The released noisy statistic (module docstring for its layout).
    sigma
        The standard deviation of the Gaussian noise on every coordinate (public).
    n
        The number of records (public under replace-one neighbours).
    feature_names
        The names of the D features.
    intercept
        Whether the linear predictor has an intercept.
    has_offset
        Whether an offset (e.g. log exposure) enters η with coefficient 1.
    offset_bounds
        The declared (lower, upper) of the offset (used to map õ back to the offset's units).
    y_scale
        ``y_max`` for Poisson; the half-width of the response's bounds for the linear family.
    y_center
        The midpoint of the response's bounds (linear family), else 0.
    feature_bounds
        The declared (lower, upper) of every feature, shape (D, 2).
    privacy
        The release's privacy report.
    """

    family: str
    z: np.ndarray
    sigma: float
    n: int
    feature_names: tuple[str, ...]
    intercept: bool
    has_offset: bool
    offset_bounds: tuple[float, float] | None
    y_scale: float
    y_center: float
    feature_bounds: np.ndarray
    privacy: PrivacyReport | None = None

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def layout(self) -> StatisticLayout:
        return StatisticLayout(self.n_features, self.has_offset, self.family == "linear")

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family, "z": np.asarray(self.z).tolist(), "sigma": self.sigma, "n": self.n,
            "feature_names": list(self.feature_names), "intercept": self.intercept,
            "has_offset": self.has_offset,
            "offset_bounds": None if self.offset_bounds is None else list(self.offset_bounds),
            "y_scale": self.y_scale, "y_center": self.y_center,
            "feature_bounds": np.asarray(self.feature_bounds).tolist(),
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GLMRelease:
        ob = d.get("offset_bounds")
        return cls(
            family=str(d["family"]), z=np.asarray(d["z"], dtype=np.float64), sigma=float(d["sigma"]),
            n=int(d["n"]), feature_names=tuple(d["feature_names"]), intercept=bool(d["intercept"]),
            has_offset=bool(d["has_offset"]),
            offset_bounds=None if ob is None else (float(ob[0]), float(ob[1])),
            y_scale=float(d["y_scale"]), y_center=float(d["y_center"]),
            feature_bounds=np.asarray(d["feature_bounds"], dtype=np.float64),
            privacy=None if d.get("privacy") is None else PrivacyReport.from_dict(d["privacy"]),
        )


@dataclass(frozen=True)
class StatisticLayout:
    """Index bookkeeping of the released statistic (shared by the owner and the analyst).

    ``r = (1, x̃_1..x̃_D[, õ])`` has ``Q`` entries; the y block is ``ỹ·r[:D+1]``; the x block is
    ``r_j r_k`` for ``j <= k`` except ``(0, 0)``; the linear family adds ``ỹ²``.
    """

    n_features: int
    has_offset: bool
    has_y2: bool

    @property
    def Q(self) -> int:
        return 1 + self.n_features + int(self.has_offset)

    @property
    def y_index(self) -> np.ndarray:
        return np.arange(self.n_features + 1)

    @property
    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        j, k = np.triu_indices(self.Q)
        keep = ~((j == 0) & (k == 0))
        return j[keep], k[keep]

    @property
    def R_y(self) -> float:
        """Largest norm of ỹ·r_y: |ỹ| <= 1 and |r_y|² <= D + 1."""
        return math.sqrt(self.n_features + 1)

    @property
    def R_x(self) -> float:
        """Largest norm of vech(r rᵀ) without the constant: Σ_{j<=k} r_j² r_k² - 1 with |r_j| <= 1
        equals (|r|⁴ + Σ r_j⁴)/2 - 1 <= (Q² + Q)/2 - 1."""
        return math.sqrt((self.Q**2 + self.Q) / 2 - 1)

    @property
    def n_blocks(self) -> int:
        return 3 if self.has_y2 else 2

    @property
    def dim(self) -> int:
        return len(self.y_index) + len(self.pairs[0]) + int(self.has_y2)

    @property
    def weights(self) -> np.ndarray:
        """Per-coordinate scale of the released statistic (each block's norm <= 1)."""
        w = [np.full(len(self.y_index), 1 / self.R_y), np.full(len(self.pairs[0]), 1 / self.R_x)]
        if self.has_y2:
            w.append(np.ones(1))
        return np.concatenate(w)

    def statistic(self, xs: np.ndarray, ys: np.ndarray, os: np.ndarray | None) -> np.ndarray:
        """Σ_i t_i of scaled records (x̃ in [-1,1]^D, ỹ, õ in [-1,1]), weighted (owner side)."""
        n = xs.shape[0]
        cols = [np.ones((n, 1)), xs] + ([os[:, None]] if self.has_offset and os is not None else [])
        r = np.concatenate(cols, axis=1)
        j, k = self.pairs
        parts = [(ys[:, None] * r[:, self.y_index]).sum(0), (r[:, j] * r[:, k]).sum(0)]
        if self.has_y2:
            parts.append(np.array([(ys**2).sum()]))
        return np.concatenate(parts) * self.weights


@dataclass(frozen=True)
class GLMPrior:
    """The analyst's prior (all in the scaled units: features and offset in [-1, 1]).

    Parameters
    ----------
    coef_sd
        Sd of the N(0, sd²) prior of every coefficient of a scaled feature.
    intercept_sd
        Sd of the N(0, sd²) prior of the intercept.
    noise_log_mean, noise_log_sd
        log σ_y ~ N(mean, sd²): the linear family's noise sd on the scaled response.
    cov_mean_sd
        μ_j ~ N(0, sd²): the covariate model's means (scaled units).
    cov_scale_log_mean, cov_scale_log_sd
        log L_jj ~ N(mean, sd²): the covariate model's Cholesky diagonal (scales).
    cov_offdiag_sd
        L_jk ~ N(0, sd²) for j > k: its off-diagonal entries.
    """

    coef_sd: float = 2.5
    intercept_sd: float = 2.5
    noise_log_mean: float = math.log(0.3)
    noise_log_sd: float = 0.75
    cov_mean_sd: float = 0.5
    cov_scale_log_mean: float = math.log(0.3)
    cov_scale_log_sd: float = 0.5
    cov_offdiag_sd: float = 0.2


@dataclass(frozen=True)
class GLMSamplerOptions:
    """How the posterior is sampled (module docstring).

    Parameters
    ----------
    method
        ``"laplace-is"`` (default): self-normalised importance sampling from a multivariate t₅
        proposal at the MAP with 1.5× the inverse Hessian as scale, resampled to ``draws`` draws
        (one chain; the Pareto k̂ of the weights and their ESS are reported, and a k̂ above 0.7
        warns). ``"hmc"``: Hamiltonian Monte Carlo preconditioned by the same Laplace
        approximation, ``chains`` chains in one batch (split R-hat reported; above 1.01 warns);
        about 30× slower.
    proposals
        Importance-sampling proposals per round (``"laplace-is"``).
    adapt
        Adaptive rounds after the Laplace proposal: each matches the t₅ proposal to the previous
        round's weighted mean and covariance (blended half-half with the Laplace covariance).
    chains, warmup, draws
        HMC chains, their warm-up iterations (step-size adaptation) and kept draws per chain; for
        ``"laplace-is"``, ``draws`` is the number of resampled draws kept.
    leapfrog
        Mean number of leapfrog steps per HMC iteration (jittered ±50%).
    target_accept
        Target of the dual-averaging step-size adaptation.
    """

    method: str = "laplace-is"
    proposals: int = 4000
    adapt: int = 2
    chains: int = 4
    warmup: int = 200
    draws: int = 4000
    leapfrog: int = 6
    target_accept: float = 0.8


# ---- the model ----------------------------------------------------------------------------------
class _Model:
    """Batched log posterior of ψ = [θ, (log σ_y), μ, log diag L, offdiag L] given a release."""

    def __init__(self, rel: GLMRelease, prior: GLMPrior) -> None:
        self.rel, self.prior, self.lay = rel, prior, rel.layout
        D = rel.n_features
        self.D, self.q = D, D + int(rel.has_offset)
        self.p_theta = D + int(rel.intercept)
        self.linear = rel.family == "linear"
        self.tril = np.tril_indices(self.q, -1)
        self.dim = self.p_theta + int(self.linear) + self.q + self.q + len(self.tril[0])
        dt = torch.float64
        self.z = torch.as_tensor(np.asarray(rel.z, dtype=np.float64), dtype=dt)
        self.w = torch.as_tensor(self.lay.weights, dtype=dt)
        self.n = float(rel.n)
        self.sigma2 = float(rel.sigma) ** 2
        nodes, wts = np.polynomial.hermite_e.hermegauss(_GH_NODES)
        self.xi = torch.as_tensor(nodes, dtype=dt)
        self.gw = torch.as_tensor(wts / wts.sum(), dtype=dt)
        j, k = self.lay.pairs
        self.j, self.k = torch.as_tensor(j), torch.as_tensor(k)
        self.jy = torch.as_tensor(self.lay.y_index)
        if rel.has_offset:
            lo, hi = rel.offset_bounds  # type: ignore[misc]
            self.off_mid, self.off_half = (lo + hi) / 2, (hi - lo) / 2
        else:
            self.off_mid, self.off_half = 0.0, 0.0

    def split(self, psi: torch.Tensor) -> tuple[torch.Tensor, ...]:
        i = 0
        theta = psi[..., i:i + self.p_theta]
        i += self.p_theta
        log_s = psi[..., i] if self.linear else None
        i += int(self.linear)
        mu = psi[..., i:i + self.q]
        i += self.q
        log_diag = psi[..., i:i + self.q]
        i += self.q
        off = psi[..., i:]
        return theta, log_s, mu, log_diag, off  # type: ignore[return-value]

    def log_prior(self, psi: torch.Tensor) -> torch.Tensor:
        pr = self.prior
        theta, log_s, mu, log_diag, off = self.split(psi)
        sd = torch.full((self.p_theta,), pr.coef_sd, dtype=psi.dtype)
        if self.rel.intercept:
            sd[0] = pr.intercept_sd
        lp = -0.5 * ((theta / sd) ** 2).sum(-1)
        if log_s is not None:
            lp = lp - 0.5 * ((log_s - pr.noise_log_mean) / pr.noise_log_sd) ** 2
        lp = lp - 0.5 * ((mu / pr.cov_mean_sd) ** 2).sum(-1)
        lp = lp - 0.5 * (((log_diag - pr.cov_scale_log_mean) / pr.cov_scale_log_sd) ** 2).sum(-1)
        return lp - 0.5 * ((off / pr.cov_offdiag_sd) ** 2).sum(-1)

    def moments(self, psi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean (B, T) and covariance (B, T, T) of one record's weighted statistic."""
        theta, log_s, mu, log_diag, off = self.split(psi)
        B, q = psi.shape[0], self.q
        L = torch.diag_embed(torch.exp(log_diag))
        if len(self.tril[0]):
            L = L.clone()
            L[:, self.tril[0], self.tril[1]] = off
        S = L @ L.transpose(-1, -2)  # (B, q, q)
        c = theta[:, 0] if self.rel.intercept else torch.zeros(B, dtype=psi.dtype)
        beta = theta[:, int(self.rel.intercept):]
        a = beta if not self.rel.has_offset else torch.cat(
            [beta, torch.full((B, 1), self.off_half, dtype=psi.dtype)], dim=1
        )
        c = c + self.off_mid
        Sa = (S @ a[..., None])[..., 0]  # (B, q)
        v = (a * Sa).sum(-1) + 1e-12
        m_eta = c + (a * mu).sum(-1)
        sv = torch.sqrt(v)
        eta = m_eta[:, None] + sv[:, None] * self.xi  # (B, K)
        alpha = mu[:, None, :] + Sa[:, None, :] * (self.xi / sv[:, None])[..., None]  # (B, K, q)
        C = S - Sa[:, :, None] * Sa[:, None, :] / v[:, None, None]
        ones = torch.ones(B, eta.shape[1], 1, dtype=psi.dtype)
        ab = torch.cat([ones, alpha], dim=-1)  # (B, K, Q)
        Cb = torch.zeros(B, q + 1, q + 1, dtype=psi.dtype)
        Cb[:, 1:, 1:] = C
        nu1, nu2, nu3, nu4 = self._nu(eta, log_s)
        gw = self.gw
        j, k, jy = self.j, self.k, self.jy
        # conditional means given η, then their average
        My = nu1[..., None] * ab[..., jy]  # (B, K, py)
        Mx = ab[..., j] * ab[..., k] + Cb[:, j, k][:, None, :]
        parts = [My, Mx] + ([nu2[..., None]] if self.linear else [])
        M = torch.cat(parts, dim=-1)  # (B, K, T)
        m = torch.einsum("k,bkt->bt", gw, M)
        # E over η of the conditional covariances
        A2 = torch.einsum("k,bki,bkj->bij", gw, ab, ab)
        E_nu2_aa = torch.einsum("k,bk,bki,bkj->bij", gw, nu2, ab, ab)
        E_nu1sq_aa = torch.einsum("k,bk,bki,bkj->bij", gw, nu1**2, ab, ab)
        E_nu2 = (gw * nu2).sum(-1)
        E_nu1_a = torch.einsum("k,bk,bki->bi", gw, nu1, ab)
        Syy = (E_nu2_aa + E_nu2[:, None, None] * Cb - E_nu1sq_aa)[:, jy][:, :, jy]
        # Cov(ỹ r_a, r_l r_m | η) = ν1 (ᾱ_l C_am + ᾱ_m C_al)
        Syx = E_nu1_a[:, None, j] * Cb[:, jy][:, :, k] + E_nu1_a[:, None, k] * Cb[:, jy][:, :, j]
        Cjl = Cb[:, j][:, :, j]
        Ckm = Cb[:, k][:, :, k]
        Cjm = Cb[:, j][:, :, k]
        Ckl = Cb[:, k][:, :, j]
        Ajl = A2[:, j][:, :, j]
        Akm = A2[:, k][:, :, k]
        Ajm = A2[:, j][:, :, k]
        Akl = A2[:, k][:, :, j]
        Sxx = Cjl * Ckm + Cjm * Ckl + Ajl * Ckm + Ajm * Ckl + Akl * Cjm + Akm * Cjl
        top = torch.cat([Syy, Syx], dim=-1)
        bot = torch.cat([Syx.transpose(-1, -2), Sxx], dim=-1)
        Vc = torch.cat([top, bot], dim=-2)
        if self.linear:
            cyy2 = torch.einsum("k,bk,bki->bi", gw, nu3 - nu1 * nu2, ab)[:, jy]
            col = torch.cat([cyy2, torch.zeros(B, Sxx.shape[-1], dtype=psi.dtype)], dim=-1)
            var = (gw * (nu4 - nu2**2)).sum(-1)
            Vc = torch.cat([torch.cat([Vc, col[..., None]], -1),
                            torch.cat([col, var[:, None]], -1)[:, None, :]], -2)
        V = Vc + torch.einsum("k,bks,bkt->bst", gw, M, M) - m[:, :, None] * m[:, None, :]
        w = self.w
        return m * w, V * w[:, None] * w[None, :]

    def _nu(self, eta: torch.Tensor, log_s: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        fam = self.rel.family
        if fam == "logistic":
            g = torch.sigmoid(eta)
            return g, g, g, g  # ỹ ∈ {0, 1}: every moment is g
        if fam == "probit":
            g = torch.special.ndtr(eta)
            return g, g, g, g  # ỹ ∈ {0, 1}: every moment is g
        if fam == "poisson":
            Y = self.rel.y_scale
            lam = torch.exp(eta)
            return lam / Y, (lam + lam**2) / Y**2, lam, lam  # ν3, ν4: used by the linear family only
        assert log_s is not None  # the linear family has log σ_y
        s2 = torch.exp(2 * log_s)[:, None]
        return eta, eta**2 + s2, eta**3 + 3 * eta * s2, eta**4 + 6 * eta**2 * s2 + 3 * s2**2

    def log_post(self, psi: torch.Tensor) -> torch.Tensor:
        m, V = self.moments(psi)
        cov = self.n * V + self.sigma2 * torch.eye(V.shape[-1], dtype=psi.dtype)
        Lc, info = torch.linalg.cholesky_ex(cov)
        r = (self.z - self.n * m)[..., None]
        sol = torch.linalg.solve_triangular(Lc, r, upper=False)[..., 0]
        ll = -0.5 * (sol**2).sum(-1) - torch.log(torch.diagonal(Lc, dim1=-2, dim2=-1)).sum(-1)
        lp = ll + self.log_prior(psi)
        bad = (info != 0) | ~torch.isfinite(lp)
        return torch.where(bad, torch.full_like(lp, -math.inf), lp)

    def init(self) -> np.ndarray:
        """A start from the released first moments (μ) and the prior's centre (the rest)."""
        psi = np.zeros(self.dim)
        i = self.p_theta + int(self.linear)
        if self.linear:
            psi[self.p_theta] = self.prior.noise_log_mean
        j, k = self.lay.pairs
        ny = len(self.lay.y_index)
        first = ny + np.nonzero(j == 0)[0]  # r_0 r_k = u_k
        est = np.asarray(self.rel.z)[first] / self.lay.weights[first] / self.rel.n
        psi[i:i + self.q] = np.clip(est, -0.9, 0.9)
        psi[i + self.q:i + 2 * self.q] = self.prior.cov_scale_log_mean
        return psi


# ---- sampling -----------------------------------------------------------------------------------
def _value_and_grad(model: _Model, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.detach().requires_grad_(True)
    lp = model.log_post(x)
    safe = torch.where(torch.isfinite(lp), lp, torch.zeros_like(lp))
    (g,) = torch.autograd.grad(safe.sum(), x)
    return lp.detach(), g.detach()


def _laplace(model: _Model) -> tuple[np.ndarray, np.ndarray]:
    x = torch.tensor(model.init(), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([x], lr=1.0, max_iter=300, tolerance_grad=1e-7, tolerance_change=1e-12,
                            line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = -model.log_post(x[None])[0]
        if not torch.isfinite(loss):
            loss = torch.tensor(1e30, dtype=torch.float64, requires_grad=True)
        loss.backward()
        return loss

    opt.step(closure)
    mode = x.detach().clone()
    # the Hessian by central differences of the gradient, all 2·dim points in one batch
    h = 1e-4
    E = torch.eye(len(mode), dtype=torch.float64) * h
    _, g = _value_and_grad(model, torch.cat([mode + E, mode - E]))
    H = -(g[: len(mode)] - g[len(mode):]) / (2 * h)
    Hn = 0.5 * (H + H.T).numpy()
    vals, vecs = np.linalg.eigh(Hn)
    vals = np.maximum(vals, 1e-3)  # a flat or non-convex direction: a wide proposal there
    cov = (vecs / vals) @ vecs.T
    return mode.numpy(), cov


def split_rhat(chains: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat of ``chains`` (C, N, d): ArviZ's, through the shared
    :func:`dpinfer.diagnostics.sampling.rhat` (Vehtari et al. 2021)."""
    from ..diagnostics.sampling import rhat

    return rhat(chains)


def _hmc(model: _Model, mode: np.ndarray, cov: np.ndarray, opts: GLMSamplerOptions,
         rng: np.random.Generator) -> tuple[np.ndarray, dict[str, float]]:
    """HMC in whitened coordinates ψ = mode + A ζ (A Aᵀ = Laplace covariance)."""
    A = torch.as_tensor(np.linalg.cholesky(cov + 1e-12 * np.eye(len(mode))), dtype=torch.float64)
    m0 = torch.as_tensor(mode, dtype=torch.float64)
    d, C = len(mode), opts.chains

    def f(zeta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lp, g = _value_and_grad(model, m0 + zeta @ A.T)
        return lp, g @ A

    def gen(shape: tuple[int, ...]) -> torch.Tensor:
        return torch.as_tensor(rng.standard_normal(shape), dtype=torch.float64)

    zeta = gen((C, d)) * 0.5
    lp, g = f(zeta)
    for _ in range(20):  # starts with a finite density
        bad = ~torch.isfinite(lp)
        if not bad.any():
            break
        zeta[bad] *= 0.5
        lp, g = f(zeta)
    step = 1.2 / d**0.25
    log_bar, h_bar, mu_da, t0, gamma, kappa = 0.0, 0.0, math.log(10 * step), 10.0, 0.05, 0.75
    per_chain = opts.draws // C
    out = np.empty((C, per_chain, d))
    acc_sum, n_acc = 0.0, 0
    total = opts.warmup + per_chain
    for it in range(total):
        eps = step if it < opts.warmup else math.exp(log_bar)
        nsteps = max(1, int(round(opts.leapfrog * rng.uniform(0.5, 1.5))))
        p = gen((C, d))
        h0 = lp - 0.5 * (p**2).sum(-1)
        x, gx = zeta.clone(), g.clone()
        pp = p + 0.5 * eps * gx
        lpx = lp
        for s in range(nsteps):
            x = x + eps * pp
            lpx, gx = f(x)
            if s < nsteps - 1:
                pp = pp + eps * gx
        pp = pp + 0.5 * eps * gx
        h1 = lpx - 0.5 * (pp**2).sum(-1)
        log_a = torch.where(torch.isfinite(h1), h1 - h0, torch.full_like(h1, -math.inf))
        a = torch.clamp(torch.exp(torch.clamp(log_a, max=0.0)), 0.0, 1.0)
        accept = torch.as_tensor(rng.random(C)) < a
        zeta = torch.where(accept[:, None], x, zeta)
        lp = torch.where(accept, lpx, lp)
        g = torch.where(accept[:, None], gx, g)
        mean_a = float(a.mean())
        if it < opts.warmup:
            t = it + 1
            h_bar = (1 - 1 / (t + t0)) * h_bar + (opts.target_accept - mean_a) / (t + t0)
            log_step = mu_da - math.sqrt(t) / gamma * h_bar
            step = math.exp(log_step)
            w = t ** (-kappa)
            log_bar = w * log_step + (1 - w) * log_bar
        else:
            out[:, it - opts.warmup] = (m0 + zeta @ A.T).numpy()
            acc_sum += mean_a
            n_acc += 1
    return out, {"accept_rate": acc_sum / max(n_acc, 1), "step_size": math.exp(log_bar)}


def _importance(model: _Model, mode: np.ndarray, cov: np.ndarray, opts: GLMSamplerOptions,
                rng: np.random.Generator) -> tuple[np.ndarray, dict[str, float]]:
    """Self-normalised importance sampling from t₅ proposals: the Laplace approximation, then
    ``opts.adapt`` rounds whose proposal matches the previous round's weighted mean and covariance
    (adaptive importance sampling, Cappé et al. 2004); the last round's weights are kept."""
    from scipy import stats

    loc, shape = mode, 1.5 * cov
    info: dict[str, float] = {}
    for rnd in range(opts.adapt + 1):
        prop = stats.multivariate_t(loc=loc, shape=shape, df=5)
        X = np.atleast_2d(prop.rvs(size=opts.proposals, random_state=rng))
        with torch.no_grad():
            lp = np.concatenate([
                model.log_post(torch.as_tensor(X[i:i + 2000], dtype=torch.float64)).numpy()
                for i in range(0, len(X), 2000)
            ])
        logw = lp - prop.logpdf(X)
        logw = np.where(np.isfinite(logw), logw, -np.inf)
        w = np.exp(logw - logw.max())
        w /= w.sum()
        ess = float(1.0 / (w**2).sum())
        info = {"pareto_khat": float(pareto_khat(logw[np.isfinite(logw)])), "ess": ess,
                "is_rounds": rnd + 1}
        if rnd == opts.adapt or ess < 20:
            break
        m = w @ X
        c = (X - m).T @ ((X - m) * w[:, None])
        loc, shape = m, 1.5 * (0.5 * c + 0.5 * cov)  # blended with the Laplace covariance
    idx = rng.choice(len(X), size=opts.draws, replace=True, p=w)
    return X[idx][None], info


#: Below this effective sample size the importance-sampled posterior warns (a few distinct draws).
MIN_IS_ESS = 100


# ---- the result ---------------------------------------------------------------------------------
class GLMPosterior(ResultFile):
    """The noise-aware posterior of a private GLM: draws of the coefficients (HMC chains, or one
    "chain" of importance-resampled draws).

    ``mean()``, ``sd()``, ``interval(level)`` are over all kept draws; ``sample(n, seed)``
    resamples them; ``to_arviz()`` keeps the chains. Coefficients are those of the
    *scaled* features ``x̃ = 2 (x - lower) / (upper - lower) - 1`` (and the scaled response of the
    linear family); :meth:`original_scale_draws` maps them to the features' own units.
    """

    def __init__(self, draws: np.ndarray, param_names: tuple[str, ...], release: GLMRelease,
                 privacy: PrivacyReport | None, diagnostics: dict[str, Any],
                 nuisance: np.ndarray | None = None, settings: dict[str, Any] | None = None) -> None:
        self.draws = np.asarray(draws, dtype=np.float64)  # (chains, n, dim)
        self.param_names = tuple(param_names)
        self.release = release
        self.privacy = privacy
        self.diagnostics = dict(diagnostics)
        self.nuisance = nuisance
        self.settings = dict(settings or {})

    @property
    def flat(self) -> np.ndarray:
        return self.draws.reshape(-1, self.draws.shape[-1])

    def mean(self) -> np.ndarray:
        return self.flat.mean(0)

    def sd(self) -> np.ndarray:
        return self.flat.std(0, ddof=1)

    def interval(self, level: float = 0.95) -> np.ndarray:
        if not 0 < level < 1:
            raise InvalidDataError(f"level must be in (0, 1), got {level}.")
        return np.quantile(self.flat, [0.5 - level / 2, 0.5 + level / 2], axis=0).T

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        idx = as_generator(seed).integers(0, self.flat.shape[0], size=int(n))
        return self.flat[idx]

    def to_arviz(self, n_draws: int = 4000, seed: Any = 0) -> Any:
        """The chains (thinned evenly to about ``n_draws`` draws in all), under the names."""
        C, N, _ = self.draws.shape
        per = max(1, min(N, int(n_draws) // C))
        idx = np.linspace(0, N - 1, per).round().astype(int)
        draws = self.draws[:, idx]
        if draws.shape[0] * draws.shape[1] != int(n_draws):  # fewer than one per chain: one chain
            draws = self.sample(int(n_draws), seed)[None]
        method = f"noise-aware GLM ({self.diagnostics.get('method')})"
        return draws_to_arviz(draws, self.param_names, self.privacy, method=method,
                              family=self.release.family)

    def synthesize(self, n: int, X: Any, seed: Any = None, target: str | None = None) -> Any:
        """``n`` synthetic records (covariates, response) from the posterior predictive
        (:func:`dpinfer.models.synthesis.glm_synthesize`; logistic and probit): θ from this
        posterior, covariates from ``X``, a DP covariate model
        (:func:`dpinfer.release.synthesis.release_covariate_model`, its own release) or
        :class:`~dpinfer.models.synthesis.PublicCovariates` (copied, stated NOT protected), and the
        response from the model, named ``target`` (default: the name of ``y`` given to
        ``private_glm``). Post-processing: no further privacy cost; ``.to_csv(path)`` writes them
        with their privacy statement."""
        from ..models.synthesis import glm_synthesize

        return glm_synthesize(self, n, X, seed=seed, target=target)

    def original_scale_draws(self) -> np.ndarray:
        """Draws of the coefficients in the features' own units (intercept first, if any).

        β_j = θ_j · 2/(hi_j - lo_j) and intercept = θ_0 - Σ_j θ_j (hi_j + lo_j)/(hi_j - lo_j); the
        linear family's coefficients and σ are also multiplied by the response's half-width and its
        intercept shifted by the response's midpoint.
        """
        rel = self.release
        th = self.flat[:, : rel.n_features + int(rel.intercept)].copy()
        lo, hi = rel.feature_bounds[:, 0], rel.feature_bounds[:, 1]
        i0 = int(rel.intercept)
        beta = th[:, i0:] * 2 / (hi - lo)
        shift = (th[:, i0:] * (hi + lo) / (hi - lo)).sum(1)
        out = [beta]
        if rel.intercept:
            out.insert(0, (th[:, 0] - shift)[:, None])
        res = np.concatenate(out, axis=1)
        if rel.family == "linear":
            res = res * rel.y_scale
            if rel.intercept:
                res[:, 0] += rel.y_center
            sig = np.exp(self.flat[:, rel.n_features + i0]) * rel.y_scale
            res = np.concatenate([res, sig[:, None]], axis=1)
        return res

    def summary(self) -> str:
        lines = [f"noise-aware private GLM ({self.release.family}, n = {self.release.n}; "
                 f"coefficients of features scaled to [-1, 1] by their public bounds)"]
        if self.privacy is not None:
            lines.append(textwrap.indent(self.privacy.summary(), "  "))
        mean, sd, ci = self.mean(), self.sd(), self.interval(0.9)
        width = max(len(n) for n in self.param_names)
        lines.append(f"  {'':{width}}      mean        sd       5%      95%")
        for i, name in enumerate(self.param_names):
            lines.append(f"  {name:{width}}  {mean[i]:8.4f}  {sd[i]:8.4f} {ci[i, 0]:8.4f} {ci[i, 1]:8.4f}")
        dg = self.diagnostics
        if dg.get("method") == "hmc":
            rhat, acc = dg.get("max_rhat", float("nan")), dg.get("accept_rate", float("nan"))
            lines.append(f"  HMC: {self.draws.shape[0]} chains x {self.draws.shape[1]} draws, max R-hat "
                         f"{rhat:.3f}, acceptance {acc:.2f}")
        else:
            lines.append(f"  Laplace-proposal importance sampling: ESS {dg.get('ess', float('nan')):.0f}, "
                         f"Pareto k-hat {dg.get('pareto_khat', float('nan')):.2f}")
        return "\n".join(lines)

    def _to_record(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        rel = self.release.to_dict()
        rel.pop("privacy")
        fields = {"release": rel, "diagnostics": self.diagnostics, "settings": self.settings}
        arrays = {"draws": self.draws}
        if self.nuisance is not None:
            arrays["nuisance"] = self.nuisance
        return fields, arrays

    @classmethod
    def _from_record(cls, record: Record, **kwargs: Any) -> GLMPosterior:
        rel = GLMRelease.from_dict({**record.fields["release"], "privacy": None})
        rel = GLMRelease(**{**rel.__dict__, "privacy": record.privacy})
        return cls(record.arrays["draws"], record.param_names, rel, record.privacy,
                   record.fields["diagnostics"], record.arrays.get("nuisance"), record.fields.get("settings"))


def param_names(rel: GLMRelease) -> tuple[str, ...]:
    names = (["intercept"] if rel.intercept else []) + list(rel.feature_names)
    if rel.family == "linear":
        names.append("log_sigma")
    return tuple(names)


#: Largest sampler sizes accepted (proposals; chains x draws): beyond them the arrays do not fit in
#: memory, which must be known before the release is charged, not discovered after it.
MAX_SAMPLER_DRAWS = 10**7


def _whole(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise InvalidDataError(f"sampler {name} must be a whole number in [{low}, {high:,}], got {value!r}.")
    return int(value)


def check_posterior_options(
    prior: Any, sampler: Any, seed: Any
) -> tuple[GLMPrior, GLMSamplerOptions]:
    """Validate the analyst's posterior options completely; return them with their defaults filled.

    :func:`dpinfer.release.glm.private_glm` calls it *before* the statistic is released and
    charged (issue 35: a bad option found after the charge wastes the budget), and
    :func:`glm_posterior` again. Refuses (:class:`~dpinfer.errors.InvalidDataError`): a prior that
    is not a :class:`GLMPrior` or has a non-finite field or a standard deviation <= 0; sampler
    options that are not :class:`GLMSamplerOptions`, an unknown method, counts that are not whole
    numbers in range (``proposals`` >= 100, ``draws`` >= 4 per chain, ``chains`` and ``leapfrog``
    >= 1, ``warmup`` and ``adapt`` >= 0, at most :data:`MAX_SAMPLER_DRAWS` draws or proposals),
    ``target_accept`` outside (0, 1); a seed that is not None, an integer >= 0, a numpy
    SeedSequence or Generator.
    """
    prior = GLMPrior() if prior is None else prior
    if not isinstance(prior, GLMPrior):
        raise InvalidDataError(f"prior must be a GLMPrior(...), got {type(prior).__name__}.")
    for key, value in asdict(prior).items():
        ok = not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
        if not ok or not math.isfinite(value) or (key.endswith("_sd") and not value > 0):
            need = "a finite number > 0 (a standard deviation)" if key.endswith("_sd") else "a finite number"
            raise InvalidDataError(f"prior {key} must be {need}, got {value!r}.")
    opts = GLMSamplerOptions() if sampler is None else sampler
    if not isinstance(opts, GLMSamplerOptions):
        raise InvalidDataError(f"sampler must be a GLMSamplerOptions(...), got {type(opts).__name__}.")
    if opts.method not in ("laplace-is", "hmc"):
        raise InvalidDataError(f"sampler method must be 'laplace-is' or 'hmc', got {opts.method!r}.")
    _whole(opts.proposals, "proposals", 100, MAX_SAMPLER_DRAWS)
    _whole(opts.adapt, "adapt", 0, 100)
    chains = _whole(opts.chains, "chains", 1, 1024)
    _whole(opts.draws, "draws", 4 * chains, MAX_SAMPLER_DRAWS // chains)
    _whole(opts.warmup, "warmup", 0, MAX_SAMPLER_DRAWS // chains)
    _whole(opts.leapfrog, "leapfrog", 1, 1024)
    ta = opts.target_accept
    if isinstance(ta, bool) or not isinstance(ta, (int, float, np.integer, np.floating)) or not 0 < ta < 1:
        raise InvalidDataError(f"sampler target_accept must be in (0, 1), got {ta!r}.")
    if not (seed is None or isinstance(seed, (np.random.SeedSequence, np.random.Generator))):
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise InvalidDataError(
                f"seed must be None, an integer >= 0, a numpy SeedSequence or Generator, got {seed!r}."
            )
    return prior, opts


def glm_posterior(
    release: GLMRelease,
    *,
    prior: GLMPrior | None = None,
    sampler: GLMSamplerOptions | None = None,
    seed: Any = None,
    warn: bool = True,
) -> GLMPosterior:
    """The noise-aware posterior p(θ | z) of a released GLM statistic (post-processing only).

    Parameters
    ----------
    release
        The :class:`GLMRelease` (from :func:`dpinfer.release.glm.release_glm_statistics`).
    prior
        The analyst's :class:`GLMPrior` (default: its defaults).
    sampler
        :class:`GLMSamplerOptions` of the HMC run.
    seed
        Public randomness of the sampler (the release's noise is not involved).
    warn
        Warn (:class:`~dpinfer.errors.ConvergenceWarning`) when split R-hat exceeds 1.01.

    Returns
    -------
    GLMPosterior
        Draws of θ (coefficients on the scaled features; the linear family's ``log_sigma`` last);
        the covariate model's draws are kept as ``nuisance``.
    """
    if release.family not in FAMILIES:
        raise InvalidDataError(f"family must be one of {FAMILIES}, got {release.family!r}.")
    prior, opts = check_posterior_options(prior, sampler, seed)
    if np.asarray(release.z).shape != (release.layout.dim,):
        raise InvalidDataError(
            f"the released statistic has shape {np.asarray(release.z).shape}, expected "
            f"({release.layout.dim},) for this family and number of features."
        )
    rng = as_generator(seed)
    model = _Model(release, prior)
    mode, cov = _laplace(model)
    k = model.p_theta + int(model.linear)
    diagnostics: dict[str, Any] = {"method": opts.method, "laplace_mode": mode[:k].tolist(),
                                   "laplace_sd": np.sqrt(np.diag(cov))[:k].tolist()}
    if opts.method == "laplace-is":
        draws, info = _importance(model, mode, cov, opts, rng)
        diagnostics.update(info)
        if warn and not info["pareto_khat"] <= 0.7:
            warnings.warn(
                f"private GLM: the importance weights' Pareto k-hat is {info['pareto_khat']:.2f} > 0.7: the "
                "Laplace proposal misses the posterior's shape; use sampler=GLMSamplerOptions(method='hmc').",
                WeightDegeneracyWarning, stacklevel=2,
            )
        elif warn and not info["ess"] >= MIN_IS_ESS:
            warnings.warn(
                f"private GLM: the importance weights' effective sample size is {info['ess']:.0f} of "
                f"{opts.proposals} proposals (< {MIN_IS_ESS}): the draws repeat a few points, so the "
                "means, sds and intervals are unreliable; use sampler=GLMSamplerOptions(method='hmc') "
                "(or more proposals).",
                WeightDegeneracyWarning, stacklevel=2,
            )
    else:
        draws, info = _hmc(model, mode, cov, opts, rng)
        rhat = split_rhat(draws)
        diagnostics.update(info, rhat=rhat[:k].tolist(), max_rhat=float(np.max(rhat)))
    names = param_names(release)
    if warn and opts.method == "hmc" and not diagnostics["max_rhat"] <= 1.01:
        warnings.warn(
            f"private GLM: split R-hat {diagnostics['max_rhat']:.3f} > 1.01: the HMC chains disagree; "
            "run more warm-up and draws (sampler=GLMSamplerOptions(warmup=..., draws=...)).",
            ConvergenceWarning, stacklevel=2,
        )
    return GLMPosterior(draws[..., :k], names, release, release.privacy, diagnostics,
                        nuisance=draws[..., k:], settings={"prior": asdict(prior), "sampler": asdict(opts)})


__all__ = ["FAMILIES", "GLMPosterior", "GLMPrior", "GLMRelease", "GLMSamplerOptions", "StatisticLayout",
           "check_posterior_options", "glm_posterior", "param_names", "split_rhat"]

