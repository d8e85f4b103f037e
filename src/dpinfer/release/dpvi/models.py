"""Models for DPVI: a per-example log-likelihood and a log-prior, written in torch.

A model is anything with ``log_likelihood(theta, X, y) -> (B,)`` (one value per example),
``log_prior(theta) -> scalar`` and ``dim``. :class:`Model` wraps two user callables; the
built-in subclasses add data checks, closed-form per-example gradients and predictions:

* :class:`LogisticRegression`, the DPVI paper's model (Jälkö et al. 2017, Section 4),
* :class:`PoissonRegression`, a second non-conjugate GLM showing the interface is general,
* :class:`GaussianLinearRegression`, conjugate, with an exact posterior (used to test the engine).

Constrained parameters (:mod:`dpinfer.release.dpvi.constraints`): ``Model(ll, lp, params={"sigma":
Positive()})``
fits q on the unconstrained ζ; ``ll``, ``lp`` get θ as a dict; the data-free log|det J| joins the prior.

Per-example gradients with respect to θ default to ``torch.func.vmap(torch.func.grad(...))``
over the examples; the built-in models override them with closed forms (same values, faster).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from torch.func import grad, vmap

from ...errors import InvalidDataError
from ...models.binary_records import logistic_simulator
from ...models.covariates import CovariateSource
from ...privacy.validation import check_finite_array, check_positive
from .constraints import ParamLayout, ParamSpec, link_predict, pad_covariates

Tensor = torch.Tensor


def _as_float_matrix(X: Any, name: str = "X") -> np.ndarray:
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidDataError(
            f"{name} must be numeric; encode categorical columns as numbers first "
            "(nothing was charged or released)."
        ) from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise InvalidDataError(f"{name} must be a non-empty 2-D array (n, features), got shape {arr.shape}.")
    return check_finite_array(arr, name)


class Model:
    """A model given by a per-example log-likelihood and a log-prior (both torch callables).

    Parameters
    ----------
    log_likelihood
        ``log_likelihood(theta, X, y) -> Tensor (B,)``: log p(y_i | x_i, θ) for each row of a batch
        (θ of shape (dim,), X of shape (B, p), y of shape (B,)). Must be written with torch
        operations that ``torch.func`` can transform.
    log_prior
        ``log_prior(theta) -> Tensor ()``: log p(θ).
    dim
        Dimension of θ (with ``params``: derived, the number of unconstrained coordinates).
    name
        A short name used in reports.
    params
        Named constrained parameter blocks, ``{"beta": Real(3), "sigma": Positive()}`` or a list
        of (name, constraint) pairs (:mod:`dpinfer.release.dpvi.constraints`). ``log_likelihood`` and
        ``log_prior`` then receive θ as a dict name → constrained tensor, and the variational
        family lives on the unconstrained ζ (``dim`` = Σ unconstrained sizes).
    n_features
        With ``params``: how many columns of X ``log_likelihood`` uses (it gets ``X[:, :n_features]``);
        None (default): no covariates, X is a dummy (any numeric (n, k) array, e.g. ones).
    link
        ``link(theta, X) -> Tensor (B,)``: E[y | x, θ] (θ as ``log_likelihood`` gets it), for
        :meth:`predict_mean` / :meth:`predict_proba` of a custom model (Monte Carlo over q).

    Notes
    -----
    Privacy relies on example i's term depending on record i only (plus θ): the per-example
    gradients are clipped one by one, and that bounds the sensitivity only if no record influences
    another record's term. The default :meth:`per_example_grad` evaluates each example on its own
    (``X[i:i+1]``), so batch-coupled likelihoods cannot leak through it; a subclass overriding it
    with a closed form must keep rows independent.
    """

    name: str = "custom"
    layout: ParamLayout | None = None  # the constrained blocks (None: θ is the flat real vector)
    #: a regression on a linear predictor: the fit's intercept default is True (DataSpec)
    regression: bool = False
    #: built without dim: each fit sets dim to the design's columns (intercept included)
    dim_from_data: bool = False
    link: Callable[..., Tensor] | None = None

    def __init__(
        self,
        log_likelihood: Callable[[Tensor, Tensor, Tensor], Tensor] | None = None,
        log_prior: Callable[[Tensor], Tensor] | None = None,
        dim: int | None = None,
        name: str = "custom",
        *,
        params: ParamSpec | None = None,
        n_features: int | None = None,
        link: Callable[..., Tensor] | None = None,
    ) -> None:
        if params is not None:
            self.layout = ParamLayout(params)
            if dim is not None and int(dim) != self.layout.dim:
                raise InvalidDataError(
                    f"dim={dim} disagrees with params ({self.layout.dim} unconstrained coordinates); "
                    "leave dim out when params are given."
                )
            dim = self.layout.dim
            self.n_features = 0 if n_features is None else int(n_features)
        elif n_features is not None:
            raise InvalidDataError("n_features is for models with params=...; X has dim columns otherwise.")
        self.link = link
        if log_likelihood is not None:
            self._ll = log_likelihood
        if log_prior is not None:
            self._lp = log_prior
        if dim is not None:
            self.dim = int(dim)
        if getattr(self, "dim_from_data", False) and getattr(self, "dim", None) is None:
            pass  # a built-in regression without dim: set from the data at each fit
        elif not hasattr(self, "dim") or int(self.dim) < 1:
            raise InvalidDataError("a model needs dim >= 1 (the dimension of theta).")
        if type(self) is Model:
            if log_likelihood is None or log_prior is None:
                raise InvalidDataError("Model(...) needs both log_likelihood and log_prior callables.")
            self.name = name
            # predictions of a custom model go through its link (a clear error without one)
            self.predict_mean = self.predict_proba = self._link_predict

    # -- the two functions defining the model -----------------------------------------------
    @property
    def constrained(self) -> bool:
        """Whether θ = T(ζ) goes through constraint bijections (``params=`` given)."""
        return self.layout is not None

    def _theta(self, theta: Tensor) -> Any:
        return theta if self.layout is None else self.layout.unpack(theta)

    def _X(self, X: Tensor) -> Tensor:
        return X if self.layout is None else X[..., : self.n_features]

    def log_likelihood(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """Per-example log-likelihood, shape (B,) (of ζ, through T, for a constrained model)."""
        return self._ll(self._theta(theta), self._X(X), y)

    def log_prior(self, theta: Tensor) -> Tensor:
        """Log-prior density of θ (a scalar tensor); for a constrained model log p(T(ζ)) only."""
        return self._lp(self._theta(theta))

    def log_det_jacobian(self, zeta: Tensor) -> Tensor:
        """log|det J_T(ζ)| (0 for an unconstrained model): data-free, added with the prior."""
        if self.layout is None:
            return torch.zeros((), dtype=zeta.dtype, device=zeta.device)
        return self.layout.log_abs_det_jacobian(zeta)

    def log_det_jacobian_grad(self, zeta: Tensor) -> Tensor:
        """∇_ζ log|det J_T(ζ)| (autograd)."""
        return grad(self.log_det_jacobian)(zeta)

    # -- derived quantities -----------------------------------------------------------------
    def log_prior_grad(self, theta: Tensor) -> Tensor:
        """∇_θ log p(θ) (autograd; the built-in Gaussian priors override it: -θ/τ²)."""
        return grad(self.log_prior)(theta)

    def per_example_grad(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """∇_θ log p(y_i | x_i, θ) for every example, shape (B, dim) (vmap of grad)."""

        if X.shape[0] == 0:  # an empty Poisson batch: vmap cannot map over zero examples
            return torch.zeros(0, theta.shape[-1], dtype=theta.dtype, device=theta.device)

        def single(t: Tensor, x: Tensor, yy: Tensor) -> Tensor:
            return self.log_likelihood(t, x.unsqueeze(0), yy.unsqueeze(0)).sum()

        return vmap(grad(single), in_dims=(None, 0, 0))(theta, X, y)

    def check_data(self, X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """Validate and convert (X, y); raise :class:`InvalidDataError` with a clear message."""
        X = _as_float_matrix(X)
        try:
            y = np.asarray(y, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise InvalidDataError("y must be numeric (nothing was charged or released).") from None
        y = check_finite_array(y, "y")
        if y.shape[0] != X.shape[0]:
            raise InvalidDataError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries.")
        self.check_targets(y)
        if self.layout is not None:
            X = pad_covariates(X, self.n_features, self.dim)
        return X, y

    def _link_predict(self, mean: np.ndarray, cov: np.ndarray, X: Any, *_: Any, **kw: Any) -> np.ndarray:
        """E_q[link(θ, x)] by Monte Carlo (a custom model's ``predict_mean`` and ``predict_proba``)."""
        return link_predict(self, mean, cov, X, n_samples=kw.get("n_samples", 1000), seed=kw.get("seed", 0))

    def check_targets(self, y: np.ndarray) -> None:
        """Model-specific checks of the targets (none for a custom model)."""

    def config(self) -> dict[str, Any]:
        """Constructor arguments of a built-in model (to rebuild it after ``load``)."""
        if self.layout is not None:
            return {"dim": self.dim, "params": self.layout.config(), "n_features": self.n_features}
        return {"dim": self.dim}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.config().items())})"


def _gaussian_log_prior(theta: Tensor, scale: float) -> Tensor:
    d = theta.shape[-1]
    return -0.5 * (theta**2).sum(-1) / scale**2 - d * (math.log(scale) + 0.5 * math.log(2 * math.pi))


class LogisticRegression(Model):
    """Bayesian logistic regression of the DPVI paper (Section 4; the DPVI authors' code (Jälkö, Dikmen &
    Honkela 2017, DPBayes/DPVI-code)).

    ``y_i ~ Bernoulli(s(x_i · θ))`` with ``s(z) = squash + (1 - 2 squash) logistic(z)`` and
    ``θ ~ N(0, prior_scale² I)``. The authors' code uses ``squash = 1e-6`` (it keeps the
    log-likelihood bounded); ``squash=0`` gives the plain logistic link. The fit adds the
    intercept column (``DataSpec(intercept=True)``, the default, as ``private_glm``).

    Parameters
    ----------
    dim
        Dimension of θ: the design's columns, intercept included. ``None`` (default): taken from
        the data at each fit (feature columns + 1 for the intercept).
    prior_scale
        Prior standard deviation (1 in the paper).
    squash
        The link's floor and ceiling, in [0, 0.5).
    """

    name = "logistic"
    regression = True

    def __init__(self, dim: int | None = None, prior_scale: float = 1.0, squash: float = 1e-6) -> None:
        self.dim_from_data = dim is None  # set from the data at each fit (intercept included)
        self.dim = None if dim is None else int(dim)  # type: ignore[assignment]
        self.prior_scale = check_positive(prior_scale, "prior_scale")
        if not 0.0 <= float(squash) < 0.5:
            raise InvalidDataError(f"squash must lie in [0, 0.5), got {squash!r}.")
        self.squash = float(squash)
        super().__init__()

    def _link(self, z: Tensor) -> Tensor:
        return self.squash + (1.0 - 2.0 * self.squash) * torch.sigmoid(z)

    def log_likelihood(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        z = X @ theta
        if self.squash == 0.0:
            return y * torch.nn.functional.logsigmoid(z) + (1 - y) * torch.nn.functional.logsigmoid(-z)
        p = self._link(z)
        return y * torch.log(p) + (1 - y) * torch.log1p(-p)

    def log_prior(self, theta: Tensor) -> Tensor:
        return _gaussian_log_prior(theta, self.prior_scale)

    def log_prior_grad(self, theta: Tensor) -> Tensor:
        return -theta / self.prior_scale**2

    def per_example_grad(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """Closed form: ``(d/dz) log p(y|z) · x_i`` with z = x_i · θ."""
        z = X @ theta
        s = torch.sigmoid(z)
        if self.squash == 0.0:
            dz = y - s
        else:
            b = 1.0 - 2.0 * self.squash
            p = self.squash + b * s
            ds = b * s * (1.0 - s)
            dz = y * ds / p - (1.0 - y) * ds / (1.0 - p)
        return dz.unsqueeze(-1) * X

    def check_targets(self, y: np.ndarray) -> None:
        bad = ~np.isin(y, (0.0, 1.0))
        if bad.any():
            raise InvalidDataError(
                f"the logistic model needs a binary target coded 0/1; found {int(bad.sum())} other "
                f"value(s) (e.g. {y[bad][0]!r}). Recode the target (e.g. y = (Rings >= 10)); nothing "
                "was charged or released."
            )

    def predict_proba(
        self,
        mean: np.ndarray,
        cov: np.ndarray,
        X: np.ndarray,
        method: str = "probit",
        samples: np.ndarray | None = None,
    ) -> np.ndarray:
        """Posterior predictive P(y = 1 | x) under q(θ) = N(mean, cov).

        ``method="probit"`` is the authors' approximation
        ``s(μ_a / sqrt(1 + π s_a² / 8))`` with ``μ_a = x·mean``, ``s_a² = xᵀ cov x`` (the DPVI authors'
        code (Jälkö, Dikmen & Honkela 2017, DPBayes/DPVI-code));
        ``method="mc"`` averages the link over the given posterior ``samples``.
        """
        if method == "probit":
            mu = X @ mean
            var = np.einsum("ij,jk,ik->i", X, cov, X)
            z = mu / np.sqrt(1.0 + math.pi * var / 8.0)
            return self.squash + (1.0 - 2.0 * self.squash) / (1.0 + np.exp(-z))
        if method == "mc":
            if samples is None:
                raise InvalidDataError("method='mc' needs posterior samples.")
            z = X @ samples.T
            return np.mean(self.squash + (1.0 - 2.0 * self.squash) / (1.0 + np.exp(-z)), axis=1)
        raise InvalidDataError(f"method must be 'probit' or 'mc', got {method!r}.")

    # -- synthetic records (dpinfer.models.record_synthesis.SupportsConditionalRecordSynthesis) -----
    def conditional_record_columns(self, covariates: CovariateSource) -> tuple[str, ...]:
        """The covariates' columns (as ``covariates`` names them, else ``x0, x1, ...``), then ``y``."""
        return logistic_simulator(covariates)[1]

    def simulate_conditional_records(
        self,
        theta: np.ndarray,
        rng: np.random.Generator,
        *,
        covariates: CovariateSource,
        design: Mapping[str, Any] | None = None,
    ) -> np.ndarray:
        """One record (x, y) per row of θ: x from ``covariates``, y ~ Bernoulli(logistic(x̃ᵀθ)) with
        x̃ the fit's design columns (:func:`dpinfer.models.binary_records.apply_design`), with the
        plain logistic link (the fit's ``squash``, 1e-6 by default, is not applied)."""
        return logistic_simulator(covariates, design=design)[0](theta, rng)

    def config(self) -> dict[str, Any]:
        return {"dim": self.dim, "prior_scale": self.prior_scale, "squash": self.squash}


class PoissonRegression(Model):
    """Bayesian Poisson regression: ``y_i ~ Poisson(exp(x_i · θ + o_i))``, ``θ ~ N(0, prior_scale² I)``,
    with the offset o_i (exposure: log t_i) from ``fit(..., offset=...)`` (0 without)."""

    name = "poisson"
    regression = True

    def __init__(self, dim: int | None = None, prior_scale: float = 1.0) -> None:
        self.dim_from_data = dim is None  # set from the data at each fit (intercept included)
        self.dim = None if dim is None else int(dim)  # type: ignore[assignment]
        self.prior_scale = check_positive(prior_scale, "prior_scale")
        super().__init__()

    #: ``fit(..., offset=...)`` passes a per-record offset as a last column beyond ``dim``
    accepts_offset = True

    def _eta(self, theta: Tensor, X: Tensor) -> Tensor:
        """x·θ, plus the offset column (``fit(..., offset=...)``) when X has dim + 1 columns."""
        if X.shape[-1] > self.dim:
            return X[..., : self.dim] @ theta + X[..., self.dim]
        return X @ theta

    def log_likelihood(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        eta = self._eta(theta, X)
        return y * eta - torch.exp(eta) - torch.lgamma(y + 1.0)

    def log_prior(self, theta: Tensor) -> Tensor:
        return _gaussian_log_prior(theta, self.prior_scale)

    def log_prior_grad(self, theta: Tensor) -> Tensor:
        return -theta / self.prior_scale**2

    def per_example_grad(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        return (y - torch.exp(self._eta(theta, X))).unsqueeze(-1) * X[..., : self.dim]

    def check_targets(self, y: np.ndarray) -> None:
        bad = (y < 0) | (y != np.round(y))
        if bad.any():
            raise InvalidDataError(
                f"the Poisson model needs non-negative integer counts; found {int(bad.sum())} other "
                "value(s). Nothing was charged or released."
            )

    def predict_mean(self, mean: np.ndarray, cov: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Posterior predictive mean E[exp(x·θ)] = exp(x·mean + xᵀ cov x / 2) (log-normal mean)."""
        return np.exp(X @ mean + 0.5 * np.einsum("ij,jk,ik->i", X, cov, X))

    def config(self) -> dict[str, Any]:
        return {"dim": self.dim, "prior_scale": self.prior_scale}


class GaussianLinearRegression(Model):
    """Conjugate linear regression with known noise: ``y_i ~ N(x_i·θ, noise_scale²)``, ``θ ~ N(0, τ² I)``.

    Its posterior is Gaussian and known exactly (:meth:`exact_posterior`), so a full-rank
    variational fit should recover it: the engine's test model.
    """

    name = "gaussian-linear"
    regression = True

    def __init__(self, dim: int | None = None, noise_scale: float = 1.0, prior_scale: float = 1.0) -> None:
        self.dim_from_data = dim is None  # set from the data at each fit (intercept included)
        self.dim = None if dim is None else int(dim)  # type: ignore[assignment]
        self.noise_scale = check_positive(noise_scale, "noise_scale")
        self.prior_scale = check_positive(prior_scale, "prior_scale")
        super().__init__()

    def log_likelihood(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        r = y - X @ theta
        return -0.5 * r**2 / self.noise_scale**2 - math.log(self.noise_scale) - 0.5 * math.log(2 * math.pi)

    def log_prior(self, theta: Tensor) -> Tensor:
        return _gaussian_log_prior(theta, self.prior_scale)

    def log_prior_grad(self, theta: Tensor) -> Tensor:
        return -theta / self.prior_scale**2

    def per_example_grad(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        return ((y - X @ theta) / self.noise_scale**2).unsqueeze(-1) * X

    def exact_posterior(self, X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and covariance: Σ = (XᵀX/s² + I/τ²)⁻¹, μ = Σ Xᵀy/s²."""
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        prec = X.T @ X / self.noise_scale**2 + np.eye(self.dim) / self.prior_scale**2
        cov = np.linalg.inv(prec)
        return cov @ (X.T @ y) / self.noise_scale**2, cov

    def config(self) -> dict[str, Any]:
        return {"dim": self.dim, "noise_scale": self.noise_scale, "prior_scale": self.prior_scale}


BUILTIN_MODELS: dict[str, type[Model]] = {
    cls.name: cls for cls in (LogisticRegression, PoissonRegression, GaussianLinearRegression)
}


def make_model(name: str, dim: int | None = None, **kwargs: Any) -> Model:
    """A built-in model by name (``"logistic"``, ``"poisson"``, ``"gaussian-linear"``)."""
    try:
        cls: Any = BUILTIN_MODELS[name]  # the built-in subclasses take the dimension first
    except KeyError:
        raise InvalidDataError(
            f"unknown model {name!r}; built-in models: {sorted(BUILTIN_MODELS)}."
        ) from None
    return cls(dim, **kwargs)
