"""Reference posteriors for privatised statistics: naive, confidential and data-augmentation MCMC.

* :func:`naive_posterior`: the noisy statistic plugged into the confidential (conjugate)
  posterior, as in the second rows of Xiong et al. (2025), Tables 2-4. It ignores the privacy
  noise (and clamping) and is wrong; it is shown for comparison.
* :func:`confidential_posterior`: the posterior given the confidential statistic (first rows of
  the tables; not available to a real analyst).
* :func:`da_mcmc_linreg`: the data-augmentation MCMC of Ju et al. (2022) for the linear
  regression model, the likelihood-based reference for ``p(β | s_dp)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numba
import numpy as np

from ...errors import InvalidDataError
from ...models.shipped.linreg import LinearRegression
from ...privacy.report import PrivacyReport
from ...results.format import Record, ResultFile


def naive_posterior(model: Any, observed: Any) -> Any:
    """The naive plug-in posterior of ``model`` at the observed private statistic."""
    if not hasattr(model, "naive_posterior"):
        raise InvalidDataError(f"{type(model).__name__} has no conjugate (naive) posterior.")
    return model.naive_posterior(observed)


def confidential_posterior(model: Any, s: Any) -> Any:
    """The posterior given the confidential statistic ``s`` (no privacy noise)."""
    if not hasattr(model, "confidential_posterior"):
        raise InvalidDataError(f"{type(model).__name__} has no confidential posterior.")
    return model.confidential_posterior(s)


@numba.njit(cache=True)
def _record_stats(x1: float, x2: float, y: float, clamp: float, out: np.ndarray) -> None:
    a = min(max(x1, -clamp), clamp) / clamp
    b = min(max(x2, -clamp), clamp) / clamp
    c = min(max(y, -clamp), clamp) / clamp
    out[0] = c
    out[1] = a * c
    out[2] = b * c
    out[3] = c * c
    out[4] = a
    out[5] = b
    out[6] = a * a
    out[7] = a * b
    out[8] = b * b


@numba.njit(cache=True)
def _gaussian_from_precision(A: np.ndarray, r: np.ndarray, z: np.ndarray) -> np.ndarray:
    """A draw of N(A⁻¹ r, A⁻¹) from standard normals ``z``, for a 3×3 positive-definite precision A.

    With the Cholesky factor A = L Lᵀ, β = L⁻ᵀ (L⁻¹ r + z): its mean is L⁻ᵀ L⁻¹ r = A⁻¹ r and its
    covariance L⁻ᵀ L⁻¹ = A⁻¹. Written out for 3×3, as the kernel's other steps are written as loops:
    numba's LAPACK bindings and array expressions made :func:`_da_mcmc_kernel` compile in 9.3 s of
    CPU, 2.7 s without them. Factoring A is also better conditioned than inverting A and
    factoring A⁻¹ (what the kernel did before; the same law, other draws for a seed).
    """
    l00 = np.sqrt(A[0, 0])
    l10 = A[1, 0] / l00
    l20 = A[2, 0] / l00
    l11 = np.sqrt(A[1, 1] - l10 * l10)
    l21 = (A[2, 1] - l20 * l10) / l11
    l22 = np.sqrt(A[2, 2] - l20 * l20 - l21 * l21)
    v0 = r[0] / l00  # L v = r (forward substitution)
    v1 = (r[1] - l10 * v0) / l11
    v2 = (r[2] - l20 * v0 - l21 * v1) / l22
    w0, w1, w2 = v0 + z[0], v1 + z[1], v2 + z[2]
    out = np.empty(3)
    out[2] = w2 / l22  # Lᵀ β = v + z (back substitution)
    out[1] = (w1 - l21 * out[2]) / l11
    out[0] = (w0 - l10 * out[1] - l20 * out[2]) / l00
    return out


@numba.njit(cache=True)
def _da_mcmc_kernel(
    sdp, x, y, beta, n_keep, burn_in, thin, scale, x_mean, sigma, prior_prec, prior_mean, clamp, seed
):
    np.random.seed(seed)  # noqa: NPY002 (numba-compiled: per-kernel seeded legacy stream)
    n = x.shape[0]
    t = np.empty((n, 9))
    for i in range(n):
        _record_stats(x[i, 0], x[i, 1], y[i], clamp, t[i])
    out = np.empty((n_keep, 3))
    tnew = np.empty(9)
    accepted = 0
    proposed = 0
    total = burn_in + n_keep * thin
    kept = 0
    for it in range(total):
        # 1. record-wise MH: propose (x*, y*) ~ p(x, y | β); accept with the privacy-density ratio
        ssum = np.zeros(9)
        for i in range(n):
            for j in range(9):
                ssum[j] += t[i, j]
        for i in range(n):
            a = x_mean[0] + np.random.standard_normal()  # noqa: NPY002 (numba-compiled: per-kernel seeded legacy stream)
            b = x_mean[1] + np.random.standard_normal()  # noqa: NPY002 (numba-compiled: per-kernel seeded legacy stream)
            c = beta[0] + beta[1] * a + beta[2] * b + sigma * np.random.standard_normal()  # noqa: NPY002 (numba-compiled: per-kernel seeded legacy stream)
            _record_stats(a, b, c, clamp, tnew)
            dlog = 0.0
            for j in range(9):
                old = ssum[j] / n
                new = (ssum[j] - t[i, j] + tnew[j]) / n
                dlog += abs(sdp[j] - old) - abs(sdp[j] - new)
            dlog /= scale
            proposed += 1
            if np.log(np.random.random()) < dlog:  # noqa: NPY002 (numba-compiled: per-kernel seeded legacy stream)
                accepted += 1
                for j in range(9):
                    ssum[j] += tnew[j] - t[i, j]
                    t[i, j] = tnew[j]
                x[i, 0] = a
                x[i, 1] = b
                y[i] = c
        # 2. Gibbs: β | x, y ~ N(A⁻¹ (Xᵀy/σ² + P m₀), A⁻¹), A = XᵀX/σ² + P, P = diag(prior_prec)
        # (unclamped data; m₀ the prior mean)
        A = np.zeros((3, 3))
        r = np.zeros(3)
        for i in range(n):
            row = (1.0, x[i, 0], x[i, 1])
            for p in range(3):
                r[p] += row[p] * y[i]
                for q in range(3):
                    A[p, q] += row[p] * row[q]
        s2 = sigma * sigma
        for p in range(3):
            r[p] /= s2
            for q in range(3):
                A[p, q] /= s2
        for p in range(3):
            A[p, p] += prior_prec[p]
            r[p] += prior_prec[p] * prior_mean[p]
        z = np.random.standard_normal(3)  # noqa: NPY002 (numba-compiled: per-kernel seeded legacy stream)
        beta = _gaussian_from_precision(A, r, z)
        if it >= burn_in and (it - burn_in) % thin == 0 and kept < n_keep:
            for p in range(3):
                out[kept, p] = beta[p]
            kept += 1
    return out, accepted / max(proposed, 1)


@dataclass
class DAMCMCResult(ResultFile):
    """Draws of ``β`` from data-augmentation MCMC, with the record-update acceptance rate.

    Follows the result contract (:class:`~dpinfer.results.format.PosteriorResult`):
    ``mean()``, ``sample(n, seed)``, ``param_names``, ``privacy`` (the report of the release it
    analyses) and ``save`` / ``load`` in the ``dpinfer.result`` format.
    """

    samples: np.ndarray
    record_acceptance: float
    param_names: tuple[str, ...]
    settings: dict[str, Any]
    privacy: PrivacyReport | None = None

    def mean(self) -> np.ndarray:
        """Posterior mean estimate (average of the draws)."""
        return self.samples.mean(axis=0)

    def sd(self) -> np.ndarray:
        """Posterior standard deviation estimate."""
        return self.samples.std(axis=0, ddof=1)

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        """``n`` draws resampled uniformly (with replacement) from the chain's draws."""
        idx = np.random.default_rng(seed).integers(0, self.samples.shape[0], int(n))
        return self.samples[idx]

    def _to_record(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        fields = {"record_acceptance": float(self.record_acceptance), "settings": self.settings}
        return fields, {"samples": np.asarray(self.samples, dtype=np.float64)}

    @classmethod
    def _from_record(cls, record: Record, **kwargs: Any) -> DAMCMCResult:
        return cls(
            samples=record.arrays["samples"],
            record_acceptance=float(record.fields["record_acceptance"]),
            param_names=record.param_names,
            settings=dict(record.fields["settings"]),
            privacy=record.privacy,
        )

    def interval(self, level: float = 0.95) -> np.ndarray:
        return np.quantile(self.samples, [0.5 - level / 2, 0.5 + level / 2], axis=0).T

    def ess(self) -> np.ndarray:
        """Effective sample size per coordinate (initial positive sequence of autocorrelations)."""
        x = self.samples - self.samples.mean(axis=0)
        n = x.shape[0]
        out = np.empty(x.shape[1])
        for k in range(x.shape[1]):
            f = np.fft.rfft(x[:, k], 2 * n)
            ac = np.fft.irfft(f * np.conj(f))[:n]
            ac /= ac[0]
            s = 0.0
            for lag in range(1, n - 1, 2):
                pair = ac[lag] + ac[lag + 1]
                if pair < 0:
                    break
                s += pair
            out[k] = n / (1 + 2 * s)
        return out


def da_mcmc_linreg(
    model: LinearRegression,
    observed: Any,
    n_samples: int = 5000,
    burn_in: int = 2000,
    thin: int = 5,
    seed: int = 0,
    init_beta: Any = None,
) -> DAMCMCResult:
    """Data-augmentation MCMC (Ju et al. 2022) for ``p(β | s_dp)`` in :class:`LinearRegression`.

    The state is ``(β, x_{1:n}, y_{1:n})``. Each sweep (i) updates every record by Metropolis-
    Hastings with the model ``p(x, y | β)`` as proposal, so the acceptance probability is the
    ratio of Laplace densities ``η(s_dp | s*)/η(s_dp | s)`` of the statistics of the clamped data
    (Ju et al. 2022, Algorithm 1), and (ii) draws ``β`` from its conjugate normal conditional
    given the unclamped data. The chain targets ``p(β, x, y | s_dp)`` exactly, so its β-marginal
    is the private-data posterior (clamping and noise included). Compiled with numba.

    Parameters
    ----------
    n_samples, burn_in, thin
        Kept draws, discarded sweeps, and sweeps between kept draws.
    init_beta
        Starting β (default: the prior mean); the records start from ``p(x, y | β)``.
    """
    if not isinstance(model, LinearRegression):
        raise InvalidDataError("da_mcmc_linreg needs a dpinfer.models.LinearRegression model.")
    sdp = model.check_observed(observed)
    for label, v in (("n_samples", n_samples), ("thin", thin)):
        if int(v) != v or v < 1:
            raise InvalidDataError(f"{label} must be a positive integer, got {v!r}.")
    if int(burn_in) != burn_in or burn_in < 0:
        raise InvalidDataError(f"burn_in must be a non-negative integer, got {burn_in!r}.")
    beta = np.zeros(3) if init_beta is None else np.asarray(init_beta, dtype=np.float64).reshape(3)
    rng = np.random.default_rng(seed)
    x, y = model.simulate_data(beta, rng)
    kernel_seed = int(rng.integers(0, 2**31 - 1))
    samples, acc = _da_mcmc_kernel(
        sdp,
        x.copy(),
        y.copy(),
        beta.copy(),
        int(n_samples),
        int(burn_in),
        int(thin),
        model.mechanism.scale,  # type: ignore[attr-defined]  # linear regression's Laplace mechanism
        model.x_mean.astype(np.float64),
        float(np.sqrt(model.noise_var)),
        np.broadcast_to(1.0 / np.asarray(model.prior_sd, dtype=np.float64) ** 2, (3,)).copy(),
        np.broadcast_to(np.asarray(getattr(model, "prior_mean", 0.0), dtype=np.float64), (3,)).copy(),
        model.clamp,
        kernel_seed,
    )
    settings = {"n_samples": int(n_samples), "burn_in": int(burn_in), "thin": int(thin), "seed": seed}
    return DAMCMCResult(samples, float(acc), tuple(model.param_names), settings, model.privacy_report())
