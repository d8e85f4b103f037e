"""The covariate model of the noise-aware private GLM: a bounded, moment-matched shape (pure maths).

Why a covariate model at all
----------------------------
The released statistic (:mod:`dpinfer.inference.glm`) holds Σ ỹ_i r_y,i and the second moments
Σ r_i r_iᵀ of r = (1, u), u = (x̃, õ) ∈ [-1, 1]^q. For a GLM with mean function ν₁(η) = E[ỹ | η]
the y block's expectation is

    E[Σ ỹ_i r_y,i] = n E_P[ν₁(c + aᵀu) r_y(u)],                                       (1)

a functional of the *whole* covariate law P, not of its first two moments only (ν₁ is not linear).
Whatever law the analyst assumes beyond the released moments enters θ through (1). A Gaussian
law (Kulkarni et al. 2021; ``covariates="gaussian"``) with the right mean and covariance makes
η = c + aᵀu Gaussian, while binary or one-hot features make it a few atoms and bounded or skewed
ones make it bounded and skewed: (1) is then biased by O(1) per record, i.e. by O(√n) posterior
sds of θ — the bias that grows with n.

The moment-matched shape (``covariates="moment-matched"``, the default)
----------------------------------------------------------------------
Every u_j lies in [-1, 1], so its variance is at most 1 − μ_j², with equality exactly when u_j sits
on its two bounds (a binary or one-hot indicator). The released first and second moments thus
already say how "binary" each feature is: ρ_j = Σ_jj / (1 − μ_j²) ∈ (0, 1]. The shape is

* marginals: u_j = 2 B_j − 1, B_j ~ Beta(α_j, β_j) with the released mean and variance, i.e.
  α_j + β_j = 1/ρ_j − 1, α_j = (1 + μ_j)/2 · (α_j + β_j); ρ_j → 1 is the two-point law on {−1, 1}
  (binary), ρ_j = 1/3 with μ_j = 0 the uniform, large α_j + β_j an almost Gaussian bump, unequal
  (α_j, β_j) a skewed law — all inside the bounds;
* dependence: a Gaussian copula, u_j = F_j⁻¹(Φ(ζ_j)), ζ ~ N(0, R), with R_jk chosen so that the
  Pearson correlation of (u_j, u_k) equals the released one (one latent ρ per pair of drivers, the
  least-squares fit on a grid to all their feature pairs, R projected onto the correlation
  matrices). For binary margins this is the dichotomised
  Gaussian;
* one-hot groups: binary features whose released moments say they are never 1 together,
  P(u_j = u_k = 1) = (1 + μ_j + μ_k + E[u_j u_k]) / 4 ≈ 0 (:func:`exclusive_groups`), are the
  indicators of one categorical variable, driven by a single copula coordinate (member i is 1 on
  its own slice of Φ(ζ_group)), so that at most one of them is 1 in every point.

The plug-in moments are the released first and second moments divided by n, projected to a valid
law (|μ_j| < 1, 0 < Σ_jj ≤ 1 − μ_j², R positive definite). The shape is represented by M scrambled
Sobol points u_k of the copula (quasi-Monte Carlo, a fixed public seed: no secret randomness, and
the posterior is a deterministic function of the release) with weights p_k, the closest to uniform
whose weighted first and second moments are the plug-in ones (entropy balancing,
:func:`balance_weights`; except where the law pins a moment: E[u_j²] = 1 of a binary feature,
E[u_j u_k] of two levels of one category), standardised to w_k = L̄⁻¹(u_k − ū) (ū, L̄ L̄ᵀ: their
weighted mean and covariance, so the w_k have weighted mean 0 and covariance I exactly). Every
average Ē below is the p-weighted one. (Moving unweighted points affinely onto the plug-in moments
instead mixes features: binary ones leave their bounds, and at ten features the CLT mean was
biased by several posterior sds.)

The latent covariate moments φ = (μ, L) stay parameters of the posterior (their uncertainty from
the privacy noise propagates into θ); the covariate law at φ is the affine image

    u_k(φ) = μ + L w_k,     r_k = B̃(φ) s_k,   s_k = (1, w_k),   B̃ = [[1, 0], [μ, L]],     (2)

which has mean μ and covariance L Lᵀ exactly and the fitted shape at φ = (ū, L̄). Every moment of
the per-record statistic t is then an average over the points of closed-form conditional moments:
with η_k = c + aᵀμ + (Lᵀa)ᵀ w_k, ν_m = E[ỹ^m | η_k] and h_k = vech(s_k s_kᵀ),

    m_y = B̃_y Ē[ν₁ s],      m_x = K(φ) Ē[h],      (m_{y²} = Ē[ν₂]),
    V_yy = B̃_y (Ē[ν₂ s sᵀ] − Ē[ν₁ s] Ē[ν₁ s]ᵀ) B̃_yᵀ,
    V_yx = B̃_y (Ē[ν₁ s hᵀ] − Ē[ν₁ s] Ē[h]ᵀ) K(φ)ᵀ,      V_xx = K(φ) Cov̄(h) K(φ)ᵀ,          (3)

(the linear family adds Cov(ỹ r_y, ỹ²) = B̃_y(Ē[ν₃ s] − Ē[ν₁ s]Ē[ν₂]), Cov(ỹ², x) =
K(Ē[ν₂ h] − Ē[ν₂]Ē[h]) and Var(ỹ²) = Ē[ν₄] − Ē[ν₂]²), where Ē is the average over the points,
B̃_y the rows of B̃ for (1, x̃), and K(φ) the linear map vech(s sᵀ) ↦ vech(r rᵀ)∖{1}:
K_{(jk),(ab)} = B̃_ja B̃_kb + B̃_jb B̃_ka (a < b), B̃_ja B̃_ka (a = b). V is the covariance of the
vector (ỹ B̃_y s, K h, ỹ²) under "a point drawn uniformly, then ỹ | η", hence positive
semi-definite for every (θ, φ). The means use all M points; the covariances the first M_V (a
balanced Sobol prefix): the CLT's covariance needs less accuracy than its mean, whose error is
multiplied by n.

What it assumes, and where it breaks: the law beyond the released moments is the Beta-margin
Gaussian copula. Exact for one binary feature (the mean fixes the law), and for independent binary
or uniform features up to the copula's pairwise structure; approximate for multi-modal continuous
features (a Beta has one mode) and for higher-order interactions among binary features that
pairwise moments cannot see. See ``examples/private_glm/README.md`` for the measured coverage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

#: Quasi-Monte Carlo points of the covariate shape (means) and the prefix used for covariances.
SHAPE_POINTS = 4096
SHAPE_POINTS_COV = 1024
_TWO_POINT = 1 - 1e-3  # ρ above this: the two-point law on {-1, 1}


@dataclass(frozen=True)
class CovariateShape:
    """The fitted covariate shape: standardised points ``w`` (M, q), mean 0 and covariance I, and the
    plug-in moments (``mean``, ``chol``): ``mean + chol @ w`` has exactly those moments."""

    w: np.ndarray
    mean: np.ndarray
    chol: np.ndarray
    binary: np.ndarray
    weights: np.ndarray


def plugin_moments(first: np.ndarray, second: np.ndarray,
                   floor: float = 1e-4) -> tuple[np.ndarray, np.ndarray]:
    """A valid (mean, covariance) of a law on [-1, 1]^q from noisy first moments (q,) and second
    moments (q, q): |μ_j| <= 0.98, floor <= Σ_jj <= 1 − μ_j², correlations in [-0.98, 0.98]."""
    mu = np.clip(first, -0.98, 0.98)
    S = 0.5 * (second + second.T) - np.outer(mu, mu)
    var = np.clip(np.diag(S), floor, 1 - mu**2)
    sd = np.sqrt(var)
    corr = np.clip(S / np.outer(sd, sd), -0.98, 0.98)
    np.fill_diagonal(corr, 1.0)
    return mu, nearest_correlation(corr) * np.outer(sd, sd)


def nearest_correlation(C: np.ndarray, floor: float = 1e-3) -> np.ndarray:
    """Eigenvalues clipped at ``floor``, then rescaled to a unit diagonal (a positive definite
    correlation matrix close to ``C``)."""
    vals, vecs = np.linalg.eigh(0.5 * (C + C.T))
    A = (vecs * np.maximum(vals, floor)) @ vecs.T
    d = np.sqrt(np.diag(A))
    return A / np.outer(d, d)


def _quantile_table(mu: float, var: float, grid: np.ndarray) -> tuple[np.ndarray, bool]:
    """F⁻¹ of the marginal on [-1, 1] with mean ``mu`` and variance ``var`` at probabilities ``grid``
    (module docstring: a Beta, or the two-point law when it is all but binary)."""
    rho = var / (1 - mu**2)
    if rho >= _TWO_POINT:
        return np.where(grid > (1 - mu) / 2, 1.0, -1.0), True
    tot = 1 / rho - 1
    a, b = (1 + mu) / 2 * tot, (1 - mu) / 2 * tot
    return 2 * special.betaincinv(a, b, grid) - 1, False


def exclusive_groups(mean: np.ndarray, cov: np.ndarray,
                     moment_sd: float = 0.0) -> tuple[list[int], dict[int, tuple[float, float]]]:
    """One-hot groups among the (nearly) binary features: j and k are exclusive when the released
    moments put P(u_j = 1, u_k = 1) = (1 + μ_j + μ_k + E[u_j u_k]) / 4 below a tenth of its value
    under independence, and independence is ruled out by more than three standard errors of the
    released moments (``moment_sd``: the privacy noise's sd on one moment divided by n; the
    estimate of P(both) has sd about √3 · moment_sd / 4). A group (greedy: exclusive with every
    member, total probability <= 1) is driven by one latent copula coordinate, its first member's:
    member i is 1 on its own slice of the driver's uniform, so at most one is 1 (the dichotomised
    Gaussian cannot do that for three or more levels). Returns each feature's driver and the
    members' slices."""
    q = len(mean)
    p = (1 + mean) / 2
    rho = np.diag(cov) / (1 - mean**2)
    second = cov + np.outer(mean, mean)
    driver = list(range(q))
    groups: list[list[int]] = []
    for j in range(q):
        if rho[j] < 0.97:
            continue
        for grp in groups:
            both = [(1 + mean[j] + mean[k] + second[j, k]) / 4 for k in grp]
            if all(b < 0.1 * p[j] * p[k] and p[j] * p[k] - b > 3 * 0.45 * moment_sd
                   for b, k in zip(both, grp, strict=True)) and \
                    p[grp].sum() + p[j] <= 1.02:
                grp.append(j)
                break
        else:
            groups.append([j])
    interval: dict[int, tuple[float, float]] = {}
    for grp in groups:
        if len(grp) < 2:
            continue
        scale = min(1.0, 1 / p[grp].sum())
        top = 1.0
        for j in grp:
            driver[j] = grp[0]
            interval[j] = (top - p[j] * scale, top)
            top -= p[j] * scale
    return driver, interval


def fit_shape(mean: np.ndarray, cov: np.ndarray, *, points: int = SHAPE_POINTS,
              seed: int = 0, moment_sd: float = 0.0) -> CovariateShape:
    """The moment-matched shape of a covariate law on [-1, 1]^q (module docstring).

    Parameters
    ----------
    mean, cov
        A valid mean and covariance (:func:`plugin_moments`).
    points
        Number of scrambled Sobol points (a power of two).
    seed
        The public seed of the scrambling (the same release gives the same shape).
    moment_sd
        The privacy noise's sd on one released moment (per record), for :func:`exclusive_groups`.
    """
    q = len(mean)
    sd = np.sqrt(np.diag(cov))
    target = cov / np.outer(sd, sd)
    grid = (np.arange(2048) + 0.5) / 2048
    tables, binary = [], []
    for j in range(q):
        tab, two = _quantile_table(float(mean[j]), float(cov[j, j]), grid)
        tables.append(tab)
        binary.append(two)
    driver, interval = exclusive_groups(mean, cov, moment_sd)
    for j in interval:
        binary[j] = True

    def quantile(j: int, p: np.ndarray) -> np.ndarray:
        if j in interval:  # a member of a one-hot group: 1 on its own slice of the driver's uniform
            lo, hi = interval[j]
            return np.where((p >= lo) & (p < hi), 1.0, -1.0)
        if binary[j]:
            return np.where(p > (1 - mean[j]) / 2, 1.0, -1.0)
        return np.interp(p, grid, tables[j])

    R = np.eye(q)
    if q > 1:
        # Pearson correlation of (u_j, u_k) as a function of the latent ρ of their drivers, on a
        # stratified grid; one latent ρ per pair of drivers, the least-squares fit to the targets of
        # all their feature pairs (a middle level of a one-hot group is not monotone in ρ: matching
        # one pair by inverting its curve put correlations of −0.46 where the target was 0)
        g = stats.norm.ppf((np.arange(96) + 0.5) / 96)
        z1, z2 = (a.ravel() for a in np.meshgrid(g, g, indexing="ij"))
        rhos = np.linspace(-0.99, 0.99, 67)
        zk = rhos[:, None] * z1 + np.sqrt(1 - rhos[:, None] ** 2) * z2  # (G, N)
        p1, pk = special.ndtr(z1), special.ndtr(zk)
        sse: dict[tuple[int, int], np.ndarray] = {}
        for j in range(q):
            xj = quantile(j, p1)
            xj = (xj - xj.mean()) / max(xj.std(), 1e-12)
            for k in range(q):
                dj, dk = driver[j], driver[k]
                if k == j or dj == dk or (k < j and driver[k] >= driver[j]) or dj > dk:
                    continue
                xk = quantile(k, pk)
                xk = (xk - xk.mean(1, keepdims=True)) / np.maximum(xk.std(1, keepdims=True), 1e-12)
                err = ((xj * xk).mean(1) - target[j, k]) ** 2
                sse[dj, dk] = sse.get((dj, dk), 0.0) + err
        for (dj, dk), e in sse.items():
            i = int(np.argmin(e))
            rho = rhos[i]
            if 0 < i < len(rhos) - 1:  # parabolic refinement between grid points
                den = e[i - 1] - 2 * e[i] + e[i + 1]
                if den > 0:
                    rho = rho + 0.5 * (e[i - 1] - e[i + 1]) / den * (rhos[1] - rhos[0])
            R[dj, dk] = R[dk, dj] = float(rho)
        R = nearest_correlation(R)
    sob = stats.qmc.Sobol(q, scramble=True, seed=seed).random(points)
    zeta = special.ndtri(np.clip(sob, 1e-12, 1 - 1e-12)) @ np.linalg.cholesky(R).T
    pz = special.ndtr(zeta)
    u = np.stack([quantile(j, pz[:, driver[j]]) for j in range(q)], axis=1)
    targets = [(j, k) for j in range(q) for k in range(j, q)
               if not (j == k and binary[j]) and not (j != k and j in interval and k in interval
                                                      and driver[j] == driver[k])]
    wts = balance_weights(u, mean, cov + np.outer(mean, mean), targets)
    ubar = wts @ u
    C = (u - ubar).T @ ((u - ubar) * wts[:, None]) + 1e-10 * np.eye(q)
    chol = np.linalg.cholesky(C)
    w = np.linalg.solve(chol, (u - ubar).T).T
    # the points' own (weighted) moments: mean + chol @ w are the points themselves, so binary and
    # one-hot features stay on their bounds at the plug-in φ (the plug-in moments, matched by the
    # weights, differ from them only where the law pins a moment: E[u_j²] = 1 of a binary feature,
    # E[u_j u_k] of two levels of one category)
    return CovariateShape(w=w, mean=ubar, chol=chol, binary=np.asarray(binary), weights=wts)


def balance_weights(u: np.ndarray, mean: np.ndarray, second: np.ndarray,
                    pairs: list[tuple[int, int]], ridge: float = 1e-9) -> np.ndarray:
    """Weights of the points ``u`` (M, q), closest to uniform in Kullback–Leibler divergence, whose
    weighted first moments are ``mean`` and weighted second moments E[u_j u_k] are ``second[j, k]``
    for the ``pairs`` (entropy balancing, Hainmueller 2012: w_k ∝ exp(λᵀ g(u_k)), λ by Newton on the
    convex dual with a tiny ridge, so a target outside the points' hull gives the nearest weights
    instead of a failure).

    Why: the copula's points carry quasi-Monte Carlo and copula-fit error in their moments (about
    0.005–0.01 in a correlation at ten features and 4096 points), larger than the noise of a
    released moment at a large n·ε. Matched by an affine map instead, that error mixes features:
    a binary feature moved off its two bounds, a one-hot level below −1, and a biased CLT mean
    (measured: posterior modes 5 sd off at D = 10, n = 5000, ε = 10).
    """
    M = len(u)
    cols = [u[:, j] - mean[j] for j in range(u.shape[1])]
    cols += [u[:, j] * u[:, k] - second[j, k] for j, k in pairs]
    G = np.stack(cols, axis=1)
    scale = np.maximum(G.std(0), 1e-12)
    G = G / scale
    lam = np.zeros(G.shape[1])
    eye = np.eye(G.shape[1])

    def dual(lm: np.ndarray) -> tuple[float, np.ndarray]:
        a = G @ lm
        top = a.max()
        e = np.exp(a - top)
        return float(top + np.log(e.sum()) + 0.5 * ridge * lm @ lm), e / e.sum()

    f, p = dual(lam)
    for _ in range(100):
        grad = p @ G + ridge * lam
        if np.abs(grad).max() < 1e-10:
            break
        Gc = G - p @ G
        H = Gc.T @ (Gc * p[:, None]) + ridge * eye
        step = np.linalg.solve(H + 1e-12 * np.trace(H) * eye, grad)
        t = 1.0
        for _half in range(40):
            f1, p1 = dual(lam - t * step)
            if f1 <= f - 1e-4 * t * grad @ step:
                break
            t /= 2
        else:
            break
        lam, f, p = lam - t * step, f1, p1
    if not np.all(np.isfinite(p)) or 1 / (p**2).sum() < 0.25 * M:  # degenerate: keep the QMC points
        return np.full(M, 1 / M)
    return p

__all__ = ["SHAPE_POINTS", "SHAPE_POINTS_COV", "CovariateShape", "balance_weights", "exclusive_groups",
           "fit_shape", "nearest_correlation", "plugin_moments"]
