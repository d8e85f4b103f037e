"""The model of a private GLM release given θ and the covariate law: a batched log posterior.

The released sum is modelled by the central limit theorem, z | θ, φ ≈ N(n m, n V + σ² I)
(:mod:`dpinfer.inference.glm`); :class:`GLMModel` computes m, V and the log posterior in torch,
and :func:`nonprivate_sd` the coefficients' sd without privacy (Fisher information).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ...models.glm_release import GLMRelease
from ..glm_covariates import SHAPE_POINTS_COV, CovariateShape, fit_shape, plugin_moments
from .options import GLMPrior

_GH_NODES = 32


class GLMModel:
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
        pw = shape.weights[:mv] / shape.weights[:mv].sum()  # the points' weights (balanced moments)
        self.p_all = torch.as_tensor(shape.weights, dtype=dt)
        self.p_v = torch.as_tensor(pw, dtype=dt)
        self.s_all = torch.as_tensor(s, dtype=dt)
        self.s_v = torch.as_tensor(s[:mv], dtype=dt)
        self.ss_v = torch.as_tensor((s[:mv, :, None] * s[:mv, None, :]).reshape(mv, Q * Q), dtype=dt)
        self.sh_v = torch.as_tensor((s[:mv, :, None] * h[:, None, :]).reshape(mv, -1), dtype=dt)
        self.h_v = torch.as_tensor(h, dtype=dt)
        self.h_mean = self.p_v @ self.h_v  # the prefix's own: the covariances (3) stay PSD
        # the mean of the x block over *all* points, like the y block's: the prefix's second moments
        # differ from the plug-in ones by its QMC error, which the posterior of φ then absorbs and
        # carries into the y block (measured at D = 10, n = 5000, ε = 10 with the exact statistic:
        # coefficients 2.4 non-private sds off with the prefix, within 1 with all points)
        self.h_mean_all = torch.as_tensor(shape.weights @ (s[:, a] * s[:, b]), dtype=dt)
        hc = h - pw @ h
        self.h_cov = torch.as_tensor(hc.T @ (hc * pw[:, None]), dtype=dt)
        self.h_flat = torch.as_tensor(a * Q + b)
        self.h_half = torch.as_tensor(np.where(a == b, 0.5, 1.0), dtype=dt)

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
        pa, pv = self.p_all, self.p_v
        nu1_all = nu_all[0]
        nu1, nu2, nu3, nu4 = (t[:, :mv] * pv for t in nu_all)  # weighted: Σ_k p_k ν(η_k) (…)
        E1s_all = (nu1_all * pa) @ self.s_all  # (B, Q)
        E1s = nu1 @ self.s_v
        E2ss = (nu2 @ self.ss_v).reshape(B, Q, Q)
        E1sh = (nu1 @ self.sh_v).reshape(B, Q, -1)
        j, k = self.j, self.k
        # K_{(jk),(ab)} = B̃_ja B̃_kb + B̃_jb B̃_ka (a < b), B̃_ja B̃_ka (a = b): an outer product and
        # one gather of its flattened (a, b) entries (4 advanced-index gathers were 22% of the time)
        P = Bt[:, j][:, :, :, None] * Bt[:, k][:, :, None, :]  # (B, pairs, Q, Q)
        K = ((P + P.transpose(-1, -2)).reshape(B, len(j), Q * Q).index_select(-1, self.h_flat)
             * self.h_half)
        m_y = (By @ E1s_all[..., None])[..., 0]
        m_x = K @ self.h_mean_all
        Vyy = By @ (E2ss - E1s[:, :, None] * E1s[:, None, :]) @ By.transpose(-1, -2)
        Vyx = By @ (E1sh - E1s[:, :, None] * self.h_mean[None, None, :]) @ K.transpose(-1, -2)
        Vxx = K @ self.h_cov @ K.transpose(-1, -2)
        top = torch.cat([Vyy, Vyx], dim=-1)
        bot = torch.cat([Vyx.transpose(-1, -2), Vxx], dim=-1)
        V = torch.cat([top, bot], dim=-2)
        parts = [m_y, m_x]
        if self.linear:
            E2 = nu2.sum(-1)
            parts.append((nu_all[1] * pa).sum(-1)[:, None])
            cy = (By @ (nu3 @ self.s_v - E1s * E2[:, None])[..., None])[..., 0]
            cx = K @ ((nu2 @ self.h_v) - E2[:, None] * self.h_mean)[..., None]
            col = torch.cat([cy, cx[..., 0]], dim=-1)
            var = nu4.sum(-1) - E2**2
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



def nonprivate_sd(model: GLMModel, psi: np.ndarray) -> np.ndarray:
    """Posterior sd of the coefficients had the same records been analysed without privacy, by the
    GLM's Fisher information under the fitted covariate law at ``psi`` (the posterior mean):
    I = n E[ν₁'(η)² / Var(ỹ | η) r_y r_yᵀ] + prior precision, sd = √diag(I⁻¹). (For the linear
    family, the coefficients at the posterior mean of σ_y; ``log_sigma`` is not compared.)"""
    t = torch.as_tensor(psi[None], dtype=torch.float64)
    theta, log_s, p1, p2, p3 = model.split(t)
    if model.shape is not None:
        mu, L = model._covariate_law(p1, p2, p3)
        w, pw = model.shape.w, model.shape.weights
    else:
        mu, L = p1, model._cholesky(p2, p3)
        w = np.random.default_rng(0).standard_normal((SHAPE_POINTS_COV, model.q))
        pw = np.full(len(w), 1 / len(w))
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
    info = model.n * (ry * (wt * pw)[:, None]).T @ ry
    sd = np.full(model.p_theta, model.prior.coef_sd)
    if model.rel.intercept:
        sd[0] = model.prior.intercept_sd
    info = info + np.diag(1 / sd**2)
    return np.sqrt(np.diag(np.linalg.inv(info)))



__all__ = ["GLMModel", "nonprivate_sd"]
