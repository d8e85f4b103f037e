"""Weighted samples: the statistics of SMC-ABC populations and importance-sampling draws.

Part of the result contract (layer 0): both the releases that return a weighted population
(:mod:`dpinfer.release.private_smc`) and the post-processing samplers (:mod:`dpinfer.inference`)
use it, so neither has to import the other.

A weighted sample is ``(θ_i, w_i)``, ``i = 1..n``, with normalised weights ``Σ w_i = 1``. Its mean is
``Σ w_i θ_i``, its covariance ``Σ w_i (θ_i - m)(θ_i - m)ᵀ`` and its effective sample size Kish's
``1 / Σ w_i²``; quantiles invert the weighted ECDF interpolated at mid-points.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..sizes import check_allocation
from .format import ResultFile, draws_to_arviz

if TYPE_CHECKING:  # pragma: no cover
    from .synthetic import SyntheticData


def weighted_quantile(x: np.ndarray, w: np.ndarray, q: Any) -> np.ndarray:
    """Quantile(s) of ``x`` under normalised weights ``w`` (inverse of the weighted ECDF,
    interpolated at mid-points)."""
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    xs, ws = x[order], w[order] / w.sum()
    cum = np.cumsum(ws) - 0.5 * ws
    return np.interp(q, cum, xs)


def weighted_cov(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted covariance ``Σ w_i (x_i - m)(x_i - m)ᵀ`` with normalised weights."""
    w = w / w.sum()
    m = w @ x
    d = x - m
    return (d * w[:, None]).T @ d


def ess(w: np.ndarray) -> float:
    """Effective sample size ``1/Σ w²`` of normalised weights (Kish)."""
    w = np.asarray(w, dtype=np.float64)
    w = w / w.sum()
    return float(1.0 / np.sum(w**2))


def release_facts(model: Any) -> tuple[Any, dict[str, Any], tuple[str, ...]]:
    """The privacy report of the analysed release (None if the model has none), the model's
    description and the parameter names, as stored in a result."""
    try:
        privacy = model.privacy_report() if hasattr(model, "privacy_report") else None
    except Exception:  # noqa: BLE001 - a user model without a mechanism report
        privacy = None
    model_desc = model.describe() if hasattr(model, "describe") else {"model": type(model).__name__}
    names = tuple(getattr(model, "param_names", tuple(f"theta{i}" for i in range(model.prior.dim))))
    return privacy, model_desc, names


class WeightedSample(ResultFile):
    """Summaries of a weighted sample: ``particles`` (n, dim) with normalised ``weights`` (n,)."""

    particles: np.ndarray
    weights: np.ndarray
    param_names: tuple[str, ...]

    @property
    def ess(self) -> float:
        return ess(self.weights)

    def mean(self) -> np.ndarray:
        """``Σ w_i θ_i``."""
        return self.weights @ self.particles

    def cov(self) -> np.ndarray:
        return weighted_cov(self.particles, self.weights)

    def sd(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov()))

    def quantile(self, q: Any) -> np.ndarray:
        """Weighted marginal quantiles, shape ``(len(q), dim)``."""
        q = np.atleast_1d(q)
        w = self.weights
        return np.stack(
            [weighted_quantile(self.particles[:, i], w, q) for i in range(self.particles.shape[1])], axis=1
        )

    def interval(self, level: float = 0.95) -> np.ndarray:
        """Equal-tailed marginal credible intervals, shape ``(dim, 2)``."""
        return self.quantile([0.5 - level / 2, 0.5 + level / 2]).T

    def sample(self, n: int, seed: Any = 0) -> np.ndarray:
        """Equal-weight draws by multinomial resampling of the particles (keep ``n`` below the ESS)."""
        rng = np.random.default_rng(seed)
        w = self.weights
        check_allocation(f"sample({n})", n, self.particles.shape[1])
        return self.particles[rng.choice(w.size, size=int(n), p=w)]

    def synthesize(self, n: int, model: Any, seed: Any = None) -> SyntheticData:
        """``n`` synthetic records from the posterior predictive: θ from this posterior, data from
        the model (:func:`dpinfer.models.synthesis.synthesize_from`). Post-processing of the
        release: no further privacy cost; the result's ``privacy_report()`` says so.
        ``model`` is the model the posterior was computed for."""
        from ..models.synthesis import synthesize_from  # the one allowed upward edge of this module

        return synthesize_from(self, n, seed, model)
    def summary_lines(self) -> list[str]:
        """One line per parameter: weighted mean and 95% interval."""
        mean, ci = self.mean(), self.interval()
        return [
            f"  {name:>12s}: {mean[i]: .4f}  95% CI ({ci[i, 0]: .4f}, {ci[i, 1]: .4f})"
            for i, name in enumerate(self.param_names)
        ]

    def to_arviz(self, n_draws: int | None = None, seed: Any = 0) -> Any:
        """An ``arviz.InferenceData`` (:func:`weighted_to_arviz`): ``n_draws`` equal-weight draws
        (multinomial resampling; default one per particle) as :data:`RESAMPLE_CHAINS` chains of
        independent resamples under the parameter names, the weighted particles and their weights
        as ``constant_data``, the observed release as ``observed_data`` and the analysed release's
        privacy report and the weights' ESS on the ``posterior`` group.

        arviz is optional and imported here.
        """
        return weighted_to_arviz(self, n_draws or self.weights.size, seed,
                                 observed=getattr(self, "observed", None))


#: chains the resampled draws of a weighted sample are split into in ``to_arviz``
RESAMPLE_CHAINS = 4


def weighted_to_arviz(result: Any, n_draws: int, seed: Any = 0, observed: Any = None, **attrs: Any) -> Any:
    """``arviz.InferenceData`` of a weighted particle set ``result`` (``particles``, ``weights``,
    ``param_names``, ``privacy``) that does not pretend to be MCMC.

    The draws are independent multinomial resamples (the same as ``result.sample(n_draws, seed)``)
    split into :data:`RESAMPLE_CHAINS` chains (the most chains up to it that divide ``n_draws``,
    so there are exactly ``n_draws``), so ArviZ's R-hat is defined (≈ 1: the chains are
    exchangeable by construction; it diagnoses nothing about the particle set), where one chain
    gave NaN. ArviZ's ``ess_bulk`` counts the resamples (≈ ``n_draws``) and overstates the
    information in the particles: their Monte Carlo error is that of the weights' Kish ESS,
    recorded as ``attrs["weights_ess"]`` with the PSIS ``k̂`` of the weights
    (``attrs["pareto_khat"]``, :func:`dpinfer.diagnostics.sampling.pareto_khat`) and
    ``attrs["representation"]`` saying what the draws are.

    Groups besides ``posterior``: ``sample_stats.particle`` (the particle each draw resamples);
    ``constant_data`` with the particles, their normalised ``weights`` and, where the method has
    them, the unnormalised ``log_weights`` (importance sampling) and the per-particle
    ``log_likelihood`` estimates ``log L̂(θ_i)`` (importance sampling, tempered SMC); a
    ``log_likelihood`` group with ``s_dp`` = ``log L̂`` of each draw's particle (an estimate from the
    method's inner simulations, not an exact density); and ``observed_data``. ε, δ, the mechanism
    and ``attrs`` (e.g. the method) are on ``posterior``.
    """
    import xarray as xr

    from ..diagnostics.sampling import pareto_khat

    n = max(int(n_draws), 1)
    chains = max(c for c in range(1, RESAMPLE_CHAINS + 1) if n % c == 0)  # exactly n draws in all
    per_chain = n // chains
    inner = getattr(result, "result", result)  # an InferenceResult wraps the method's own result
    w = np.asarray(result.weights, dtype=np.float64)
    particles = np.asarray(result.particles, dtype=np.float64)
    check_allocation(f"to_arviz({n})", n, particles.shape[1])
    idx = np.random.default_rng(seed).choice(w.size, size=chains * per_chain, p=w)  # as sample()
    names = tuple(result.param_names)
    log_w = getattr(inner, "log_weights", None)
    with np.errstate(divide="ignore"):
        khat = pareto_khat(np.log(w) if log_w is None else log_w)
    idata = draws_to_arviz(
        particles[idx].reshape(chains, per_chain, len(names)), names, getattr(result, "privacy", None),
        weights_ess=float(ess(w)), pareto_khat=khat,
        representation=(f"{chains} chains of independent multinomial resamples of "
                        f"{w.size} weighted particles, not MCMC: ArviZ's "
                        "ess_bulk counts resamples; the particles' Monte Carlo error is that of weights_ess"),
        **attrs,
    )
    idata.add_groups(sample_stats=xr.Dataset(
        {"particle": (("chain", "draw"), idx.reshape(chains, per_chain))},
        coords={"chain": np.arange(chains), "draw": np.arange(per_chain)}))
    extra: dict[str, np.ndarray] = {}
    if log_w is not None:
        extra["log_weights"] = np.asarray(log_w, dtype=np.float64)
    ll = getattr(inner, "log_likelihood", None)
    if isinstance(ll, np.ndarray) and ll.shape == w.shape:
        extra["log_likelihood"] = np.asarray(ll, dtype=np.float64)
        idata.add_groups(log_likelihood=xr.Dataset(
            {"s_dp": (("chain", "draw"), extra["log_likelihood"][idx].reshape(chains, per_chain))},
            coords={"chain": np.arange(chains), "draw": np.arange(per_chain)}))
    add_weighted_groups(idata, particles, w, names, observed, **extra)
    return idata


def add_weighted_groups(
    idata: Any, particles: np.ndarray, weights: np.ndarray, names: Any, observed: Any = None,
    **per_particle: np.ndarray,
) -> None:
    """Add the weighted particles (``constant_data``: ``particles``, ``weights`` and any
    ``per_particle`` arrays, e.g. ``log_weights``) and the observed release (``observed_data``)
    to an ``arviz.InferenceData`` in place."""
    import xarray as xr

    coords = {"particle": np.arange(weights.size), "parameter": list(names)}
    data = {"particles": (("particle", "parameter"), np.asarray(particles)),
            "weights": (("particle",), np.asarray(weights))}
    data.update({k: (("particle",), np.asarray(v)) for k, v in per_particle.items()})
    idata.add_groups(constant_data=xr.Dataset(data, coords=coords))
    if observed is not None:
        obs = np.atleast_1d(np.asarray(observed, dtype=np.float64))
        idata.add_groups(observed_data=xr.Dataset({"s_dp": (("statistic",), obs)}))


__all__ = [
    "RESAMPLE_CHAINS", "WeightedSample", "add_weighted_groups", "ess", "release_facts", "weighted_cov",
    "weighted_quantile", "weighted_to_arviz",
]
