"""The noise-aware posterior of a private GLM: :func:`glm_posterior` and its result
:class:`GLMPosterior` (:mod:`dpinfer.inference.glm` for the model and the sampling)."""

from __future__ import annotations

import textwrap
import warnings
from dataclasses import asdict
from typing import Any

import numpy as np

from ...errors import ConvergenceWarning, InferenceWarning, InvalidDataError, WeightDegeneracyWarning
from ...execution.threads import torch_threads
from ...models.glm_release import FAMILIES, GLMRelease
from ...privacy.report import PrivacyReport
from ...randomness import as_generator
from ...results.format import Record, ResultFile, draws_to_arviz
from .model import GLMModel, nonprivate_sd
from .options import COVARIATE_MODELS, GLMPrior, GLMSamplerOptions, check_posterior_options
from .samplers import hmc, importance, laplace, split_rhat

#: Below this effective sample size the importance-sampled posterior warns (a few distinct draws).
MIN_IS_ESS = 100
#: The call that resamples a posterior's own release with HMC (named by every sampler warning).
RESAMPLE_HMC = "post.resample(sampler=GLMSamplerOptions(method='hmc'))"


#: Posterior sd over the non-private sd (same model, no noise) from which the noise "dominates".
NOISE_DOMINATES = 10.0


class NoiseDominatesWarning(InferenceWarning):
    """The privacy noise, not the sampling variability, sets the width of a private GLM's intervals."""



# ---- the result ---------------------------------------------------------------------------------
class GLMPosterior(ResultFile):
    """The noise-aware posterior of a private GLM: draws of the coefficients (HMC chains, or one
    "chain" of importance-resampled draws).

    Results are **in the user's units** by default: ``mean()``, ``sd()``, ``interval(level)``,
    ``sample(n, seed)``, ``summary()``, ``to_arviz()`` and ``plot()`` give the coefficients of the
    features in their own units (intercept first, under the features' names; the linear family's
    response in its own units and its noise sd ``sigma`` last), comparable with a non-private fit
    (e.g. statsmodels) on the same columns. ``scale="scaled"`` gives the coefficients of the features
    scaled by their public bounds, ``x̃ = 2 (x - lower) / (upper - lower) - 1`` (and the linear
    family's ``log_sigma`` of the scaled response), the scale the model is fitted on; ``flat`` and
    ``draws`` hold those. :meth:`resample` samples the same release again (nothing charged).
    """

    def __init__(self, draws: np.ndarray, param_names: tuple[str, ...], release: GLMRelease,
                 privacy: PrivacyReport | None, diagnostics: dict[str, Any],
                 nuisance: np.ndarray | None = None, settings: dict[str, Any] | None = None) -> None:
        self.draws = np.asarray(draws, dtype=np.float64)  # (chains, n, dim), scaled units
        self.scaled_names = tuple(param_names)
        self.release = release
        self.privacy = privacy
        self.diagnostics = dict(diagnostics)
        self.nuisance = nuisance
        self.settings = dict(settings or {})

    @property
    def param_names(self) -> tuple[str, ...]:
        """The names in the user's units (``sigma`` where the scaled names have ``log_sigma``)."""
        return tuple("sigma" if n == "log_sigma" and i == len(self.scaled_names) - 1 else n
                     for i, n in enumerate(self.scaled_names))

    @property
    def flat(self) -> np.ndarray:
        """All kept draws in the scaled units, (draws, dim)."""
        return self.draws.reshape(-1, self.draws.shape[-1])

    def _flat(self, scale: str) -> np.ndarray:
        if scale == "original":
            return self.original_scale_draws()
        if scale == "scaled":
            return self.flat
        raise InvalidDataError(f"scale must be 'original' or 'scaled', got {scale!r}.")

    def names(self, scale: str = "original") -> tuple[str, ...]:
        """The parameter names at ``scale``."""
        self._flat_check(scale)
        return self.param_names if scale == "original" else self.scaled_names

    @staticmethod
    def _flat_check(scale: str) -> None:
        if scale not in ("original", "scaled"):
            raise InvalidDataError(f"scale must be 'original' or 'scaled', got {scale!r}.")

    def mean(self, scale: str = "original") -> np.ndarray:
        return self._flat(scale).mean(0)

    def sd(self, scale: str = "original") -> np.ndarray:
        return self._flat(scale).std(0, ddof=1)

    def interval(self, level: float = 0.95, scale: str = "original") -> np.ndarray:
        if not 0 < level < 1:
            raise InvalidDataError(f"level must be in (0, 1), got {level}.")
        return np.quantile(self._flat(scale), [0.5 - level / 2, 0.5 + level / 2], axis=0).T

    def sample(self, n: int, seed: Any = None, scale: str = "original") -> np.ndarray:
        flat = self._flat(scale)
        idx = as_generator(seed).integers(0, flat.shape[0], size=int(n))
        return flat[idx]

    def to_arviz(self, n_draws: int = 4000, seed: Any = 0, scale: str = "original") -> Any:
        """The chains (thinned evenly to about ``n_draws`` draws in all), under the names, in the
        user's units (``scale="scaled"``: the bound-scaled coefficients)."""
        self._flat_check(scale)
        C, N, dim = self.draws.shape
        per = max(1, min(N, int(n_draws) // C))
        idx = np.linspace(0, N - 1, per).round().astype(int)
        draws = self.draws[:, idx]
        if draws.shape[0] * draws.shape[1] != int(n_draws):  # fewer than one per chain: one chain
            draws = self.sample(int(n_draws), seed, scale="scaled")[None]
        if scale == "original":
            draws = self._to_original(draws.reshape(-1, dim)).reshape(draws.shape[0], draws.shape[1], -1)
        method = f"noise-aware GLM ({self.diagnostics.get('method')})"
        return draws_to_arviz(draws, self.names(scale), self.privacy, method=method,
                              family=self.release.family, scale=scale)

    def synthesize(self, n: int, X: Any, seed: Any = None, target: str | None = None) -> Any:
        """``n`` synthetic records (covariates, response) from the posterior predictive
        (:func:`dpinfer.models.synthesis.glm_synthesize`; logistic and probit): θ from this
        posterior, covariates from ``X``, a DP covariate model
        (:func:`dpinfer.release.synthesis.release_covariate_model`, its own release) or
        :class:`~dpinfer.models.synthesis.PublicCovariates` (copied, stated NOT protected), and the
        response from the model, named ``target`` (default: the name of ``y`` given to
        ``private_glm``). Post-processing: no further privacy cost; ``.to_csv(path)`` writes them
        with their privacy statement."""
        from ...models.synthesis import glm_synthesize

        return glm_synthesize(self, n, X, seed=seed, target=target)

    def resample(self, *, sampler: GLMSamplerOptions | None = None, prior: GLMPrior | None = None,
                 covariates: str | None = None, seed: Any = None, warn: bool = True) -> GLMPosterior:
        """A new posterior of **the same release** (post-processing: nothing is released or charged).

        ``sampler`` defaults to HMC (``GLMSamplerOptions(method="hmc")``); ``prior`` and
        ``covariates`` default to this posterior's own (its settings). Use it when a sampler warning
        says so, or to try another prior or covariate model on the release already paid for.
        """
        st = self.settings or {}
        pr = prior if prior is not None else GLMPrior(**st.get("prior", {}))
        new = glm_posterior(self.release, prior=pr, sampler=sampler or GLMSamplerOptions(method="hmc"),
                            seed=seed, warn=warn,
                            covariates=covariates or st.get("covariates", "moment-matched"))
        if "target" in st:
            new.settings["target"] = st["target"]
        return new

    def original_scale_draws(self) -> np.ndarray:
        """Draws of the coefficients in the features' own units (intercept first, if any).

        β_j = θ_j · 2/(hi_j - lo_j) and intercept = θ_0 - Σ_j θ_j (hi_j + lo_j)/(hi_j - lo_j); the
        linear family's coefficients and σ are also multiplied by the response's half-width and its
        intercept shifted by the response's midpoint.
        """
        return self._to_original(self.flat)

    def _to_original(self, flat: np.ndarray) -> np.ndarray:
        rel = self.release
        th = flat[:, : rel.n_features + int(rel.intercept)].copy()
        lo, hi = rel.feature_bounds[:, 0], rel.feature_bounds[:, 1]
        i0 = int(rel.intercept)
        beta = th[:, i0:] * 2 / (hi - lo)
        shift = (th[:, i0:] * (hi + lo) / (hi - lo)).sum(1)
        out = [beta]
        if rel.intercept:
            out.insert(0, (th[:, 0] - shift)[:, None])
        res = np.concatenate(out, axis=1)
        if rel.family == "linear":
            res = res * rel.y_scale
            if rel.intercept:
                res[:, 0] += rel.y_center
            sig = np.exp(flat[:, rel.n_features + i0]) * rel.y_scale
            res = np.concatenate([res, sig[:, None]], axis=1)
        return res

    def summary(self, scale: str = "original") -> str:
        """Mean, sd and 90% interval per parameter (in the user's units unless ``scale="scaled"``),
        the sampler's diagnostics and how much the privacy noise widens the intervals."""
        unit = ("coefficients in the features' own units" if scale == "original" else
                "coefficients of features scaled to [-1, 1] by their public bounds")
        lines = [f"noise-aware private GLM ({self.release.family}, n = {self.release.n}; {unit})"]
        if self.privacy is not None:
            lines.append(textwrap.indent(self.privacy.summary(), "  "))
        names = self.names(scale)
        mean, sd, ci = self.mean(scale), self.sd(scale), self.interval(0.9, scale)
        width = max(len(n) for n in names)
        lines.append(f"  {'':{width}}      mean        sd       5%      95%")
        for i, name in enumerate(names):
            lines.append(f"  {name:{width}}  {mean[i]:8.4g}  {sd[i]:8.4g} {ci[i, 0]:8.4g} {ci[i, 1]:8.4g}")
        dg = self.diagnostics
        if dg.get("method") == "hmc":
            rhat, acc = dg.get("max_rhat", float("nan")), dg.get("accept_rate", float("nan"))
            lines.append(f"  HMC: {self.draws.shape[0]} chains x {self.draws.shape[1]} draws, max R-hat "
                         f"{rhat:.3f}, acceptance {acc:.2f}")
            if dg.get("fallback"):
                lines.append(f"  (importance sampling failed its check: {dg['fallback'][5:-1]}; HMC "
                             "resampled "
                             "the same release, nothing more was charged)")
        else:
            lines.append(f"  Laplace-proposal importance sampling: ESS {dg.get('ess', float('nan')):.0f}, "
                         f"Pareto k-hat {dg.get('pareto_khat', float('nan')):.2f}")
        ratio = dg.get("privacy_width_ratio")
        if ratio:
            lo, hi = min(ratio), max(ratio)
            verdict = ("the privacy noise dominates" if hi >= NOISE_DOMINATES else
                       "the privacy noise is most of the width" if hi >= 2 else
                       "the sampling variability is most of the width")
            lines.append(f"  privacy: intervals {lo:.1f}-{hi:.1f}x the width without privacy (same records "
                         f"and model): {verdict}")
        lines.append(f"  covariate model: {self.settings.get('covariates', 'gaussian')}"
                     + ("" if scale == "scaled" else "; scaled coefficients: summary(scale='scaled')"))
        return "\n".join(lines)

    def _to_record(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        rel = self.release.to_dict()
        rel.pop("privacy")
        fields = {"release": rel, "diagnostics": self.diagnostics, "settings": self.settings,
                  "scaled_names": list(self.scaled_names)}
        arrays = {"draws": self.draws}
        if self.nuisance is not None:
            arrays["nuisance"] = self.nuisance
        return fields, arrays

    @classmethod
    def _from_record(cls, record: Record, **kwargs: Any) -> GLMPosterior:
        rel = GLMRelease.from_dict({**record.fields["release"], "privacy": None})
        rel = GLMRelease(**{**rel.__dict__, "privacy": record.privacy})
        names = tuple(record.fields.get("scaled_names") or record.param_names)  # older files: scaled names
        return cls(record.arrays["draws"], names, rel, record.privacy,
                   record.fields["diagnostics"], record.arrays.get("nuisance"), record.fields.get("settings"))


def param_names(rel: GLMRelease) -> tuple[str, ...]:
    names = (["intercept"] if rel.intercept else []) + list(rel.feature_names)
    if rel.family == "linear":
        names.append("log_sigma")
    return tuple(names)



def glm_posterior(
    release: GLMRelease,
    *,
    prior: GLMPrior | None = None,
    sampler: GLMSamplerOptions | None = None,
    seed: Any = None,
    warn: bool = True,
    covariates: str = "moment-matched",
) -> GLMPosterior:
    """The noise-aware posterior p(θ | z) of a released GLM statistic (post-processing only).

    Parameters
    ----------
    release
        The :class:`GLMRelease` (from :func:`dpinfer.release.glm.release_glm_statistics`).
    prior
        The analyst's :class:`GLMPrior` (default: its defaults).
    sampler
        :class:`GLMSamplerOptions` of the HMC run.
    seed
        Public randomness of the sampler (the release's noise is not involved).
    warn
        Warn (:class:`~dpinfer.errors.ConvergenceWarning`) when split R-hat exceeds 1.01.

    Returns
    -------
    GLMPosterior
        Draws of θ (coefficients on the scaled features; the linear family's ``log_sigma`` last);
        the covariate model's draws are kept as ``nuisance``.
    """
    if release.family not in FAMILIES:
        raise InvalidDataError(f"family must be one of {FAMILIES}, got {release.family!r}.")
    prior, opts = check_posterior_options(prior, sampler, seed)
    if np.asarray(release.z).shape != (release.layout.dim,):
        raise InvalidDataError(
            f"the released statistic has shape {np.asarray(release.z).shape}, expected "
            f"({release.layout.dim},) for this family and number of features."
        )
    if covariates not in COVARIATE_MODELS:
        raise InvalidDataError(f"covariates must be one of {COVARIATE_MODELS}, got {covariates!r}.")
    with torch_threads(opts.threads):
        return _glm_posterior(release, prior, opts, as_generator(seed), warn, covariates)


def _glm_posterior(release: GLMRelease, prior: GLMPrior, opts: GLMSamplerOptions,
                   rng: np.random.Generator, warn: bool, covariates: str) -> GLMPosterior:
    """:func:`glm_posterior` after its checks, under its torch threads."""
    model = GLMModel(release, prior, covariates)
    found: dict[str, float] = {}
    mode, cov = laplace(model, found)
    k = model.p_theta + int(model.linear)
    diagnostics: dict[str, Any] = {"method": opts.method, "laplace_mode": mode[:k].tolist(),
                                   "laplace_sd": np.sqrt(np.diag(cov))[:k].tolist(), **found}
    if warn and not found["laplace_converged"]:
        warnings.warn(
            "private GLM: the posterior mode was not found (Newton decrement "
            f"{found['newton_decrement']:.3g} after {found['lbfgs_iterations']:.0f} L-BFGS iterations and "
            "Newton steps), so the sampler starts from a wrong place and its draws are not this "
            "release's posterior. Resample the same release with a long HMC warm-up (nothing more is "
            "charged): post.resample(sampler=GLMSamplerOptions(method='hmc', warmup=2000, draws=8000)).",
            ConvergenceWarning, stacklevel=3,
        )
    method = opts.method
    if method == "laplace-is":
        draws, info = importance(model, mode, cov, opts, rng)
        diagnostics.update(info)
        problem = None
        if not info["pareto_khat"] <= 0.7:
            problem = (f"the importance weights' Pareto k-hat is {info['pareto_khat']:.2f} > 0.7 (the "
                       "Laplace "
                       "proposal misses the posterior's shape)")
        elif not info["ess"] >= MIN_IS_ESS:
            problem = (f"the importance weights' effective sample size is {info['ess']:.0f} of "
                       f"{opts.proposals} proposals (< {MIN_IS_ESS}: the draws repeat a few points)")
        if problem is not None and opts.fallback == "hmc":
            # post-processing of the same release: nothing is released or charged again
            diagnostics["fallback"] = f"hmc ({problem})"
            method = "hmc"
        elif problem is not None and warn:
            warnings.warn(
                f"private GLM: {problem}, so the means, sds and intervals are unreliable. Resample the same "
                f"release (nothing more is charged): {RESAMPLE_HMC}.",
                WeightDegeneracyWarning, stacklevel=3,
            )
    if method == "hmc":
        draws, info = hmc(model, mode, cov, opts, rng)
        rhat = split_rhat(draws)
        diagnostics.update(info, rhat=rhat[:k].tolist(), max_rhat=float(np.max(rhat)), method="hmc")
    names = param_names(release)
    ratio = draws[..., : model.p_theta].reshape(-1, model.p_theta).std(0, ddof=1) / nonprivate_sd(
        model, draws.reshape(-1, draws.shape[-1]).mean(0))
    diagnostics["privacy_width_ratio"] = ratio.tolist()
    if warn and np.max(ratio) >= NOISE_DOMINATES and found["laplace_converged"]:
        worst = int(np.argmax(ratio))
        warnings.warn(
            f"private GLM: the release's noise dominates: the interval of {names[worst]!r} is "
            f"{ratio[worst]:.0f}x the width the same records would give without privacy (the others "
            f"{np.min(ratio):.0f}-{np.max(ratio):.0f}x). It is a correct posterior of a weak release, "
            "mostly its prior where the ratio is large; more records, a larger epsilon or tighter public "
            "bounds (which set the noise) narrow it.",
            NoiseDominatesWarning, stacklevel=3,
        )
    if warn and method == "hmc" and not diagnostics["max_rhat"] <= 1.01:
        warnings.warn(
            f"private GLM: split R-hat {diagnostics['max_rhat']:.3f} > 1.01: the HMC chains disagree. "
            "Resample the same release with more warm-up and draws (nothing more is charged): "
            "post.resample(sampler=GLMSamplerOptions(method='hmc', warmup=1000, draws=8000)).",
            ConvergenceWarning, stacklevel=3,
        )
    return GLMPosterior(draws[..., :k], names, release, release.privacy, diagnostics,
                        nuisance=draws[..., k:], settings={"prior": asdict(prior), "sampler": asdict(opts),
                                                  "covariates": covariates})



__all__ = ["MIN_IS_ESS", "NOISE_DOMINATES", "RESAMPLE_HMC", "GLMPosterior", "NoiseDominatesWarning",
           "glm_posterior", "param_names"]
