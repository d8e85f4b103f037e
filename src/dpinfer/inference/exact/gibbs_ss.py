"""Gibbs-SS: Gibbs sampling over the sufficient statistics (Bernstein & Sheldon 2018, 2019).

For an exponential-family model whose confidential statistic ``s`` is the mean of ``n`` per-record
sufficient statistics ``t(x_i)``, released as ``s_dp = s + w`` with Laplace or Gaussian ``w``,
Bernstein & Sheldon (2018, "Differentially private Bayesian inference for exponential families",
NeurIPS; 2019, "Differentially private Bayesian linear regression", NeurIPS) sample
``p(θ, s, ω | s_dp)`` by Gibbs with three blocks:

1. ``θ | s``: the conjugate posterior given ``s`` as if it were the confidential statistic;
2. ``s | θ, ω, s_dp``: Gaussian, from the central-limit approximation of the statistic,
   ``s | θ ≈ N(μ(θ), Σ(θ)/n)`` with ``μ``, ``Σ`` the mean and covariance of one record's
   ``t(x)``, times the Gaussian noise ``w_j ~ N(0, ω_j²)``::

       K = (Σ/n)(Σ/n + diag ω²)⁻¹,   s | · ~ N(μ + K (s_dp - μ), (I - K) Σ/n);          (1)

3. ``ω | s, s_dp`` (Laplace only): Laplace(b) is the scale mixture ``N(0, ω²)``,
   ``ω² ~ Exp(rate 1/(2b²))``, whose conditional is inverse Gaussian in the precision::

       1/ω_j² | · ~ InverseGaussian(mean 1/(b |s_dp,j - s_j|), shape 1/b²).                (2)

For a Gaussian release ``ω`` is the published σ and step 3 is skipped.

What it approximates. The chain's stationary law is not the exact private-data posterior: (i) the
statistic's law is replaced by its normal approximation (exact as ``n → ∞``); (ii) the models'
moments ``μ(θ)``, ``Σ(θ)`` ignore clamping (the shipped linear regression clamps every value to
``[-clamp, clamp]`` before release; Bernstein & Sheldon's model has bounded data instead);
(iii) the conditional ``θ | s`` treats a normal draw of ``s`` as a valid statistic (an update whose
implied statistic is not valid, e.g. a non-positive-definite ``XᵀX``, keeps the previous θ and is
counted in ``diagnostics["invalid_theta_updates"]``). It is a baseline (Xiong et al. 2025, Tables
2-4), not a reference: :func:`~dpinfer.inference.exact.baselines.da_mcmc_linreg` and
:func:`~dpinfer.inference.mechanism_importance_sampling` target the exact posterior.

Where it applies: a model that provides ``n``, ``gibbs_ss_moments(theta) -> (μ, Σ)`` (per record)
and ``gibbs_ss_draw_theta(s, rng) -> θ or None`` (a conjugate draw, None if ``s`` is not a valid
statistic), with a Laplace or Gaussian mechanism (continuous noise; discrete noise is treated as
continuous). The shipped :class:`~dpinfer.models.LinearRegression` and
:class:`~dpinfer.models.shipped.naive_bayes.NaiveBayes` do. Models whose statistic is not a mean
of per-record sufficient statistics (SIR, tuberculosis, ABC distances) have no Gibbs-SS.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import InvalidDataError
from ...privacy.report import PrivacyReport
from ...results.format import Record, ResultFile
from ...results.weighted import release_facts


def release_noise(mech: Any, dim: int) -> tuple[str, np.ndarray]:
    """``("laplace", b)`` or ``("gaussian", σ)`` per coordinate, from a mechanism's attributes."""
    name = str(getattr(mech, "name", "")).lower()
    if "laplace" in name and hasattr(mech, "scale"):
        kind, value = "laplace", mech.scale
    elif "gaussian" in name and (hasattr(mech, "sigma") or hasattr(mech, "scale")):
        kind, value = "gaussian", getattr(mech, "sigma", None)
        value = mech.scale if value is None else value
    else:
        raise InvalidDataError(
            f"Gibbs-SS needs a Laplace or Gaussian release of the sufficient statistics; the mechanism "
            f"{getattr(mech, 'name', type(mech).__name__)!r} is neither. Use mechanism_importance_sampling "
            "or tempered_smc, which need only the mechanism's density."
        )
    arr = np.broadcast_to(np.asarray(value, dtype=np.float64), (dim,)).copy()
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise InvalidDataError(f"the release's noise scale must be positive and finite, got {arr.tolist()}.")
    return kind, arr


def _gaussian_draw(mean: np.ndarray, cov: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A draw of ``N(mean, cov)`` for a symmetric positive semi-definite ``cov`` (eigenvalues >= 0)."""
    vals, vecs = np.linalg.eigh(0.5 * (cov + cov.T))
    return np.asarray(mean + vecs @ (np.sqrt(np.clip(vals, 0.0, None)) * rng.standard_normal(mean.size)))


@dataclass
class GibbsSSResult(ResultFile):
    """Draws of θ from the Gibbs-SS chain, with its settings and diagnostics.

    Follows the result contract: ``mean()``, ``sd()``, ``interval()``, ``sample(n, seed)``,
    ``param_names``, ``privacy`` and ``save`` / ``load``.
    """

    samples: np.ndarray
    param_names: tuple[str, ...]
    settings: dict[str, Any]
    diagnostics: dict[str, Any] = field(default_factory=dict)
    privacy: PrivacyReport | None = None

    def mean(self) -> np.ndarray:
        return np.asarray(self.samples.mean(axis=0))

    def sd(self) -> np.ndarray:
        return np.asarray(self.samples.std(axis=0, ddof=1))

    def interval(self, level: float = 0.95) -> np.ndarray:
        return np.asarray(np.quantile(self.samples, [0.5 - level / 2, 0.5 + level / 2], axis=0).T)

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        """``n`` draws resampled uniformly (with replacement) from the chain's draws."""
        idx = np.random.default_rng(seed).integers(0, self.samples.shape[0], int(n))
        return np.asarray(self.samples[idx])

    def _to_record(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {"settings": self.settings, "diagnostics": self.diagnostics}, {
            "samples": np.asarray(self.samples, dtype=np.float64)
        }

    @classmethod
    def _from_record(cls, record: Record, **kwargs: Any) -> GibbsSSResult:
        return cls(
            samples=record.arrays["samples"],
            param_names=record.param_names,
            settings=dict(record.fields["settings"]),
            diagnostics=dict(record.fields.get("diagnostics", {})),
            privacy=record.privacy,
        )


def gibbs_ss(
    model: Any,
    observed: Any,
    *,
    n_samples: int = 4000,
    burn_in: int = 1000,
    thin: int = 5,
    seed: int | None = 0,
    init: Any = None,
) -> GibbsSSResult:
    """Gibbs-SS (module docstring, equations (1)-(2)) for a model that provides its moments.

    Parameters
    ----------
    model
        A private-data model with ``n``, ``gibbs_ss_moments`` and ``gibbs_ss_draw_theta``
        (the shipped linear regression and naive Bayes) and a Laplace or Gaussian mechanism.
    observed
        The released statistic ``s_dp``.
    n_samples, burn_in, thin
        Kept draws, discarded sweeps, sweeps between kept draws.
    seed
        Seeds the chain (public randomness only: no release is drawn).
    init
        Starting θ (default: one prior draw).

    Returns
    -------
    GibbsSSResult
    """
    for attr in ("gibbs_ss_moments", "gibbs_ss_draw_theta", "n"):
        if not hasattr(model, attr):
            raise InvalidDataError(
                f"Gibbs-SS needs a model whose statistic is a mean of per-record sufficient statistics, "
                f"with n, gibbs_ss_moments(theta) and gibbs_ss_draw_theta(s, rng); {type(model).__name__} "
                f"has no {attr}. Use mechanism_importance_sampling or tempered_smc."
            )
    sdp = model.check_observed(observed)
    for label, v, lo in (("n_samples", n_samples, 1), ("thin", thin, 1), ("burn_in", burn_in, 0)):
        if isinstance(v, bool) or int(v) != v or v < lo:
            raise InvalidDataError(f"{label} must be an integer >= {lo}, got {v!r}.")
    kind, scale = release_noise(model.mechanism, sdp.size)
    n = int(model.n)
    rng = np.random.default_rng(seed)
    theta = (
        np.asarray(model.prior.sample(1, rng), dtype=np.float64).reshape(-1)
        if init is None
        else np.asarray(init, dtype=np.float64).reshape(-1)
    )
    noise_var = 2.0 * scale**2 if kind == "laplace" else scale**2  # ω² start: the noise variance
    out = np.empty((int(n_samples), theta.size))
    invalid = kept = 0
    t0 = time.perf_counter()
    for it in range(int(burn_in) + int(n_samples) * int(thin)):
        # 2. s | θ, ω, s_dp  (equation (1))
        mu, sigma = model.gibbs_ss_moments(theta)
        cov_n = np.asarray(sigma, dtype=np.float64) / n
        gain = np.linalg.solve(cov_n + np.diag(noise_var), cov_n).T  # (Σ/n)(Σ/n + D)⁻¹
        s = _gaussian_draw(mu + gain @ (sdp - mu), cov_n - gain @ cov_n, rng)
        # 3. ω | s, s_dp  (equation (2))
        if kind == "laplace":
            resid = np.maximum(np.abs(sdp - s), 1e-300)
            noise_var = 1.0 / rng.wald(1.0 / (scale * resid), 1.0 / scale**2)
        # 1. θ | s (conjugate)
        new = model.gibbs_ss_draw_theta(s, rng)
        if new is None:
            invalid += 1
        else:
            theta = np.asarray(new, dtype=np.float64).reshape(-1)
        if it >= burn_in and (it - burn_in) % thin == 0 and kept < n_samples:
            out[kept] = theta
            kept += 1
    privacy, _, names = release_facts(model)
    settings = {
        "n_samples": int(n_samples),
        "burn_in": int(burn_in),
        "thin": int(thin),
        "seed": seed,
        "noise": kind,
    }
    sweeps = int(burn_in) + int(n_samples) * int(thin)
    diagnostics = {
        "invalid_theta_updates": invalid,
        "invalid_fraction": invalid / sweeps,
        "wall_time": time.perf_counter() - t0,
    }
    return GibbsSSResult(out, names, settings, diagnostics, privacy)


__all__ = ["GibbsSSResult", "gibbs_ss", "release_noise"]
