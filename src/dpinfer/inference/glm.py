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
p(y | η) and a **covariate model** for u = (x̃, õ) whose first and second moments φ = (μ, Σ = L Lᵀ)
are inferred jointly with θ from the same released moments. The covariate law matters beyond its
first two moments: E[ν₁(c + aᵀu) r] is not linear in u (:mod:`dpinfer.inference.glm_covariates`).

* ``covariates="moment-matched"`` (default): the law is a bounded shape fitted to the released
  moments — Beta margins on [-1, 1] with each feature's released mean and variance (a binary or
  one-hot feature, whose variance is 1 − μ², is the two-point law on its bounds; a uniform one
  Beta(1, 1); a skewed one a skewed Beta) joined by a Gaussian copula matching the released
  correlations — represented by 4096 quasi-Monte Carlo points and moved affinely with φ, so that
  m(θ, φ) and V(θ, φ) are exact averages over the points (equations in
  :mod:`dpinfer.inference.glm_covariates`). Its φ coordinates are λ_j = ½ log E[u_j²], μ_j / L_jj
  and L_jk / L_jj (:class:`GLMPrior`), which keep a binary feature's pinned second moment on one
  axis.
* ``covariates="gaussian"``: u ~ N(μ, Σ), the model of Kulkarni et al. (2021). Given θ, η = c + aᵀu
  is Gaussian and u | η is Gaussian, so every moment of t (up to the fourth order of u, with
  E[ỹᵏ | η] of the family) is a one-dimensional Gauss–Hermite integral over η (32 nodes) of
  closed-form Gaussian moments (Isserlis). Biased for binary, one-hot, bounded or skewed features
  (measured: 90% intervals covering 0.24 with three binary features at n = 20 000,
  ``examples/private_glm/README.md``).

When it breaks
--------------
* small n, or rare events (a logistic regression with a handful of positives, Poisson counts that
  are mostly 0 at n of a few hundred): the CLT for Σ t_i is then poor;
* covariate laws that the moment-matched shape does not reach: multi-modal continuous features (a
  Beta has one mode), higher-order interactions among binary features that pairwise moments do not
  show, features piled at one bound *and* spread over the interior; with ``"gaussian"``, any
  non-Gaussian feature;
* a linear family whose errors are not Gaussian or whose ỹ is often at its bounds;
* a Poisson count model whose counts reach ``y_max`` (the model does not know about the cap).

SBC over the whole process (release included) on binary, one-hot, uniform, skewed, correlated and
ten-feature designs is in ``examples/private_glm/sbc_designs.py`` (the table in its README); the
earlier SBC with covariates drawn from the Gaussian model is ``examples/private_glm/calibration.py``.

How much privacy costs is measured on every fit: ``diagnostics["privacy_width_ratio"]`` is each
coefficient's posterior sd over the sd the same records would give without privacy (the GLM's
Fisher information under the fitted covariate law, same prior); ``summary()`` states it, and a
ratio of 10 or more warns (:class:`NoiseDominatesWarning`).

Sampling
--------
The MAP (L-BFGS) and its Hessian give a Laplace approximation. By default it is the proposal of
self-normalised importance sampling (multivariate t₅, scale 1.5× the inverse Hessian, as in the
exact references of the test suite), checked by the Pareto k̂ of the weights (Vehtari et al. 2024;
k̂ > 0.7 warns, :class:`~dpinfer.errors.WeightDegeneracyWarning`). ``method="hmc"`` instead runs
Hamiltonian Monte Carlo (Neal 2011) preconditioned by it: ``chains`` chains in one batch, a
dual-averaging step size (Hoffman & Gelman 2014) during warm-up and a jittered number of leapfrog
steps; split R-hat above 1.01 warns (:class:`~dpinfer.errors.ConvergenceWarning`). When the
importance weights fail their check, the default ``fallback="hmc"`` runs HMC on the *same release*
(post-processing: nothing is charged again); :meth:`GLMPosterior.resample` does the same on
request. Warnings name that call, never a new release.
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
from ..errors import ConvergenceWarning, InferenceWarning, InvalidDataError, WeightDegeneracyWarning
from ..privacy.report import PrivacyReport
from ..randomness import as_generator
from ..results.format import Record, ResultFile, draws_to_arviz
from .glm_covariates import SHAPE_POINTS_COV, CovariateShape, fit_shape, plugin_moments

FAMILIES = ("logistic", "probit", "poisson", "linear")
#: The covariate models behind the CLT (module docstring; :mod:`dpinfer.inference.glm_covariates`).
COVARIATE_MODELS = ("moment-matched", "gaussian")
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
        μ_j ~ N(0, sd²): the Gaussian covariate model's means (scaled units).
    cov_scale_log_mean, cov_scale_log_sd
        log L_jj ~ N(mean, sd²): the covariate model's Cholesky diagonal (scales).
    cov_offdiag_sd
        L_jk ~ N(0, sd²) for j > k: its off-diagonal entries.
    moment_log_mean, moment_log_sd
        The moment-matched covariate model (the default): λ_j = ½ log E[u_j²] ~ N(mean, sd²)
        (λ_j = 0 for a binary feature, about log sd for a centred one).
    location_ratio_sd
        μ_j / L_jj ~ N(0, sd²) (a feature's mean in units of its own residual scale).
    correlation_ratio_sd
        L_jk / L_jj ~ N(0, sd²) for j > k (the dependence between features).
    """

    coef_sd: float = 2.5
    intercept_sd: float = 2.5
    noise_log_mean: float = math.log(0.3)
    noise_log_sd: float = 0.75
    cov_mean_sd: float = 0.5
    cov_scale_log_mean: float = math.log(0.3)
    cov_scale_log_sd: float = 0.5
    cov_offdiag_sd: float = 0.2
    moment_log_mean: float = math.log(0.4)
    moment_log_sd: float = 0.75
    location_ratio_sd: float = 3.0
    correlation_ratio_sd: float = 1.0


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
    fallback
        ``"hmc"`` (default): when the importance weights fail their check (Pareto k̂ > 0.7 or an
        effective sample size below ``MIN_IS_ESS``), the posterior is sampled again by HMC *from the
        same release* (post-processing: nothing is released or charged again) and the result says so
        (``diagnostics["fallback"]``, ``summary()``); ``"none"``: keep the importance draws and warn.
    """

    method: str = "laplace-is"
    proposals: int = 4000
    adapt: int = 2
    chains: int = 4
    warmup: int = 200
    draws: int = 4000
    leapfrog: int = 6
    target_accept: float = 0.8
    fallback: str = "hmc"


# ---- the model ----------------------------------------------------------------------------------
class _Model:
    """Batched log posterior of ψ = [θ, (log σ_y), μ, log diag L, offdiag L] given a release."""

    def __init__(self, rel: GLMRelease, prior: GLMPrior, covariates: str = "gaussian") -> None:
        self.rel, self.prior, self.lay = rel, prior, rel.layout
        self.covariates = covariates
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
        self.shape: CovariateShape | None = None
        if covariates == "moment-matched":
            self._setup_shape()

    def plugin(self) -> tuple[np.ndarray, np.ndarray]:
        """The covariates' first and second moments as released (divided by n; noisy)."""
        j, k = self.lay.pairs
        ny = len(self.lay.y_index)
        x = np.asarray(self.rel.z, dtype=np.float64)[ny:ny + len(j)] / self.lay.weights[ny:ny + len(j)]
        x = x / self.rel.n
        first = x[j == 0]
        second = np.zeros((self.q, self.q))
        sel = j > 0
        second[j[sel] - 1, k[sel] - 1] = x[sel]
        second[k[sel] - 1, j[sel] - 1] = x[sel]
        return first, second

    def _setup_shape(self) -> None:
        """Fit the moment-matched covariate shape to the release and precompute the points' tensors
        (:mod:`dpinfer.inference.glm_covariates`, eqs. (2)–(3))."""
        mean, cov = plugin_moments(*self.plugin())
        moment_sd = float(self.rel.sigma) * self.lay.R_x / self.rel.n  # noise sd of one released moment
        self.shape = shape = fit_shape(mean, cov, moment_sd=moment_sd)
        dt = torch.float64
        Q = self.q + 1
        s = np.concatenate([np.ones((len(shape.w), 1)), shape.w], axis=1)  # (M, Q)
        mv = min(len(s), SHAPE_POINTS_COV if Q > 6 else len(s))
        a, b = np.triu_indices(Q)
        h = s[:mv, a] * s[:mv, b]  # (M_V, H)
        self.s_all = torch.as_tensor(s, dtype=dt)
        self.s_v = torch.as_tensor(s[:mv], dtype=dt)
        self.ss_v = torch.as_tensor((s[:mv, :, None] * s[:mv, None, :]).reshape(mv, Q * Q), dtype=dt)
        self.sh_v = torch.as_tensor((s[:mv, :, None] * h[:, None, :]).reshape(mv, -1), dtype=dt)
        self.h_v = torch.as_tensor(h, dtype=dt)
        self.h_mean = self.h_v.mean(0)
        hc = h - h.mean(0)
        self.h_cov = torch.as_tensor(hc.T @ hc / mv, dtype=dt)
        self.ha, self.hb = torch.as_tensor(a), torch.as_tensor(b)
        self.h_off = torch.as_tensor((a != b).astype(np.float64), dtype=dt)

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
        if self.shape is not None:  # (λ, t₀, t_jk) of the moment-matched model (_covariate_law)
            lp = lp - 0.5 * (((mu - pr.moment_log_mean) / pr.moment_log_sd) ** 2).sum(-1)
            lp = lp - 0.5 * ((log_diag / pr.location_ratio_sd) ** 2).sum(-1)
            return lp - 0.5 * ((off / pr.correlation_ratio_sd) ** 2).sum(-1)
        lp = lp - 0.5 * ((mu / pr.cov_mean_sd) ** 2).sum(-1)
        lp = lp - 0.5 * (((log_diag - pr.cov_scale_log_mean) / pr.cov_scale_log_sd) ** 2).sum(-1)
        return lp - 0.5 * ((off / pr.cov_offdiag_sd) ** 2).sum(-1)

    def _covariate_law(self, lam: torch.Tensor, t0: torch.Tensor,
                       tk: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(μ, L) of the moment-matched model from its coordinates: row j of B̃ = [[1, 0], [μ, L]] is
        exp(λ_j) (t₀_j, t_j1, …, t_j,j-1, 1) / |(…)|, i.e. λ_j = ½ log E[u_j²], t₀_j = μ_j / L_jj,
        t_jk = L_jk / L_jj. The released second moment E[u_j²] is then one coordinate: for a binary
        feature (E[u_j²] = 1, no sampling variance) the posterior is a narrow ridge along an axis,
        not a curved one that optimisers and samplers cannot follow."""
        B, q = lam.shape[0], self.q
        T = torch.zeros(B, q, q, dtype=lam.dtype)
        if len(self.tril[0]):
            T[:, self.tril[0], self.tril[1]] = tk
        T = T + torch.eye(q, dtype=lam.dtype)
        norm = torch.sqrt(1 + t0**2 + (T**2).sum(-1) - 1)
        diag = torch.exp(lam) / norm
        return t0 * diag, T * diag[..., None]

    def _cholesky(self, log_diag: torch.Tensor, off: torch.Tensor) -> torch.Tensor:
        L = torch.diag_embed(torch.exp(log_diag))
        if len(self.tril[0]):
            L = L.clone()
            L[:, self.tril[0], self.tril[1]] = off
        return L

    def _linear_predictor(self, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(c, a): η = c + aᵀu with u = (x̃, õ) (the offset enters with its half-width, c its midpoint)."""
        B = theta.shape[0]
        c = theta[:, 0] if self.rel.intercept else torch.zeros(B, dtype=theta.dtype)
        beta = theta[:, int(self.rel.intercept):]
        a = beta if not self.rel.has_offset else torch.cat(
            [beta, torch.full((B, 1), self.off_half, dtype=theta.dtype)], dim=1
        )
        return c + self.off_mid, a

    def moments(self, psi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean (B, T) and covariance (B, T, T) of one record's weighted statistic."""
        if self.shape is not None:
            return self._moments_shape(psi)
        return self._moments_gaussian(psi)

    def _moments_shape(self, psi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Eqs. (2)–(3) of :mod:`dpinfer.inference.glm_covariates`: averages over the shape's points."""
        theta, log_s, lam, t0, tk = self.split(psi)
        B, q, dt = psi.shape[0], self.q, psi.dtype
        Q = q + 1
        mu, L = self._covariate_law(lam, t0, tk)
        c, a = self._linear_predictor(theta)
        Bt = torch.zeros(B, Q, Q, dtype=dt)
        Bt[:, 0, 0] = 1.0
        Bt[:, 1:, 0] = mu
        Bt[:, 1:, 1:] = L
        By = Bt[:, : self.D + 1]  # rows of (1, x̃)
        La = (L.transpose(-1, -2) @ a[..., None])[..., 0]  # (B, q)
        eta0 = c + (a * mu).sum(-1)
        eta_all = eta0[:, None] + La @ self.s_all[:, 1:].T  # (B, M)
        mv = self.s_v.shape[0]
        nu_all = self._nu(eta_all, log_s)
        nu1_all = nu_all[0]
        nu1, nu2, nu3, nu4 = (t[:, :mv] for t in nu_all)
        E1s_all = nu1_all @ self.s_all / self.s_all.shape[0]  # (B, Q)
        E1s = nu1 @ self.s_v / mv
        E2ss = (nu2 @ self.ss_v / mv).reshape(B, Q, Q)
        E1sh = (nu1 @ self.sh_v / mv).reshape(B, Q, -1)
        j, k = self.j, self.k
        ha, hb = self.ha, self.hb
        K = Bt[:, j][:, :, ha] * Bt[:, k][:, :, hb] + self.h_off * Bt[:, j][:, :, hb] * Bt[:, k][:, :, ha]
        m_y = (By @ E1s_all[..., None])[..., 0]
        m_x = K @ self.h_mean
        Vyy = By @ (E2ss - E1s[:, :, None] * E1s[:, None, :]) @ By.transpose(-1, -2)
        Vyx = By @ (E1sh - E1s[:, :, None] * self.h_mean[None, None, :]) @ K.transpose(-1, -2)
        Vxx = K @ self.h_cov @ K.transpose(-1, -2)
        top = torch.cat([Vyy, Vyx], dim=-1)
        bot = torch.cat([Vyx.transpose(-1, -2), Vxx], dim=-1)
        V = torch.cat([top, bot], dim=-2)
        parts = [m_y, m_x]
        if self.linear:
            E2 = nu2.mean(-1)
            parts.append(nu_all[1].mean(-1)[:, None])
            cy = (By @ (nu3 @ self.s_v / mv - E1s * E2[:, None])[..., None])[..., 0]
            cx = K @ ((nu2 @ self.h_v) / mv - E2[:, None] * self.h_mean)[..., None]
            col = torch.cat([cy, cx[..., 0]], dim=-1)
            var = nu4.mean(-1) - E2**2
            V = torch.cat([torch.cat([V, col[..., None]], -1),
                           torch.cat([col, var[:, None]], -1)[:, None, :]], -2)
        m = torch.cat(parts, dim=-1)
        w = self.w
        return m * w, V * w[:, None] * w[None, :]

    def _moments_gaussian(self, psi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The Gaussian covariate model u ~ N(μ, L Lᵀ) (Kulkarni et al. 2021): Gauss–Hermite over η
        and Isserlis' formulas (module docstring)."""
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
        if self.shape is not None:  # the plug-in moments at which the shape was fitted
            mu, L = self.shape.mean, self.shape.chol
            dg = np.diag(L)
            psi[i:i + self.q] = 0.5 * np.log(mu**2 + (L**2).sum(1))
            psi[i + self.q:i + 2 * self.q] = mu / dg
            psi[i + 2 * self.q:] = (L / dg[:, None])[self.tril]
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

    def neg_hessian(at: torch.Tensor) -> np.ndarray:
        # exact (automatic differentiation): the posterior of the covariate moments can be far
        # narrower than any fixed finite-difference step at a large n and ε
        H = torch.autograd.functional.hessian(lambda v: model.log_post(v[None])[0], at)
        return -0.5 * (H + H.T).numpy()

    def floored(Hn: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        vals, vecs = np.linalg.eigh(Hn)
        return np.maximum(vals, 1e-3), vecs  # a flat or non-convex direction: a wide proposal there

    # Newton steps from the L-BFGS point (its stopping rule is blind to very narrow directions)
    lp0 = float(model.log_post(mode[None])[0])
    for _ in range(20):
        vals, vecs = floored(neg_hessian(mode))
        _, g = _value_and_grad(model, mode[None])
        step = torch.as_tensor((vecs / vals) @ vecs.T @ g[0].numpy(), dtype=torch.float64)
        for _half in range(30):
            cand = mode + step
            lp1 = float(model.log_post(cand[None])[0])
            if math.isfinite(lp1) and lp1 >= lp0 - 1e-9:
                break
            step = step / 2
        else:
            break
        mode, done = cand, lp1 - lp0 < 1e-8
        lp0 = lp1
        if done:
            break
    vals, vecs = floored(neg_hessian(mode))
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


class _StudentT:
    """A multivariate t proposal by its Cholesky factor: unlike ``scipy.stats.multivariate_t`` it
    accepts the very ill-conditioned scales of a posterior whose nuisance directions are pinned by a
    large n at a large ε (covariances spanning more than 10⁹)."""

    def __init__(self, loc: np.ndarray, shape: np.ndarray, df: float) -> None:
        from scipy.special import gammaln

        d = len(loc)
        self.loc, self.df, self.d = loc, df, d
        sym = 0.5 * (shape + shape.T)
        self.A = np.linalg.cholesky(sym + 1e-14 * np.abs(np.diag(sym)).max() * np.eye(d))
        self.const = (gammaln((df + d) / 2) - gammaln(df / 2) - d / 2 * math.log(df * math.pi)
                      - np.log(np.diag(self.A)).sum())

    def rvs(self, size: int, rng: np.random.Generator) -> np.ndarray:
        z = rng.standard_normal((size, self.d))
        g = rng.chisquare(self.df, size) / self.df
        return self.loc + (z @ self.A.T) / np.sqrt(g)[:, None]

    def logpdf(self, X: np.ndarray) -> np.ndarray:
        from scipy.linalg import solve_triangular

        r = solve_triangular(self.A, (X - self.loc).T, lower=True)
        return self.const - (self.df + self.d) / 2 * np.log1p((r**2).sum(0) / self.df)


def _importance(model: _Model, mode: np.ndarray, cov: np.ndarray, opts: GLMSamplerOptions,
                rng: np.random.Generator) -> tuple[np.ndarray, dict[str, float]]:
    """Self-normalised importance sampling from t₅ proposals: the Laplace approximation, then
    ``opts.adapt`` rounds whose proposal matches the previous round's weighted mean and covariance
    (adaptive importance sampling, Cappé et al. 2004); the last round's weights are kept."""
    loc, shape = mode, 1.5 * cov
    info: dict[str, float] = {}
    for rnd in range(opts.adapt + 1):
        prop = _StudentT(loc, shape, 5.0)
        X = prop.rvs(opts.proposals, rng)
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
#: The call that resamples a posterior's own release with HMC (named by every sampler warning).
RESAMPLE_HMC = "post.resample(sampler=GLMSamplerOptions(method='hmc'))"


#: Posterior sd over the non-private sd (same model, no noise) from which the noise "dominates".
NOISE_DOMINATES = 10.0


class NoiseDominatesWarning(InferenceWarning):
    """The privacy noise, not the sampling variability, sets the width of a private GLM's intervals."""


def _nonprivate_sd(model: _Model, psi: np.ndarray) -> np.ndarray:
    """Posterior sd of the coefficients had the same records been analysed without privacy, by the
    GLM's Fisher information under the fitted covariate law at ``psi`` (the posterior mean):
    I = n E[ν₁'(η)² / Var(ỹ | η) r_y r_yᵀ] + prior precision, sd = √diag(I⁻¹). (For the linear
    family, the coefficients at the posterior mean of σ_y; ``log_sigma`` is not compared.)"""
    t = torch.as_tensor(psi[None], dtype=torch.float64)
    theta, log_s, p1, p2, p3 = model.split(t)
    if model.shape is not None:
        mu, L = model._covariate_law(p1, p2, p3)
        w = model.shape.w
    else:
        mu, L = p1, model._cholesky(p2, p3)
        w = np.random.default_rng(0).standard_normal((SHAPE_POINTS_COV, model.q))
    u = mu[0].numpy() + w @ L[0].numpy().T
    c, a = (v[0].numpy() for v in model._linear_predictor(theta))
    eta = c + u @ a
    fam = model.rel.family
    if fam == "logistic":
        g = 1 / (1 + np.exp(-eta))
        wt = g * (1 - g)
    elif fam == "probit":
        from scipy.special import ndtr

        P = np.clip(ndtr(eta), 1e-12, 1 - 1e-12)
        wt = np.exp(-eta**2) / (2 * np.pi) / (P * (1 - P))
    elif fam == "poisson":
        wt = np.exp(eta)
    else:
        wt = np.full_like(eta, float(np.exp(-2 * log_s[0]))) if log_s is not None else np.ones_like(eta)
    ry = np.concatenate([np.ones((len(u), 1)), u[:, : model.D]], axis=1)[:, int(not model.rel.intercept):]
    info = model.n * (ry * wt[:, None]).T @ ry / len(u)
    sd = np.full(model.p_theta, model.prior.coef_sd)
    if model.rel.intercept:
        sd[0] = model.prior.intercept_sd
    info = info + np.diag(1 / sd**2)
    return np.sqrt(np.diag(np.linalg.inv(info)))


# ---- the result ---------------------------------------------------------------------------------
class GLMPosterior(ResultFile):
    """The noise-aware posterior of a private GLM: draws of the coefficients (HMC chains, or one
    "chain" of importance-resampled draws).

    Results are **in the user's units** by default: ``mean()``, ``sd()``, ``interval(level)``,
    ``sample(n, seed)``, ``summary()``, ``to_arviz()`` and ``plot()`` give the coefficients of the
    features in their own units (intercept first, under the features' names; the linear family's
    response in its own units and its noise sd ``sigma`` last), comparable with a non-private fit
    (e.g. statsmodels) on the same columns. ``scale="scaled"`` gives the coefficients of the features
    scaled by their public bounds, ``x̃ = 2 (x - lower) / (upper - lower) - 1`` (and the linear
    family's ``log_sigma`` of the scaled response), the scale the model is fitted on; ``flat`` and
    ``draws`` hold those. :meth:`resample` samples the same release again (nothing charged).
    """

    def __init__(self, draws: np.ndarray, param_names: tuple[str, ...], release: GLMRelease,
                 privacy: PrivacyReport | None, diagnostics: dict[str, Any],
                 nuisance: np.ndarray | None = None, settings: dict[str, Any] | None = None) -> None:
        self.draws = np.asarray(draws, dtype=np.float64)  # (chains, n, dim), scaled units
        self.scaled_names = tuple(param_names)
        self.release = release
        self.privacy = privacy
        self.diagnostics = dict(diagnostics)
        self.nuisance = nuisance
        self.settings = dict(settings or {})

    @property
    def param_names(self) -> tuple[str, ...]:
        """The names in the user's units (``sigma`` where the scaled names have ``log_sigma``)."""
        return tuple("sigma" if n == "log_sigma" and i == len(self.scaled_names) - 1 else n
                     for i, n in enumerate(self.scaled_names))

    @property
    def flat(self) -> np.ndarray:
        """All kept draws in the scaled units, (draws, dim)."""
        return self.draws.reshape(-1, self.draws.shape[-1])

    def _flat(self, scale: str) -> np.ndarray:
        if scale == "original":
            return self.original_scale_draws()
        if scale == "scaled":
            return self.flat
        raise InvalidDataError(f"scale must be 'original' or 'scaled', got {scale!r}.")

    def names(self, scale: str = "original") -> tuple[str, ...]:
        """The parameter names at ``scale``."""
        self._flat_check(scale)
        return self.param_names if scale == "original" else self.scaled_names

    @staticmethod
    def _flat_check(scale: str) -> None:
        if scale not in ("original", "scaled"):
            raise InvalidDataError(f"scale must be 'original' or 'scaled', got {scale!r}.")

    def mean(self, scale: str = "original") -> np.ndarray:
        return self._flat(scale).mean(0)

    def sd(self, scale: str = "original") -> np.ndarray:
        return self._flat(scale).std(0, ddof=1)

    def interval(self, level: float = 0.95, scale: str = "original") -> np.ndarray:
        if not 0 < level < 1:
            raise InvalidDataError(f"level must be in (0, 1), got {level}.")
        return np.quantile(self._flat(scale), [0.5 - level / 2, 0.5 + level / 2], axis=0).T

    def sample(self, n: int, seed: Any = None, scale: str = "original") -> np.ndarray:
        flat = self._flat(scale)
        idx = as_generator(seed).integers(0, flat.shape[0], size=int(n))
        return flat[idx]

    def to_arviz(self, n_draws: int = 4000, seed: Any = 0, scale: str = "original") -> Any:
        """The chains (thinned evenly to about ``n_draws`` draws in all), under the names, in the
        user's units (``scale="scaled"``: the bound-scaled coefficients)."""
        self._flat_check(scale)
        C, N, dim = self.draws.shape
        per = max(1, min(N, int(n_draws) // C))
        idx = np.linspace(0, N - 1, per).round().astype(int)
        draws = self.draws[:, idx]
        if draws.shape[0] * draws.shape[1] != int(n_draws):  # fewer than one per chain: one chain
            draws = self.sample(int(n_draws), seed, scale="scaled")[None]
        if scale == "original":
            draws = self._to_original(draws.reshape(-1, dim)).reshape(draws.shape[0], draws.shape[1], -1)
        method = f"noise-aware GLM ({self.diagnostics.get('method')})"
        return draws_to_arviz(draws, self.names(scale), self.privacy, method=method,
                              family=self.release.family, scale=scale)

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

    def resample(self, *, sampler: GLMSamplerOptions | None = None, prior: GLMPrior | None = None,
                 covariates: str | None = None, seed: Any = None, warn: bool = True) -> GLMPosterior:
        """A new posterior of **the same release** (post-processing: nothing is released or charged).

        ``sampler`` defaults to HMC (``GLMSamplerOptions(method="hmc")``); ``prior`` and
        ``covariates`` default to this posterior's own (its settings). Use it when a sampler warning
        says so, or to try another prior or covariate model on the release already paid for.
        """
        st = self.settings or {}
        pr = prior if prior is not None else GLMPrior(**st.get("prior", {}))
        new = glm_posterior(self.release, prior=pr, sampler=sampler or GLMSamplerOptions(method="hmc"),
                            seed=seed, warn=warn,
                            covariates=covariates or st.get("covariates", "moment-matched"))
        if "target" in st:
            new.settings["target"] = st["target"]
        return new

    def original_scale_draws(self) -> np.ndarray:
        """Draws of the coefficients in the features' own units (intercept first, if any).

        β_j = θ_j · 2/(hi_j - lo_j) and intercept = θ_0 - Σ_j θ_j (hi_j + lo_j)/(hi_j - lo_j); the
        linear family's coefficients and σ are also multiplied by the response's half-width and its
        intercept shifted by the response's midpoint.
        """
        return self._to_original(self.flat)

    def _to_original(self, flat: np.ndarray) -> np.ndarray:
        rel = self.release
        th = flat[:, : rel.n_features + int(rel.intercept)].copy()
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
            sig = np.exp(flat[:, rel.n_features + i0]) * rel.y_scale
            res = np.concatenate([res, sig[:, None]], axis=1)
        return res

    def summary(self, scale: str = "original") -> str:
        """Mean, sd and 90% interval per parameter (in the user's units unless ``scale="scaled"``),
        the sampler's diagnostics and how much the privacy noise widens the intervals."""
        unit = ("coefficients in the features' own units" if scale == "original" else
                "coefficients of features scaled to [-1, 1] by their public bounds")
        lines = [f"noise-aware private GLM ({self.release.family}, n = {self.release.n}; {unit})"]
        if self.privacy is not None:
            lines.append(textwrap.indent(self.privacy.summary(), "  "))
        names = self.names(scale)
        mean, sd, ci = self.mean(scale), self.sd(scale), self.interval(0.9, scale)
        width = max(len(n) for n in names)
        lines.append(f"  {'':{width}}      mean        sd       5%      95%")
        for i, name in enumerate(names):
            lines.append(f"  {name:{width}}  {mean[i]:8.4g}  {sd[i]:8.4g} {ci[i, 0]:8.4g} {ci[i, 1]:8.4g}")
        dg = self.diagnostics
        if dg.get("method") == "hmc":
            rhat, acc = dg.get("max_rhat", float("nan")), dg.get("accept_rate", float("nan"))
            lines.append(f"  HMC: {self.draws.shape[0]} chains x {self.draws.shape[1]} draws, max R-hat "
                         f"{rhat:.3f}, acceptance {acc:.2f}")
            if dg.get("fallback"):
                lines.append(f"  (importance sampling failed its check: {dg['fallback'][5:-1]}; HMC "
                             "resampled "
                             "the same release, nothing more was charged)")
        else:
            lines.append(f"  Laplace-proposal importance sampling: ESS {dg.get('ess', float('nan')):.0f}, "
                         f"Pareto k-hat {dg.get('pareto_khat', float('nan')):.2f}")
        ratio = dg.get("privacy_width_ratio")
        if ratio:
            lo, hi = min(ratio), max(ratio)
            verdict = ("the privacy noise dominates" if hi >= NOISE_DOMINATES else
                       "the privacy noise is most of the width" if hi >= 2 else
                       "the sampling variability is most of the width")
            lines.append(f"  privacy: intervals {lo:.1f}-{hi:.1f}x the width without privacy (same records "
                         f"and model): {verdict}")
        lines.append(f"  covariate model: {self.settings.get('covariates', 'gaussian')}"
                     + ("" if scale == "scaled" else "; scaled coefficients: summary(scale='scaled')"))
        return "\n".join(lines)

    def _to_record(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        rel = self.release.to_dict()
        rel.pop("privacy")
        fields = {"release": rel, "diagnostics": self.diagnostics, "settings": self.settings,
                  "scaled_names": list(self.scaled_names)}
        arrays = {"draws": self.draws}
        if self.nuisance is not None:
            arrays["nuisance"] = self.nuisance
        return fields, arrays

    @classmethod
    def _from_record(cls, record: Record, **kwargs: Any) -> GLMPosterior:
        rel = GLMRelease.from_dict({**record.fields["release"], "privacy": None})
        rel = GLMRelease(**{**rel.__dict__, "privacy": record.privacy})
        names = tuple(record.fields.get("scaled_names") or record.param_names)  # older files: scaled names
        return cls(record.arrays["draws"], names, rel, record.privacy,
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
    if opts.fallback not in ("hmc", "none"):
        raise InvalidDataError(f"sampler fallback must be 'hmc' or 'none', got {opts.fallback!r}.")
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
    covariates: str = "moment-matched",
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
    if covariates not in COVARIATE_MODELS:
        raise InvalidDataError(f"covariates must be one of {COVARIATE_MODELS}, got {covariates!r}.")
    rng = as_generator(seed)
    model = _Model(release, prior, covariates)
    mode, cov = _laplace(model)
    k = model.p_theta + int(model.linear)
    diagnostics: dict[str, Any] = {"method": opts.method, "laplace_mode": mode[:k].tolist(),
                                   "laplace_sd": np.sqrt(np.diag(cov))[:k].tolist()}
    method = opts.method
    if method == "laplace-is":
        draws, info = _importance(model, mode, cov, opts, rng)
        diagnostics.update(info)
        problem = None
        if not info["pareto_khat"] <= 0.7:
            problem = (f"the importance weights' Pareto k-hat is {info['pareto_khat']:.2f} > 0.7 (the "
                       "Laplace "
                       "proposal misses the posterior's shape)")
        elif not info["ess"] >= MIN_IS_ESS:
            problem = (f"the importance weights' effective sample size is {info['ess']:.0f} of "
                       f"{opts.proposals} proposals (< {MIN_IS_ESS}: the draws repeat a few points)")
        if problem is not None and opts.fallback == "hmc":
            # post-processing of the same release: nothing is released or charged again
            diagnostics["fallback"] = f"hmc ({problem})"
            method = "hmc"
        elif problem is not None and warn:
            warnings.warn(
                f"private GLM: {problem}, so the means, sds and intervals are unreliable. Resample the same "
                f"release (nothing more is charged): {RESAMPLE_HMC}.",
                WeightDegeneracyWarning, stacklevel=2,
            )
    if method == "hmc":
        draws, info = _hmc(model, mode, cov, opts, rng)
        rhat = split_rhat(draws)
        diagnostics.update(info, rhat=rhat[:k].tolist(), max_rhat=float(np.max(rhat)), method="hmc")
    names = param_names(release)
    ratio = draws[..., : model.p_theta].reshape(-1, model.p_theta).std(0, ddof=1) / _nonprivate_sd(
        model, draws.reshape(-1, draws.shape[-1]).mean(0))
    diagnostics["privacy_width_ratio"] = ratio.tolist()
    if warn and np.max(ratio) >= NOISE_DOMINATES:
        worst = int(np.argmax(ratio))
        warnings.warn(
            f"private GLM: the release's noise dominates: the interval of {names[worst]!r} is "
            f"{ratio[worst]:.0f}x the width the same records would give without privacy (the others "
            f"{np.min(ratio):.0f}-{np.max(ratio):.0f}x). It is a correct posterior of a weak release, "
            "mostly its prior where the ratio is large; more records, a larger epsilon or tighter public "
            "bounds (which set the noise) narrow it.",
            NoiseDominatesWarning, stacklevel=2,
        )
    if warn and method == "hmc" and not diagnostics["max_rhat"] <= 1.01:
        warnings.warn(
            f"private GLM: split R-hat {diagnostics['max_rhat']:.3f} > 1.01: the HMC chains disagree. "
            "Resample the same release with more warm-up and draws (nothing more is charged): "
            "post.resample(sampler=GLMSamplerOptions(method='hmc', warmup=1000, draws=8000)).",
            ConvergenceWarning, stacklevel=2,
        )
    return GLMPosterior(draws[..., :k], names, release, release.privacy, diagnostics,
                        nuisance=draws[..., k:], settings={"prior": asdict(prior), "sampler": asdict(opts),
                                                  "covariates": covariates})


__all__ = ["COVARIATE_MODELS", "FAMILIES", "GLMPosterior", "GLMPrior", "GLMRelease", "GLMSamplerOptions",
           "NoiseDominatesWarning", "StatisticLayout", "check_posterior_options", "glm_posterior",
           "param_names", "split_rhat"]

