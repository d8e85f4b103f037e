"""SPLE as a maximum-likelihood estimator (Xiong, Ju & Zhang 2025, §3.2 and §5).

SPLE learns a synthetic likelihood ``q_φ(s_dp | θ) ≈ p(s_dp | θ) = ∫ η(s_dp | s) p(s | θ) ds``
(the privatised data's likelihood, mechanism included). Besides the Bayesian posterior
``∝ q_φ(s_obs | θ)·p(θ)``, the paper notes that the same flow gives a frequentist estimate:

    θ̂ = argmax_θ log q_φ(s_obs | θ),     Î = -∇²_θ log q_φ(s_obs | θ̂),     se_j = sqrt((Î⁻¹)_jj)

(the maximum-likelihood estimate over the prior's support and its observed-information standard
errors, the usual Wald approximation; the prior only fixes the parameter space and the starts).

How it is computed (:func:`sple_mle`):

* the flow is copied to float64 on the CPU, so gradients and the Hessian are not limited by
  float32 round-off;
* the search runs in the unconstrained space ``z = T⁻¹(θ)`` of the prior's bijection
  (:mod:`dpinfer.models.transforms`; identity for a prior on all of R^d), so every iterate is in
  the support. The MLE is invariant to the reparametrisation; the gradient is
  ``∂/∂z = J_T(z)ᵀ ∇_θ`` with ``∇_θ`` by torch autograd and ``J_T`` by central differences;
* quasi-Newton BFGS (scipy; ``|z| ≤ 30`` so that the logistic map cannot saturate) from several
  starts: random prior draws, the most likely of a larger screen of prior draws, and the most
  likely stored posterior draw of the SPLE run; the best end point is the estimate;
* the observed information is the Hessian of ``-log q_φ(s_obs | θ)`` in θ at θ̂ (torch autograd,
  float64). A run that BFGS ends on a line-search failure counts as converged when the Newton
  decrement ``gᵀ Î⁻¹ g`` is below 1e-6 or no step of 1e-3 standard errors raises ``log q``: at
  strong privacy noise the flow learns a Laplace-like density whose peak moves with θ, so the
  learned likelihood can have a kink at its maximum (Gaussian mean, ε = 0.1: every start ended
  within 1e-4 of θ̂ = 0.7286 with a gradient of 0.005; ``examples/private_data/sple_mle.py``).

Caveats, reported as warnings (:class:`~dpinfer.errors.InferenceWarning` subclasses) and in the
result: the learned likelihood is only trained where the rounds simulated (around the posterior
after sequential rounds), so an estimate far outside the stored posterior draws is an
extrapolation of the flow; an estimate at a bound of the support has no Wald standard error;
starts that end at different local maxima are counted in ``n_distinct_optima``.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from scipy.optimize import minimize

from ...errors import (
    ConvergenceWarning,
    InferenceWarning,
    InvalidDataError,
    ObservedOutsideSimulationsWarning,
    PriorBoundaryWarning,
)
from .param_space import ParamSpace
from .training import torch_threads

#: the unconstrained search stays in |z| <= Z_BOUND (logistic maps are exact to ~1e-13 there)
Z_BOUND = 30.0


@dataclass(frozen=True)
class MLEOptions:
    """Settings of :func:`sple_mle`.

    Attributes
    ----------
    starts
        Random prior draws used as starting points (besides the best of the screen and of the
        stored posterior draws).
    screen
        Prior draws whose likelihood is evaluated to pick one more start (the most likely one).
    max_iter
        BFGS iterations per start.
    gtol
        BFGS gradient tolerance (largest component, in the unconstrained space).
    seed
        Seed of the prior draws (public randomness only).
    extrapolation_sd
        Warn when θ̂ lies more than this many posterior sds from the stored posterior draws' mean
        in some coordinate (the flow is then evaluated where it was hardly trained).
    """

    starts: int = 8
    screen: int = 500
    max_iter: int = 500
    gtol: float = 1e-7
    seed: int | None = 0
    extrapolation_sd: float = 5.0

    def __post_init__(self) -> None:
        for name in ("starts", "screen", "max_iter"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < (0 if name == "screen" else 1):
                raise InvalidDataError(f"MLEOptions.{name} must be a positive integer, got {v!r}.")
        if not (self.gtol > 0 and self.extrapolation_sd > 0):
            raise InvalidDataError("MLEOptions.gtol and extrapolation_sd must be positive.")


@dataclass
class MLEResult:
    """The maximum of SPLE's learned likelihood and its observed-information standard errors.

    Attributes
    ----------
    theta
        θ̂, shape (d,).
    se
        Wald standard errors ``sqrt(diag(Î⁻¹))`` (NaN where Î is not positive definite or θ̂ is at
        a bound).
    cov
        ``Î⁻¹`` (NaN when Î is not positive definite).
    information
        The observed information ``Î = -∇²_θ log q_φ(s_obs | θ̂)``.
    log_likelihood
        ``log q_φ(s_obs | θ̂)``.
    starts
        One dict per start: ``start``, ``theta``, ``log_likelihood``, ``converged``, ``iterations``
        (the best start: ``newton_decrement`` and ``local_maximum_check`` when scipy's own test
        failed).
    n_distinct_optima
        How many distinct end points (more than 0.01 standard errors apart in some coordinate)
        the starts reached.
    warnings
        The messages warned about.
    """

    theta: np.ndarray
    se: np.ndarray
    cov: np.ndarray
    information: np.ndarray
    log_likelihood: float
    param_names: tuple[str, ...]
    starts: list[dict[str, Any]] = field(default_factory=list)
    n_distinct_optima: int = 1
    warnings: list[str] = field(default_factory=list)

    def interval(self, level: float = 0.95) -> np.ndarray:
        """Wald intervals ``θ̂ ± z·se``, shape (d, 2)."""
        from scipy.stats import norm

        z = float(norm.ppf(0.5 + level / 2))
        return np.column_stack([self.theta - z * self.se, self.theta + z * self.se])

    def summary(self) -> str:
        lo_hi = self.interval()
        lines = [f"SPLE maximum likelihood (log q = {self.log_likelihood:.4f})"]
        for i, name in enumerate(self.param_names):
            lines.append(
                f"  {name:>12s}: {self.theta[i]: .4f}  se {self.se[i]:.4f}  "
                f"95% Wald ({lo_hi[i, 0]: .4f}, {lo_hi[i, 1]: .4f})"
            )
        return "\n".join(lines)


class _Likelihood:
    """``log q_φ(s_obs | θ)`` in float64 on the CPU, with its θ-gradient and Hessian."""

    def __init__(self, flow: Any, observed: np.ndarray) -> None:
        flow64 = copy.deepcopy(flow).to(device="cpu", dtype=torch.float64)
        flow64.eval()
        for p in flow64.parameters():
            p.requires_grad_(False)
        self.flow = flow64
        self.x = torch.as_tensor(np.asarray(observed, dtype=np.float64).reshape(1, -1))

    def values(self, theta: np.ndarray) -> np.ndarray:
        th = torch.as_tensor(np.atleast_2d(theta), dtype=torch.float64)
        with torch.no_grad():
            return self.flow.log_prob(self.x.expand(th.shape[0], -1), th).numpy().astype(np.float64)

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        th = torch.as_tensor(np.asarray(theta, dtype=np.float64).reshape(1, -1)).requires_grad_(True)
        lp = self.flow.log_prob(self.x, th).sum()
        (g,) = torch.autograd.grad(lp, th)
        return float(lp.detach()), g.reshape(-1).numpy()

    def hessian(self, theta: np.ndarray) -> np.ndarray:
        th = torch.as_tensor(np.asarray(theta, dtype=np.float64).reshape(-1))

        def f(t: torch.Tensor) -> torch.Tensor:
            return self.flow.log_prob(self.x, t.reshape(1, -1)).sum()

        h = torch.autograd.functional.hessian(f, th)
        return np.asarray(h.detach().numpy(), dtype=np.float64)


def _jacobian(space: ParamSpace, z: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """``∂θ/∂z`` at ``z`` by central differences (identity when the space is inactive)."""
    d = z.size
    if not space.active:
        return np.eye(d)
    eye = np.eye(d) * step
    plus = space.to_theta(z[None, :] + eye)
    minus = space.to_theta(z[None, :] - eye)
    return ((plus - minus) / (2 * step)).T  # J[i, j] = ∂θ_i/∂z_j


def _bfgs(objective: Any, z0: np.ndarray, space: ParamSpace, opts: MLEOptions) -> dict[str, Any]:
    """Minimise ``objective(z) -> (value, gradient)`` by BFGS (scipy, Wolfe line search) from
    ``z0``; with an active bijection ``z`` is clipped to ``|z| <= Z_BOUND`` (the gradient of a
    clipped coordinate pointing outwards is zeroed, so the search stops at the bound)."""
    lim = Z_BOUND if space.active else np.inf

    def fun(raw: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = objective(np.clip(raw, -lim, lim))
        return f, np.where((raw >= lim) & (g < 0) | (raw <= -lim) & (g > 0), 0.0, g)

    with warnings.catch_warnings():  # "precision loss" at a flat optimum: judged below instead
        warnings.simplefilter("ignore", RuntimeWarning)
        res = minimize(fun, np.clip(z0, -lim, lim), jac=True, method="BFGS",
                       options={"maxiter": opts.max_iter, "gtol": opts.gtol})
    zf = np.clip(np.asarray(res.x, dtype=np.float64), -lim, lim)
    f, g = fun(zf)
    # converged: scipy's test, or a gradient at round-off level (a flat float64 optimum)
    converged = bool(res.success or np.max(np.abs(g), initial=0.0) <= max(opts.gtol, 1e-5))
    return {
        "theta": space.to_theta(zf[None, :])[0],
        "log_likelihood": float(-f),
        "converged": converged,
        "iterations": int(res.nit),
        "z": zf,
    }


def _best(values: np.ndarray) -> int:
    return int(np.argmax(np.where(np.isfinite(values), values, -np.inf)))


def sple_mle(posterior: Any, *, x: Any = None, options: MLEOptions | None = None) -> MLEResult:
    """Maximise SPLE's learned likelihood ``log q_φ(s_obs | θ)`` over the prior's support.

    Parameters
    ----------
    posterior
        A fitted :class:`~dpinfer.inference.neural.sple.SPLEPosterior` (or any object with its
        ``flow``, ``prior``, ``observed``, ``param_names`` and optional ``draws``).
    x
        Another observed release (default: the one the posterior was fitted to).
    options
        :class:`MLEOptions`.

    Returns
    -------
    MLEResult
        θ̂, the observed information and Wald standard errors (module docstring).
    """
    opts = options or MLEOptions()
    observed = _check_posterior(posterior, x)
    prior = posterior.prior
    names = tuple(posterior.param_names)
    d = len(names)
    space = ParamSpace(prior, "auto")
    like = _Likelihood(posterior.flow, observed)
    rng = np.random.default_rng(opts.seed)

    draws = getattr(posterior, "draws", None)
    starts = _starts(prior, opts, rng, like, draws, d)

    def objective(z: np.ndarray) -> tuple[float, np.ndarray]:
        theta = space.to_theta(z[None, :])[0]
        val, g = like.value_and_grad(theta)
        if not np.isfinite(val):
            return 1e300, np.zeros(d)
        return -val, -(_jacobian(space, z).T @ g)

    runs: list[dict[str, Any]] = []
    with torch_threads(1):  # a handful of parameters: more threads only contend
        for label, th0 in starts:
            runs.append({"start": label, **_bfgs(objective, space.to_z(th0[None, :])[0], space, opts)})
    best = max(runs, key=lambda r: r["log_likelihood"])
    theta_hat = best["theta"]
    found: list[tuple[type[InferenceWarning], str]] = []

    info = -like.hessian(theta_hat)
    at_bound = bool(space.active and np.any(np.abs(best["z"]) >= Z_BOUND - 1e-6))
    lo, hi = (np.asarray(b, dtype=np.float64) for b in getattr(prior, "support", (np.full(d, -np.inf),) * 2))
    at_bound = at_bound or bool(np.any(np.isclose(theta_hat, lo) | np.isclose(theta_hat, hi)))
    chol_ok, cov, se = _wald(info, d, found)
    # BFGS may stop on a line-search failure at an optimum (the spline flow is only C¹): accept
    # the end point when the Newton decrement gᵀ Î⁻¹ g (twice the log-likelihood a Newton step
    # would still gain) is below 1e-6, i.e. θ̂ is within about 1e-3 standard errors of the maximum
    # or when no coordinate step of 1e-3 standard errors raises log q: the learned likelihood may
    # have a kink at its maximum (a Laplace-like flow density whose peak moves with θ), where the
    # gradient never vanishes
    if not best["converged"] and chol_ok and not at_bound:
        g = like.value_and_grad(theta_hat)[1]
        best["newton_decrement"] = float(g @ cov @ g)
        steps = np.concatenate([np.diag(1e-3 * se), np.diag(-1e-3 * se)])
        local_max = bool(np.all(like.values(theta_hat[None, :] + steps) <= best["log_likelihood"]))
        best["converged"] = best["newton_decrement"] < 1e-6 or local_max
        best["local_maximum_check"] = local_max
    if not best["converged"]:
        found.append((ConvergenceWarning,
                      f"BFGS did not converge from the best start ({best['iterations']} iterations; the "
                      "gradient is not negligible against the curvature): the estimate may not be a "
                      "maximum; raise MLEOptions.max_iter or check the likelihood for kinks."))
    if at_bound:
        se = np.full(d, np.nan)
        found.append((PriorBoundaryWarning,
                      "the maximum lies at a bound of the prior's support: the Wald standard error does "
                      "not apply there (set to NaN); the likelihood increases towards the bound."))

    reps = _distinct_optima(runs, se)
    if draws is not None and len(draws) > 1:
        found += _extrapolation(draws, theta_hat, names, opts.extrapolation_sd)
    for cat, msg in found:
        warnings.warn(msg, cat, stacklevel=2)
    return MLEResult(
        theta=theta_hat,
        se=se,
        cov=cov,
        information=info,
        log_likelihood=float(best["log_likelihood"]),
        param_names=names,
        starts=[{k: v for k, v in r.items() if k != "z"} for r in runs],
        n_distinct_optima=len(reps),
        warnings=[m for _, m in found],
    )


def _check_posterior(posterior: Any, x: Any) -> np.ndarray:
    """The observed release (``x`` or the posterior's), checked against an SPLE posterior."""
    if getattr(posterior, "kind", "sple") != "sple" or not hasattr(posterior, "flow"):
        raise InvalidDataError(
            "sple_mle needs an SPLE posterior (a likelihood flow q(s_dp | θ)); SPPE learns a "
            "posterior, not a likelihood."
        )
    observed = np.asarray(posterior.observed if x is None else x, dtype=np.float64).reshape(-1)
    expected = np.asarray(posterior.observed).reshape(-1).shape
    if observed.shape != expected or not np.all(np.isfinite(observed)):
        raise InvalidDataError(
            f"the observed release must be {np.asarray(posterior.observed).size} finite value(s), "
            f"got {np.shape(observed)} (a posterior trained without a release needs x=...)."
        )
    return observed


def _starts(
    prior: Any, opts: MLEOptions, rng: np.random.Generator, like: Any, draws: Any, d: int
) -> list[tuple[str, np.ndarray]]:
    """The BFGS starting points: prior draws, the best of a prior screen, the best posterior draw."""
    starts: list[tuple[str, np.ndarray]] = [
        ("prior", t) for t in np.asarray(prior.sample(opts.starts, rng), dtype=np.float64).reshape(-1, d)
    ]
    if opts.screen > 0:
        cand = np.asarray(prior.sample(opts.screen, rng), dtype=np.float64).reshape(-1, d)
        vals = like.values(cand)
        if np.isfinite(vals).any():
            starts.append(("prior screen", cand[_best(vals)]))
    if draws is not None and len(draws) > 0:
        dr = np.asarray(draws, dtype=np.float64).reshape(-1, d)
        sub = dr[:: max(1, dr.shape[0] // 500)]
        vals = like.values(sub)
        if np.isfinite(vals).any():
            starts.append(("posterior draws", sub[_best(vals)]))
    return starts


def _wald(
    info: np.ndarray, d: int, found: list[tuple[type[InferenceWarning], str]]
) -> tuple[bool, np.ndarray, np.ndarray]:
    """``(ok, cov, se)`` from the observed information; NaN (and a finding) when it is not
    positive definite."""
    try:
        chol_ok = bool(np.all(np.isfinite(info)) and np.linalg.eigvalsh((info + info.T) / 2).min() > 0)
    except np.linalg.LinAlgError:
        chol_ok = False
    if chol_ok:
        cov = np.linalg.inv((info + info.T) / 2)
        return True, cov, np.sqrt(np.diag(cov))
    found.append((ConvergenceWarning,
                  "the observed information at the estimate is not positive definite (a saddle, a "
                  "flat ridge or a bound): no Wald standard errors; inspect the likelihood or use "
                  "the SPLE posterior."))
    return False, np.full((d, d), np.nan), np.full(d, np.nan)


def _distinct_optima(runs: list[dict[str, Any]], se: np.ndarray) -> list[dict[str, Any]]:
    """One run per distinct optimum (best first): scaled by the standard errors, or the spread
    of the starts."""
    scale = se if np.all(np.isfinite(se)) and np.all(se > 0) else np.maximum(
        np.std([r["theta"] for r in runs], axis=0), 1e-12)
    reps: list[dict[str, Any]] = []
    for r in sorted(runs, key=lambda r: -r["log_likelihood"]):
        if not np.isfinite(r["log_likelihood"]):
            continue
        if not any(np.max(np.abs(r["theta"] - q["theta"]) / scale) < 0.01 for q in reps):
            reps.append(r)
    return reps


def _extrapolation(
    draws: Any, theta_hat: np.ndarray, names: tuple[str, ...], limit: float
) -> list[tuple[type[InferenceWarning], str]]:
    """A finding when the estimate lies more than ``limit`` posterior sds from the SPLE draws."""
    dr = np.asarray(draws, dtype=np.float64).reshape(-1, len(names))
    m, s = dr.mean(axis=0), dr.std(axis=0)
    off = np.abs(theta_hat - m) / np.where(s > 0, s, np.inf)
    if not np.any(off > limit):
        return []
    j = int(np.argmax(off))
    return [(ObservedOutsideSimulationsWarning,
             f"the estimate of {names[j]} is {off[j]:.1f} posterior sds from the SPLE posterior "
             "draws: the flow was trained on simulations near the posterior, so its likelihood "
             "there is an extrapolation; refit SPLE with more prior simulations (rounds=1) "
             "or check against the posterior.")]


__all__ = ["MLEOptions", "MLEResult", "sple_mle"]
