"""A noise-aware private GLM: the data owner's release of noisy sufficient statistics.

:func:`release_glm_statistics` reads the confidential records, scales them by *declared public
bounds* and releases, with the library's exact discrete Gaussian mechanism
(:class:`~dpinfer.privacy.mechanisms.gaussian.GaussianMechanism`, charged before any noise is
drawn), the statistic of :class:`~dpinfer.inference.glm.StatisticLayout`:

    t_i = [ỹ_i (1, x̃_i) / R_y,  vech(r_i r_iᵀ)∖{1} / R_x,  (ỹ_i²)],   r_i = (1, x̃_i, õ_i),

the sufficient statistics of the second-order approximation of a GLM log-likelihood in η
(Kulkarni et al. 2021) and of the Gaussian linear model (Bernstein & Sheldon 2019).

Sensitivity (replace-one; n is public). Every feature and the offset are mapped to [-1, 1] by their
bounds, the response to ỹ with |ỹ| <= 1 (``{0, 1}`` for logistic/probit, ``y / y_max`` for Poisson,
``[-1, 1]`` by its bounds for the linear family). Each block is divided by its largest norm under the
bounds (R_y = √(D+1); R_x² = (Q² + Q)/2 − 1 with Q = len(r), since Σ_{j<=k} r_j² r_k² =
(|r|⁴ + Σ r_j⁴)/2), so |t_i| <= √b for b blocks, and replacing one record moves Σ t_i by at most
2√b in L2: the sensitivity is computed from the bounds only, never from the data.

Data outside the declared bounds are refused (:class:`~dpinfer.errors.InvalidDataError`, naming the
column and how many values, never the values), before anything is charged.

:func:`private_glm` is the release followed by the analyst's noise-aware posterior
(:func:`dpinfer.inference.glm.glm_posterior`, post-processing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from ..inference.glm import (
    FAMILIES,
    GLMPosterior,
    GLMPrior,
    GLMRelease,
    GLMSamplerOptions,
    StatisticLayout,
    glm_posterior,
)
from ..privacy.context import ReleaseContext
from ..privacy.mechanisms.gaussian import GaussianMechanism

__all__ = ["private_glm", "release_glm_statistics"]


def _matrix(X: Any) -> tuple[np.ndarray, tuple[str, ...] | None]:
    names = tuple(str(c) for c in X.columns) if hasattr(X, "columns") else None
    arr = np.asarray(X)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.dtype.kind not in "biuf":
        raise InvalidDataError(f"features must be numeric, got dtype {arr.dtype}. Nothing was charged.")
    arr = arr.astype(np.float64)
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise InvalidDataError(f"features must be a 2-D array (n, D), n >= 2, got shape {arr.shape}.")
    return arr, names


def _pair(value: Any, what: str) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise InvalidDataError(f"{what} must be one (lower, upper) pair of numbers, got {value!r}.") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InvalidDataError(f"{what} must be finite with lower < upper, got ({lo}, {hi}).")
    return lo, hi


def _bounds(bounds: Any, names: tuple[str, ...]) -> np.ndarray:
    d = len(names)
    if isinstance(bounds, dict):
        missing = [c for c in names if c not in bounds]
        if missing:
            raise InvalidDataError(f"bounds has no (lower, upper) for column(s) {missing}.")
        bounds = [bounds[c] for c in names]
    try:
        arr = np.asarray(bounds, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidDataError(
            "bounds must be numbers: one (lower, upper) pair per feature, or one for all."
        ) from None
    if arr.shape == (2,):
        arr = np.tile(arr, (d, 1))
    if arr.shape != (d, 2):
        raise InvalidDataError(
            f"bounds must be one (lower, upper) pair per feature ({d}) or one pair for all; got shape "
            f"{arr.shape}."
        )
    if not np.all(np.isfinite(arr)) or np.any(arr[:, 0] >= arr[:, 1]):
        raise InvalidDataError("every feature bound must be finite with lower < upper.")
    return arr


def _outside(values: np.ndarray, lo: Any, hi: Any, names: Sequence[str], what: str) -> None:
    bad = (values < lo) | (values > hi)
    if bad.any():
        if values.ndim == 2:
            cols = [f"{names[j]} ({int(c)})" for j, c in enumerate(bad.sum(0)) if c]
            where = f"in column(s) {', '.join(cols)}"
        else:
            where = f"({int(bad.sum())} value(s))"
        raise InvalidDataError(
            f"{what} outside the declared public bounds {where}. The sensitivity is computed from the "
            "bounds, so such records cannot be released: widen the bounds (from knowledge of the domain, "
            "never from the data) or remove those records. Nothing was charged or released."
        )


def release_glm_statistics(
    X: Any,
    y: Any,
    *,
    family: str,
    bounds: Any,
    epsilon: float,
    delta: float,
    y_bounds: Any = None,
    offset: Any = None,
    offset_bounds: Any = None,
    intercept: bool = True,
    feature_names: Sequence[str] | None = None,
    context: ReleaseContext | None = None,
    ledger: Any = None,
    dataset: str | None = None,
    privacy_rng: Any = None,
    label: str = "",
) -> GLMRelease:
    """Release the noisy GLM statistic of confidential records (module docstring).

    Parameters
    ----------
    X, y
        The confidential features (n, D) (a DataFrame's columns name the features) and response (n,).
    family
        ``"logistic"`` or ``"probit"`` (y in {0, 1}), ``"poisson"`` (integer counts in
        ``[0, y_max]``) or ``"linear"`` (y in ``y_bounds``; Gaussian errors of unknown sd).
    bounds
        Public (lower, upper) per feature (a list of pairs, one pair for all, or a dict by column
        name). Declare them from the domain, never from the data.
    epsilon, delta
        The (ε, δ) of the release (replace-one neighbours; n is public).
    y_bounds
        ``"linear"``: the response's public (lower, upper); ``"poisson"``: ``y_max`` or ``(0, y_max)``.
    offset, offset_bounds
        An offset entering η with coefficient 1 (e.g. log exposure for a Poisson rate), with its
        public (lower, upper).
    intercept
        Whether the model has an intercept.
    feature_names
        Names of the features (default: a DataFrame's columns, else ``x1..xD``).
    context, ledger, dataset, privacy_rng, label
        Where the release is charged and where its noise comes from
        (:class:`~dpinfer.privacy.context.ReleaseContext`). Without a ledger the release warns
        that it is unaccounted.

    Returns
    -------
    GLMRelease
        The released statistic with σ, n, the public scaling and the privacy report.

    Raises
    ------
    InvalidDataError, ~dpinfer.errors.InvalidPrivacyParameterError
        Bad inputs or data outside the bounds, before anything is charged.
    """
    ctx = ReleaseContext.of(context, ledger=ledger, dataset=dataset, privacy_rng=privacy_rng, label=label)
    if family not in FAMILIES:
        raise InvalidDataError(f"family must be one of {FAMILIES}, got {family!r}. Nothing was charged.")
    Xa, cols = _matrix(X)
    n, D = Xa.shape
    names = tuple(str(c) for c in feature_names) if feature_names is not None else cols or tuple(
        f"x{j + 1}" for j in range(D)
    )
    if len(names) != D:
        raise InvalidDataError(f"{len(names)} feature names for {D} features.")
    ya = np.asarray(y)
    if ya.dtype.kind not in "biuf":
        raise InvalidDataError(f"the response must be numeric, got dtype {ya.dtype}. Nothing was charged.")
    ya = ya.astype(np.float64)
    if ya.ndim == 2 and ya.shape[1] == 1:
        ya = ya[:, 0]
    if ya.shape != (n,):
        raise InvalidDataError(f"y must hold one value per record ({n}), got shape {np.asarray(y).shape}.")
    if not (np.all(np.isfinite(Xa)) and np.all(np.isfinite(ya))):
        raise InvalidDataError(
            "features or response hold missing or non-finite values; impute or remove those records first. "
            "Nothing was charged or released."
        )
    fb = _bounds(bounds, names)
    _outside(Xa, fb[:, 0], fb[:, 1], names, "features")
    xs = 2 * (Xa - fb[:, 0]) / (fb[:, 1] - fb[:, 0]) - 1
    y_scale, y_center = 1.0, 0.0
    if family in ("logistic", "probit"):
        if not np.all((ya == 0) | (ya == 1)):
            raise InvalidDataError(f"a {family} response must be 0 or 1. Nothing was charged or released.")
        ys = ya
    elif family == "poisson":
        if y_bounds is None:
            raise InvalidDataError("a Poisson GLM needs y_bounds=y_max (the largest count, public). Nothing "
                                   "was charged.")
        lo, hi = _pair(y_bounds, "y_bounds") if np.ndim(y_bounds) else (0.0, float(y_bounds))
        if lo != 0 or not hi > 0 or hi != round(hi):
            raise InvalidDataError(
                f"Poisson y_bounds must be (0, y_max) with an integer y_max > 0, got ({lo}, {hi})."
            )
        if np.any(ya != np.round(ya)):
            raise InvalidDataError("Poisson counts must be integers. Nothing was charged or released.")
        _outside(ya, 0.0, hi, names, "counts")
        y_scale = hi
        ys = ya / hi
    else:
        if y_bounds is None:
            raise InvalidDataError("a linear GLM needs y_bounds=(lower, upper) of the response (public). "
                                   "Nothing was charged.")
        lo, hi = _pair(y_bounds, "y_bounds")
        _outside(ya, lo, hi, names, "responses")
        y_center, y_scale = (lo + hi) / 2, (hi - lo) / 2
        ys = (ya - y_center) / y_scale
    os_, ob = None, None
    if offset is not None:
        if offset_bounds is None:
            raise InvalidDataError(
                "an offset needs offset_bounds=(lower, upper) (public). Nothing was charged."
            )
        ob = _pair(offset_bounds, "offset_bounds")
        oa = np.asarray(offset)
        if oa.dtype.kind not in "biuf" or oa.size != n:
            raise InvalidDataError(f"offset must be {n} numbers, one per record.")
        oa = oa.astype(np.float64).reshape(-1)
        if not np.all(np.isfinite(oa)):
            raise InvalidDataError("the offset holds non-finite values. Nothing was charged or released.")
        _outside(oa, ob[0], ob[1], names, "offsets")
        os_ = 2 * (oa - ob[0]) / (ob[1] - ob[0]) - 1
    elif offset_bounds is not None:
        raise InvalidDataError("offset_bounds given without an offset.")
    layout = StatisticLayout(D, offset is not None, family == "linear")
    statistic = layout.statistic(xs, ys, os_)
    mech = GaussianMechanism(layout.dim, 2 * math.sqrt(layout.n_blocks), epsilon, delta, "replace-one")
    released = mech.release(
        statistic, context=ctx,
        label=ctx.label or f"GLM statistics ({family}, {D} features, {layout.dim} values) eps={epsilon:g}",
    )
    return GLMRelease(
        family=family, z=np.asarray(released.value, dtype=np.float64), sigma=float(mech.sigma), n=int(n),
        feature_names=names, intercept=bool(intercept), has_offset=offset is not None, offset_bounds=ob,
        y_scale=float(y_scale), y_center=float(y_center), feature_bounds=fb, privacy=released.privacy,
    )


def private_glm(
    X: Any,
    y: Any,
    *,
    family: str,
    bounds: Any,
    epsilon: float,
    delta: float,
    y_bounds: Any = None,
    offset: Any = None,
    offset_bounds: Any = None,
    intercept: bool = True,
    feature_names: Sequence[str] | None = None,
    prior: GLMPrior | None = None,
    sampler: GLMSamplerOptions | None = None,
    ledger: Any = None,
    dataset: str | None = None,
    context: ReleaseContext | None = None,
    privacy_rng: Any = None,
    seed: Any = None,
    warn: bool = True,
    covariates: str = "moment-matched",
) -> GLMPosterior:
    """A differentially private GLM with a noise-aware posterior (one release, then post-processing).

    The data owner releases noisy sufficient statistics of a second-order approximation of the
    log-likelihood (:func:`release_glm_statistics`: exact discrete Gaussian mechanism, sensitivity
    from the public bounds, charged before the noise is drawn); the posterior
    (:func:`dpinfer.inference.glm.glm_posterior`) integrates over the mechanism's noise (its σ is
    public) and the sampling distribution of the statistic given θ and a covariate model inferred
    from the same release, by the central limit theorem (Kulkarni et al. 2021; Bernstein & Sheldon
    2019 for the linear family).

    Approximation made: Σ_i t_i | θ ≈ N(n m(θ, φ), n V(θ, φ)) with the covariates u in their scaled
    units following ``covariates``: ``"moment-matched"`` (default; Beta margins and a Gaussian
    copula fitted to the released moments: binary, one-hot, uniform and skewed features) or
    ``"gaussian"`` (the paper's N(μ, Σ)). It breaks for small n or rare outcomes (the CLT), for
    covariate laws the shape does not reach (multi-modal features, higher-order interactions of
    binary ones), and for Poisson counts that reach ``y_max`` or non-Gaussian linear-model errors.
    See :mod:`dpinfer.inference.glm` and :mod:`dpinfer.inference.glm_covariates`.

    Results (``mean()``, ``interval()``, ``summary()``, ``to_arviz()``) are in the features' own
    units under their names; ``scale="scaled"`` gives the coefficients of the scaled features
    ``2 (x - lower)/(upper - lower) - 1`` the model is fitted on. ``fit.resample(sampler=...)``
    samples the same release again (nothing charged). ``seed`` governs only the sampler's public
    randomness.

    Example
    -------
    >>> fit = dpinfer.private_glm(df[["age", "bmi"]], df["event"], family="logistic",  # doctest: +SKIP
    ...                           bounds={"age": (18, 90), "bmi": (15, 50)}, epsilon=1.0, delta=1e-6,
    ...                           ledger=ledger, dataset="patients", seed=0)
    >>> fit.interval(0.9)  # doctest: +SKIP

    Parameters are those of :func:`release_glm_statistics`, plus ``prior``
    (:class:`~dpinfer.inference.glm.GLMPrior`), ``sampler``
    (:class:`~dpinfer.inference.glm.GLMSamplerOptions`), ``seed``, ``warn`` and ``covariates`` of the
    posterior.
    """
    rel = release_glm_statistics(
        X, y, family=family, bounds=bounds, epsilon=epsilon, delta=delta, y_bounds=y_bounds, offset=offset,
        offset_bounds=offset_bounds, intercept=intercept, feature_names=feature_names, context=context,
        ledger=ledger, dataset=dataset, privacy_rng=privacy_rng,
    )
    post = glm_posterior(rel, prior=prior, sampler=sampler, seed=seed, warn=warn, covariates=covariates)
    name = getattr(y, "name", None)  # a pandas Series: its name heads the synthetic records' response
    if isinstance(name, str) and name:
        post.settings["target"] = name
    return post
