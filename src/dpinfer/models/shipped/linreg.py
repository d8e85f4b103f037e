"""Bayesian linear regression from Laplace-privatised sufficient statistics (Ju et al. 2022 set-up).

Model (Xiong et al. 2025, §4.2 and App. E.2; known noise variance)::

    β ~ N(prior_mean, prior_sd²·I₃),   x_i ~ N(x_mean, I₂),
    y_i = β₀ + β₁x_i1 + β₂x_i2 + e_i,  e_i ~ N(0, σ²),

with σ² = 2, n = 100, x_mean = (0.9, -1.17). Before release every x_ij and y_i is clamped to
[-clamp, clamp] and rescaled to [-1, 1] (``v/clamp``). The confidential summary is the mean-scale
vector of the nine sufficient statistics

    s = (1/n)·[Σy, Σx₁y, Σx₂y, Σy², Σx₁, Σx₂, Σx₁², Σx₁x₂, Σx₂²]

and the release adds i.i.d. Laplace(Δ/ε) noise to every coordinate.

Sensitivity and neighbouring relation
-------------------------------------
Neighbouring data sets **replace one record** (n fixed). One record's contribution to ``n·s`` has
six coordinates in [-1, 1] (y, x₁y, x₂y, x₁, x₂, x₁x₂: range 2 each) and three in [0, 1] (the
squares: range 1 each), so replacing it moves ``s`` by at most ``(6·2 + 3·1)/n = 15/n`` in L1
(for p predictors ``(p² + 4p + 3)/n``). This direct bound is the default
(``sensitivity="replace-one"``). Ju et al. (2022) and Xiong et al. (2025) use
``(p² + 3p + 3)/n = 13/n`` (``sensitivity="paper"``, to reproduce their noise scale). The ranges
cannot all be attained by one pair of records: a numerical maximisation of
``||t(a) - t(b)||₁`` over pairs of records in [-1, 1]³ gives 9.375 (at a = (x₁, x₂, y) =
(0.25, 0.25, -0.25), b = (-1, -1, 1)), so both 13/n and 15/n are valid (conservative) replace-one
bounds; 15/n is the one that follows from the coordinate ranges alone.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from ...errors import InvalidDataError
from ...privacy.mechanisms.base import LaplaceMechanism
from ...privacy.validation import check_epsilon
from ...randomness import as_generator
from ..contract import PrivateDataModel
from ..posteriors import GaussianPosterior
from ..priors import GaussianPrior
from .streams import standard_normal_draw, stream_seeds

STAT_NAMES = (
    "mean(y)",
    "mean(x1*y)",
    "mean(x2*y)",
    "mean(y^2)",
    "mean(x1)",
    "mean(x2)",
    "mean(x1^2)",
    "mean(x1*x2)",
    "mean(x2^2)",
)
# lower/upper bounds of the rescaled per-record contributions (squares are non-negative)
_STAT_LO = np.array([-1, -1, -1, 0, -1, -1, 0, -1, 0], dtype=np.float64)
_STAT_HI = np.ones(9)
# the statistics as products z_i z_j of z = (x1, x2, y, 1)/clamp (index 3: the constant 1)
_MONO_I = np.array([2, 0, 1, 2, 0, 1, 0, 0, 1])
_MONO_J = np.array([3, 2, 2, 2, 3, 3, 0, 1, 1])


def record_statistics(x: np.ndarray, y: np.ndarray, clamp: float) -> np.ndarray:
    """Per-record contributions ``t(x, y)`` (shape ``(..., 9)``) of clamped, rescaled data."""
    xs = np.clip(x, -clamp, clamp) / clamp
    ys = np.clip(y, -clamp, clamp) / clamp
    x1, x2 = xs[..., 0], xs[..., 1]
    return np.stack([ys, x1 * ys, x2 * ys, ys * ys, x1, x2, x1 * x1, x1 * x2, x2 * x2], axis=-1)


@numba.njit(parallel=True, cache=True)
def _simulate_batch(theta, seeds, n, m0, m1, sigma, clamp):
    """Mean-scale statistics of n simulated records per β row (same model as ``simulate_data``)."""
    out = np.empty((theta.shape[0], 9))
    for i in numba.prange(theta.shape[0]):
        state = seeds[i].copy()
        acc = np.zeros(9)
        b0, b1, b2 = theta[i, 0], theta[i, 1], theta[i, 2]
        for _ in range(n):
            x1 = m0 + standard_normal_draw(state)
            x2 = m1 + standard_normal_draw(state)
            y = b0 + b1 * x1 + b2 * x2 + sigma * standard_normal_draw(state)
            a = min(max(x1, -clamp), clamp) / clamp
            b = min(max(x2, -clamp), clamp) / clamp
            c = min(max(y, -clamp), clamp) / clamp
            acc[0] += c
            acc[1] += a * c
            acc[2] += b * c
            acc[3] += c * c
            acc[4] += a
            acc[5] += b
            acc[6] += a * a
            acc[7] += a * b
            acc[8] += b * b
        for k in range(9):
            out[i, k] = acc[k] / n
    return out


def _coefficients(label: str, value: Any) -> np.ndarray:
    """One finite number per coefficient (β₀, β₁, β₂) from a number or three numbers."""
    try:
        arr = np.broadcast_to(np.asarray(value, dtype=np.float64), (3,)).copy()
    except (TypeError, ValueError):
        raise InvalidDataError(
            f"{label} must be a number or 3 numbers (beta0, beta1, beta2), got {value!r}."
        ) from None
    if not np.all(np.isfinite(arr)):
        raise InvalidDataError(f"{label} must be finite, got {value!r}.")
    return arr


class LinearRegression(PrivateDataModel):
    """Linear regression with privatised sufficient statistics (2 predictors + intercept).

    Parameters
    ----------
    n
        Number of records.
    epsilon
        Privacy level of the Laplace release.
    sensitivity
        ``"replace-one"`` (default, the direct bound 15/n) or ``"paper"`` (13/n, Ju et al. 2022 and
        Xiong et al. 2025; reproduces their noise scale, see the module docstring), or a number
        (the L1 sensitivity of the mean-scale statistic).
    clamp
        Records are clamped to [-clamp, clamp] and divided by ``clamp``.
    noise_var
        Known residual variance σ².
    x_mean
        Mean of the (unit-variance, independent) predictors.
    prior_sd, prior_mean
        β ~ N(prior_mean, prior_sd² I) (``prior_mean``: one number for every coefficient, or
        three; ``prior_sd``: one number or three).
    """

    name = "linear-regression"
    param_names = ("beta0", "beta1", "beta2")

    def __init__(
        self,
        n: int = 100,
        epsilon: float = 1.0,
        sensitivity: str | float = "replace-one",
        clamp: float = 10.0,
        noise_var: float = 2.0,
        x_mean: tuple[float, float] = (0.9, -1.17),
        prior_sd: Any = 1.0,
        prior_mean: Any = 0.0,
    ) -> None:
        if int(n) != n or n < 2:
            raise InvalidDataError(f"n must be an integer >= 2, got {n!r}.")
        self.n = int(n)
        self.epsilon = check_epsilon(epsilon)
        if sensitivity == "replace-one":
            sens = 15.0 / self.n
        elif sensitivity == "paper":
            sens = 13.0 / self.n
        elif isinstance(sensitivity, (int, float)) and sensitivity > 0:
            sens = float(sensitivity)
        else:
            raise InvalidDataError(
                f"sensitivity must be 'replace-one', 'paper' or a positive number, got {sensitivity!r}."
            )
        self.sensitivity_rule = sensitivity
        for label, v in (("clamp", clamp), ("noise_var", noise_var)):
            if not (np.isfinite(v) and v > 0):
                raise InvalidDataError(f"{label} must be positive and finite, got {v!r}.")
        m0 = _coefficients("prior_mean", prior_mean)
        sd0 = _coefficients("prior_sd", prior_sd)
        if not np.all(sd0 > 0):
            raise InvalidDataError(f"prior_sd must be positive, got {prior_sd!r}.")
        self.clamp = float(clamp)
        self.noise_var = float(noise_var)
        self.x_mean = np.asarray(x_mean, dtype=np.float64)
        self.prior_mean = m0
        self.prior_sd = sd0
        self.prior = GaussianPrior(m0, sd0**2)
        self.mechanism = LaplaceMechanism(9, sens, self.epsilon, "replace-one", bounds=(_STAT_LO, _STAT_HI))

    # -- data and statistics --------------------------------------------------------------------
    def simulate_data(self, beta: Any, seed: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """One confidential data set ``(x (n, 2), y (n,))`` at ``beta``."""
        gen = as_generator(seed)
        beta = np.asarray(beta, dtype=np.float64).reshape(3)
        x = self.x_mean + gen.standard_normal((self.n, 2))
        y = beta[0] + x @ beta[1:] + np.sqrt(self.noise_var) * gen.standard_normal(self.n)
        return x, y

    def record_columns(self) -> tuple[str, ...]:
        """One synthetic record is one row ``(x1, x2, y)`` (dpinfer.models.record_synthesis)."""
        return ("x1", "x2", "y")

    def simulate_records(self, theta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One row per row of θ: x ~ N(x_mean, I₂) (the model's declared public law of the
        covariates), y = β₀ + xᵀβ₁:₃ + N(0, noise_var); shape (B, 3)."""
        x = self.x_mean + rng.standard_normal((theta.shape[0], 2))
        y = theta[:, 0] + np.einsum("ij,ij->i", x, theta[:, 1:3])
        y = y + np.sqrt(self.noise_var) * rng.standard_normal(theta.shape[0])
        return np.column_stack([x, y])

    def statistic(self, x: Any, y: Any) -> np.ndarray:
        """The confidential mean-scale statistic of a data set (clamped and rescaled)."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if x.shape != (self.n, 2) or y.shape != (self.n,):
            raise InvalidDataError(f"expected x of shape ({self.n}, 2) and y of shape ({self.n},).")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            raise InvalidDataError("x and y must be finite.")
        return record_statistics(x, y, self.clamp).mean(axis=0)

    def simulate_confidential(self, theta: np.ndarray, seed: Any = None) -> np.ndarray:
        """Confidential statistics for each β row (compiled, parallel, one random stream per row)."""
        theta = self.prior.check_theta(theta)
        seeds = stream_seeds(as_generator(seed), theta.shape[0])
        return _simulate_batch(
            np.ascontiguousarray(theta),
            seeds,
            self.n,
            float(self.x_mean[0]),
            float(self.x_mean[1]),
            float(np.sqrt(self.noise_var)),
            self.clamp,
        )

    # -- conjugate posteriors -------------------------------------------------------------------
    def gram_from_statistic(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(XᵀX, Xᵀy)`` on the original scale implied by a mean-scale statistic (design [1, x])."""
        s = np.asarray(s, dtype=np.float64).reshape(9)
        n, c = self.n, self.clamp
        xtx = np.array(
            [
                [n, c * n * s[4], c * n * s[5]],
                [c * n * s[4], c**2 * n * s[6], c**2 * n * s[7]],
                [c * n * s[5], c**2 * n * s[7], c**2 * n * s[8]],
            ]
        )
        xty = np.array([c * n * s[0], c**2 * n * s[1], c**2 * n * s[2]])
        return xtx, xty

    def conjugate_posterior(self, s: Any) -> GaussianPosterior:
        """``p(β | s)`` treating ``s`` as the unclamped, noise-free statistic (normal-normal).

        With the confidential ``s`` this is the paper's "confidential posterior given s"; with
        ``s_dp`` it is the naive plug-in posterior. If the implied XᵀX is not positive
        definite the posterior is undefined (``valid=False``), as in the paper's Tables 3-4.
        """
        xtx, xty = self.gram_from_statistic(s)
        eig = np.linalg.eigvalsh(xtx)
        if eig.min() <= 0:
            return GaussianPosterior.invalid(
                3,
                f"the implied X'X is not positive definite (smallest eigenvalue {eig.min():.3g})",
                self.param_names,
            )
        prior_prec = 1.0 / self.prior_sd**2
        prec = xtx / self.noise_var + np.diag(prior_prec)
        cov = np.linalg.inv(prec)
        cov = 0.5 * (cov + cov.T)
        return GaussianPosterior(
            cov @ (xty / self.noise_var + prior_prec * self.prior_mean), cov, self.param_names
        )

    def naive_posterior(self, observed: Any) -> GaussianPosterior:
        """Plug ``s_dp`` into the conjugate posterior (ignores noise and clamping)."""
        return self.conjugate_posterior(self.check_observed(observed))

    def confidential_posterior(self, s: Any) -> GaussianPosterior:
        """The conjugate posterior given the confidential (clamped) statistic ``s``."""
        s = self.mechanism.check_statistic(s)
        return self.conjugate_posterior(s)

    # -- Gibbs-SS (Bernstein & Sheldon 2019; dpinfer.inference.exact.gibbs_ss) ----------------
    def gibbs_ss_moments(self, beta: Any) -> tuple[np.ndarray, np.ndarray]:
        """Mean and covariance of one record's contribution ``t(x, y)`` to ``s``, *unclamped*.

        ``z = (x₁, x₂, y)/clamp`` is Gaussian with mean ``m`` and covariance ``C``; the nine
        statistics are its monomials of degree 1 and 2, whose moments follow from Isserlis'
        theorem: ``E[z_i z_j] = C_ij + m_i m_j``, ``Cov(z_i, z_k z_l) = m_k C_il + m_l C_ik``,
        ``Cov(z_i z_j, z_k z_l) = C_ik C_jl + C_il C_jk + m_i m_k C_jl + m_i m_l C_jk + m_j m_k C_il
        + m_j m_l C_ik``. Clamping is ignored (as in Bernstein & Sheldon's Gibbs-SS).
        """
        b = np.asarray(beta, dtype=np.float64).reshape(3)
        m = np.array([self.x_mean[0], self.x_mean[1], b[0] + b[1:] @ self.x_mean]) / self.clamp
        c = np.empty((3, 3))
        c[:2, :2] = np.eye(2)
        c[:2, 2] = c[2, :2] = b[1:]
        c[2, 2] = b[1:] @ b[1:] + self.noise_var
        c /= self.clamp**2
        # a constant 1 as a fourth coordinate (mean 1, variance 0) makes every statistic a product
        # z_i z_j, so one vectorised Isserlis formula covers degrees 1 and 2
        m4 = np.append(m, 1.0)
        c4 = np.zeros((4, 4))
        c4[:3, :3] = c
        i, j = _MONO_I, _MONO_J
        mean = c4[i, j] + m4[i] * m4[j]
        cii, cjj, cij, cji = c4[np.ix_(i, i)], c4[np.ix_(j, j)], c4[np.ix_(i, j)], c4[np.ix_(j, i)]
        mi, mj = m4[i], m4[j]
        cov = (
            cii * cjj
            + cij * cji
            + np.outer(mi, mi) * cjj
            + np.outer(mi, mj) * cji
            + np.outer(mj, mi) * cij
            + np.outer(mj, mj) * cii
        )
        return mean, cov

    def gibbs_ss_draw_theta(self, s: Any, rng: np.random.Generator) -> np.ndarray | None:
        """One draw of the conjugate ``p(β | s)`` (None if the implied XᵀX is not positive definite)."""
        post = self.conjugate_posterior(s)
        if not post.valid:
            return None
        chol = np.linalg.cholesky(post.cov)
        return np.asarray(post.mean + chol @ rng.standard_normal(3))

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(
            n=self.n,
            epsilon=self.epsilon,
            sensitivity=self.mechanism.sensitivity,
            sensitivity_rule=str(self.sensitivity_rule),
            clamp=self.clamp,
            noise_var=self.noise_var,
        )
        return d
