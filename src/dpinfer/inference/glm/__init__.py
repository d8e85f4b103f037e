"""The noise-aware posterior of a privately released GLM (the analyst's side: post-processing only).

Modules: :mod:`.options` (prior, sampler options and their checks), :mod:`.model` (the model of
the release), :mod:`.samplers` (Laplace, HMC, importance sampling, R-hat), :mod:`.posterior`
(:func:`glm_posterior`, :class:`GLMPosterior`); the release record and the statistic's layout are
:mod:`dpinfer.models.glm_release`, shared with the data owner.

What was released
-----------------
:func:`dpinfer.release.glm.release_glm_statistics` (the data owner) scales every feature to
``x̃ ∈ [-1, 1]`` by its declared public bounds (the offset too, ``õ``), scales the response to ``ỹ``
(``[-1, 1]`` for the linear family, ``y / y_max`` for Poisson, ``{0, 1}`` otherwise) and releases

    z = Σ_i t(x_i, y_i) + N(0, σ² I),     t = [ỹ·r_y / R_y,  vech(r rᵀ)∖{1} / R_x,  (ỹ²)],

with ``r = (1, x̃, õ)``, ``r_y = (1, x̃)``, ``R_y`` and ``R_x`` the largest norms of the two blocks
under the bounds (so each block has norm at most 1; ``ỹ²`` only for the linear family) and σ the
Gaussian mechanism's for the L2 sensitivity 2·√(number of blocks) (replace-one). These are the
sufficient statistics of the second-order (polynomial) approximation of the GLM log-likelihood in
the linear predictor η (Kulkarni, Jälkö, Koskela, Kaski & Honkela 2021), and exactly the sufficient
statistics of the Gaussian linear model (Bernstein & Sheldon 2019).

The model of the release (the approximation)
--------------------------------------------
The posterior is *not* computed from the polynomial approximation of the likelihood: as in
Kulkarni et al. (2021, Sec. 3) and Bernstein & Sheldon (2019), the released sum is modelled by the
central limit theorem,

    Σ_i t_i | θ, φ ≈ N(n m(θ, φ), n V(θ, φ)),    so    z | θ, φ ≈ N(n m, n V + σ² I),

where m and V are the mean and covariance of one record's statistic under the exact GLM
p(y | η) and a **covariate model** for u = (x̃, õ) whose first and second moments φ = (μ, Σ = L Lᵀ)
are inferred jointly with θ from the same released moments. The covariate law matters beyond its
first two moments: E[ν₁(c + aᵀu) r] is not linear in u (:mod:`dpinfer.inference.glm_covariates`).

* ``covariates="moment-matched"`` (default): the law is a bounded shape fitted to the released
  moments — Beta margins on [-1, 1] with each feature's released mean and variance (a binary or
  one-hot feature, whose variance is 1 − μ², is the two-point law on its bounds; a uniform one
  Beta(1, 1); a skewed one a skewed Beta) joined by a Gaussian copula matching the released
  correlations — represented by 4096 weighted quasi-Monte Carlo points (their weighted moments the
  released ones) and moved affinely with φ, so that
  m(θ, φ) and V(θ, φ) are exact averages over the points (equations in
  :mod:`dpinfer.inference.glm_covariates`). Its φ coordinates are λ_j = ½ log E[u_j²], μ_j / L_jj
  and L_jk / L_jj (:class:`GLMPrior`), which keep a binary feature's pinned second moment on one
  axis.
* ``covariates="gaussian"``: u ~ N(μ, Σ), the model of Kulkarni et al. (2021). Given θ, η = c + aᵀu
  is Gaussian and u | η is Gaussian, so every moment of t (up to the fourth order of u, with
  E[ỹᵏ | η] of the family) is a one-dimensional Gauss–Hermite integral over η (32 nodes) of
  closed-form Gaussian moments (Isserlis). Biased for binary, one-hot, bounded or skewed features
  (measured: 90% intervals covering 0.24 with three binary features at n = 20 000,
  ``examples/private_glm/README.md``).

When it breaks
--------------
* small n, or rare events (a logistic regression with a handful of positives, Poisson counts that
  are mostly 0 at n of a few hundred): the CLT for Σ t_i is then poor;
* covariate laws that the moment-matched shape does not reach: multi-modal continuous features (a
  Beta has one mode), higher-order interactions among binary features that pairwise moments do not
  show, features piled at one bound *and* spread over the interior; with ``"gaussian"``, any
  non-Gaussian feature;
* a linear family whose errors are not Gaussian or whose ỹ is often at its bounds;
* a Poisson count model whose counts reach ``y_max`` (the model does not know about the cap).

SBC over the whole process (release included) on binary, one-hot, uniform, skewed, correlated and
ten-feature designs is in ``examples/private_glm/sbc_designs.py`` (the table in its README); the
earlier SBC with covariates drawn from the Gaussian model is ``examples/private_glm/calibration.py``.

How much privacy costs is measured on every fit: ``diagnostics["privacy_width_ratio"]`` is each
coefficient's posterior sd over the sd the same records would give without privacy (the GLM's
Fisher information under the fitted covariate law, same prior); ``summary()`` states it, and a
ratio of 10 or more warns (:class:`NoiseDominatesWarning`).

Sampling
--------
The MAP (L-BFGS) and its Hessian give a Laplace approximation. By default it is the proposal of
self-normalised importance sampling (a multivariate t around the MAP, its scale the inverse
Hessian inflated by 1 + 0.5 min(1, 10/d) and max(5, d) degrees of freedom in d dimensions: t₅ with
1.5× as in the exact references of the test suite at small d, nearly the Laplace approximation at
d = 76, where t₅ with 1.5× gave an ESS of 1/90 of the proposals), checked by the Pareto k̂ of
the weights (Vehtari et al. 2024;
k̂ > 0.7 warns, :class:`~dpinfer.errors.WeightDegeneracyWarning`). ``method="hmc"`` instead runs
Hamiltonian Monte Carlo (Neal 2011) preconditioned by it: ``chains`` chains in one batch, a
dual-averaging step size (Hoffman & Gelman 2014) during warm-up, a metric re-estimated twice from
the chains' own warm-up draws (the Laplace curvature can be far narrower than the posterior) and a
jittered number of leapfrog steps; split R-hat above 1.01 warns
(:class:`~dpinfer.errors.ConvergenceWarning`). When the importance weights fail their check, the
default ``fallback="hmc"`` runs HMC on the *same release*
(post-processing: nothing is charged again); :meth:`GLMPosterior.resample` does the same on
request. Warnings name that call, never a new release.
"""

from __future__ import annotations

from ...models.glm_release import FAMILIES, GLMRelease, StatisticLayout
from .options import (
    COVARIATE_MODELS,
    MAX_SAMPLER_DRAWS,
    GLMPosteriorOptions,
    GLMPrior,
    GLMSamplerOptions,
    check_posterior_options,
)
from .posterior import (
    MIN_IS_ESS,
    NOISE_DOMINATES,
    RESAMPLE_HMC,
    GLMPosterior,
    NoiseDominatesWarning,
    glm_posterior,
    param_names,
)
from .samplers import split_rhat

__all__ = ["COVARIATE_MODELS", "FAMILIES", "MAX_SAMPLER_DRAWS", "MIN_IS_ESS", "NOISE_DOMINATES",
           "RESAMPLE_HMC", "GLMPosterior", "GLMPosteriorOptions", "GLMPrior", "GLMRelease",
           "GLMSamplerOptions",
           "NoiseDominatesWarning", "StatisticLayout", "check_posterior_options", "glm_posterior",
           "param_names", "split_rhat"]
