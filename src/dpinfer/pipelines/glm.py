"""A private GLM in one call: the data owner's release, then the analyst's posterior.

:func:`private_glm` runs :func:`dpinfer.release.glm.release_glm_statistics` (reads the confidential
records, charges the ledger, draws the noise) and then :func:`dpinfer.inference.glm.glm_posterior`
(post-processing of that release). It sits above both layers so that :mod:`dpinfer.release` and
:mod:`dpinfer.inference` never import each other.
"""

from __future__ import annotations

from typing import Any

from ..errors import DPInferError, InvalidDataError, refuse_removed_keywords
from ..inference.glm import (
    COVARIATE_MODELS,
    GLMPosterior,
    GLMPosteriorOptions,
    GLMPrior,
    GLMSamplerOptions,
    check_posterior_options,
    glm_posterior,
)
from ..models.data_spec import DataSpec, removed_name
from ..models.glm_release import GLMRelease
from ..privacy.context import ReleaseContext
from ..release.glm import REFUSED_KEYWORDS, release_glm_statistics

__all__ = ["DataSpec", "GLMPosteriorOptions", "GLMPrior", "GLMSamplerOptions", "private_glm"]


def __getattr__(name: str) -> object:
    """``GLMDataSpec`` became :class:`dpinfer.DataSpec` (issue 40 item 4): refused, naming it."""
    if name == "GLMDataSpec":
        raise removed_name(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

#: The keywords that ``data=``, ``posterior=`` and ``context=`` replaced, with the new spelling.
MOVED_KEYWORDS: dict[str, str | tuple[str, str]] = {
    **REFUSED_KEYWORDS,
    **dict.fromkeys(("prior", "sampler", "covariates", "warn"), "posterior=dpinfer.GLMPosteriorOptions"),
}


def posterior_options(posterior: Any) -> GLMPosteriorOptions:
    """``posterior`` as :class:`GLMPosteriorOptions` (None: the defaults); anything else is refused."""
    if posterior is None:
        return GLMPosteriorOptions()
    if not isinstance(posterior, GLMPosteriorOptions):
        raise InvalidDataError(
            f"posterior must be a GLMPosteriorOptions(prior=..., sampler=..., ...), got "
            f"{type(posterior).__name__}. Nothing was charged."
        )
    return posterior


def after_charge_note(rel: GLMRelease) -> str:
    """What an error after the release must add: the statistic was released (and charged)."""
    accounted = rel.privacy is None or rel.privacy.accounted
    return ("The noisy statistic HAD already been released (" + ("charged to the ledger" if accounted else
            "unaccounted") + ") when this error occurred: its budget is spent. The release is kept as this "
            "error's .release attribute: fit the posterior from it with "
            "dpinfer.inference.glm.glm_posterior(release, ...) rather than releasing again.")


@refuse_removed_keywords(MOVED_KEYWORDS)
def private_glm(
    X: Any,
    y: Any,
    *,
    family: str,
    epsilon: float,
    delta: float,
    data: DataSpec | None = None,
    posterior: GLMPosteriorOptions | None = None,
    context: ReleaseContext | None = None,
    seed: Any = None,
    chunk_rows: int | None = None,
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
    ...                           data=dpinfer.DataSpec(bounds={"age": (18, 90), "bmi": (15, 50)}),
    ...                           epsilon=1.0, delta=1e-6, seed=0,
    ...                           context=dpinfer.ReleaseContext(ledger=ledger, dataset="patients"))
    >>> fit.interval(0.9)  # doctest: +SKIP

    Parameters are those of :func:`~dpinfer.release.glm.release_glm_statistics` (the data's public
    description in ``data``, a :class:`~dpinfer.models.data_spec.DataSpec`: bounds, offset, intercept,
    names, schema), plus ``posterior``
    (:class:`~dpinfer.inference.glm.GLMPosteriorOptions`: ``prior``, ``sampler``, ``covariates``,
    ``warn`` of the posterior) and ``seed``; the release is charged and its noise drawn through
    ``context`` (a :class:`~dpinfer.privacy.context.ReleaseContext`). The keywords those option
    objects replaced (``bounds=``, ``sampler=``, ...; ``ledger=``, ``dataset=``, ``privacy_rng=``)
    are refused with a :class:`TypeError` naming the new spelling.
    A large data set: ``private_glm("records.parquet", "event", data=DataSpec(bounds={"age":
    (18, 90), ...}), chunk_rows=100_000, ...)`` streams it (memory bounded by the chunk, the same
    release bit for bit as in memory).
    """
    # the analyst's options first: once the statistic is released its budget is spent (issue 35)
    opts = posterior_options(posterior)
    covariates, warn = opts.covariates, opts.warn
    prior, sampler = check_posterior_options(opts.prior, opts.sampler, seed)
    if covariates not in COVARIATE_MODELS:
        raise InvalidDataError(
            f"covariates must be one of {COVARIATE_MODELS}, got {covariates!r}. Nothing was charged."
        )
    rel = release_glm_statistics(
        X, y, family=family, epsilon=epsilon, delta=delta, data=data,
        context=context, chunk_rows=chunk_rows,
    )
    try:
        fit = glm_posterior(rel, prior=prior, sampler=sampler, seed=seed, warn=warn, covariates=covariates)
    except DPInferError as exc:  # after the charge: say so, and keep the release (its budget is spent)
        exc.args = (f"{exc} {after_charge_note(rel)}",)
        exc.release, exc.charged = rel, True  # type: ignore[attr-defined]
        raise
    name = y if isinstance(y, str) else getattr(y, "name", None)  # a column name, or a Series' name
    if isinstance(name, str) and name:
        fit.settings["target"] = name
    return fit
