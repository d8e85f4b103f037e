"""The result of a DPVI fit: the variational posterior, predictions, traces and the privacy report.

Saved in the common ``dpinfer.result`` format (:mod:`dpinfer.results.format`): the arrays
``params`` and ``elbo_trace`` (empty unless the trace is not confidential or
``include_confidential=True``), and the family, model and fit configuration as JSON fields. The
single JSON document (:meth:`DPVIResult.to_dict`, format ``dpinfer.dpvi/1``) is written beside the
result file for a path ending in ``.json`` (the CLI's ``--out fit.json``), as a readable copy;
:meth:`DPVIResult.load` of ``fit.json`` reads the ``fit.npz`` beside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from ...errors import InvalidDataError
from ...models.synthesis import synthesize_from
from ...privacy import PrivacyReport
from ...results.format import Record, ResultFile, draws_to_arviz, write_record
from ...results.synthetic import SyntheticData
from ...sizes import check_allocation
from .constraints import constrained_sample
from .design import apply_design
from .diagnostics import NOISE_DOMINATES
from .families import make_family
from .models import BUILTIN_MODELS, Model, make_model

FORMAT = "dpinfer.dpvi/1"
#: the default of ``interval``/``sd``'s ``widen``: posterior var + noise var
WIDEN_DEFAULT: str | None = "noise"


@dataclass
class DPVIResult(ResultFile):
    """A fitted Gaussian variational posterior q(θ).

    Attributes
    ----------
    family
        ``"meanfield"`` or ``"fullrank"``: the family the fit used (with ``family="auto"``, the
        one chosen; ``config["family_choice"]`` has the request and the reason).
    params
        The flat variational parameters (layout in :mod:`dpinfer.release.dpvi.families`).
    model_name, model_config
        The model (built-in models are rebuilt from these after :meth:`load`).
    privacy
        The privacy report (ε, δ, accountant, neighbouring relation, σ, q, T, C); ``None`` for a
        non-private fit.
    elbo_trace
        Array (k, 2) of (step, minibatch ELBO estimate). These values are computed on the
        confidential data *without noise*: they are recorded by default only for non-private
        fits; for private fits only with ``track_elbo=True``, which sets ``confidential_trace``.
    config
        The fit's settings (seed, optimizer, learning rate, sampling scheme, ...).
    """

    family: str
    params: np.ndarray
    model_name: str
    model_config: dict[str, Any]
    privacy: PrivacyReport | None
    elbo_trace: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))
    config: dict[str, Any] = field(default_factory=dict)
    confidential_trace: bool = False
    model: Model | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.params = np.asarray(self.params, dtype=np.float64)
        self.elbo_trace = np.asarray(self.elbo_trace, dtype=np.float64).reshape(-1, 2)
        self._family = make_family(self.family, int(self.model_config["dim"]))
        if self.model is None and self.model_name in BUILTIN_MODELS:
            self.model = make_model(self.model_name, **self.model_config)

    # -- the posterior ------------------------------------------------------------------------
    @property
    def private(self) -> bool:
        """Whether the fit was differentially private."""
        return self.privacy is not None

    @property
    def dim(self) -> int:
        return self._family.dim

    @property
    def param_names(self) -> tuple[str, ...]:
        """``config["feature_names"]`` when it names every coordinate, else ``theta_j``."""
        names = self.config.get("feature_names")
        if names is not None and len(names) == self.dim:
            return tuple(str(n) for n in names)
        return tuple(f"theta_{j}" for j in range(self.dim))

    def mean(self) -> np.ndarray:
        """Posterior mean of θ under q (the Gaussian's location ``u``)."""
        return self._family.mean(self.params)

    @property
    def covariance(self) -> np.ndarray:
        """Posterior covariance of θ under q."""
        return self._family.covariance(self.params)

    @property
    def std(self) -> np.ndarray:
        """Posterior standard deviations."""
        return np.sqrt(np.diag(self.covariance))

    def sample(self, n: int, seed: int | np.random.Generator | None = None) -> np.ndarray:
        """``n`` draws from q(θ), shape (n, dim) (post-processing: no privacy cost)."""
        rng = np.random.default_rng(seed)
        L = self._family.scale_tril(self.params)
        check_allocation(f"sample({n})", n, self.dim, copies=2)
        return self.mean() + rng.standard_normal((int(n), self.dim)) @ L.T

    def synthesize(self, n: int, X: Any, seed: Any = None) -> SyntheticData:
        """``n`` synthetic records from the posterior predictive: θ from this posterior, data from
        the model (:func:`dpinfer.models.synthesis.synthesize_from`). Post-processing of the
        release: no further privacy cost; the result's ``privacy_report()`` says so.
        ``X``: where the covariates come from, a DP covariate model
        (:func:`dpinfer.release.synthesis.release_covariate_model`) or
        :class:`~dpinfer.models.synthesis.PublicCovariates` (copied, stated NOT protected); a raw
        array is refused, since it may be the confidential records."""
        return synthesize_from(self, n, seed, self.model, covariates=X)
    # -- predictions ---------------------------------------------------------------------------
    def _check_X(self, X: Any) -> np.ndarray:
        design = self.config.get("design")
        X = apply_design(design, X) if isinstance(design, dict) else np.asarray(X, dtype=np.float64)
        constrained = getattr(self.model, "constrained", False)
        width = getattr(self.model, "n_features", self.dim) if constrained else self.dim
        if X.ndim != 2 or X.shape[1] != width:
            raise InvalidDataError(f"X must have shape (n, {width}), got {X.shape}.")
        return X

    def constrained_sample(self, n: int = 1000, seed: Any = None) -> dict[str, np.ndarray]:
        """Draws of the constrained parameters by name (a model declared with ``params=``)."""
        if self.model is None:
            raise InvalidDataError("constrained_sample needs the model: load the fit with model=...")
        return constrained_sample(self.model, self._family, self.params, n, seed)

    def predict_proba(
        self, X: Any, method: str = "probit", n_samples: int = 1000, seed: int = 0
    ) -> np.ndarray:
        """P(y = 1 | x) for a logistic model (``"probit"``: the authors' approximation; ``"mc"``)."""
        if self.model is None or not hasattr(self.model, "predict_proba"):
            raise InvalidDataError(
                f"predict_proba needs a classification model; this fit used {self.model_name!r}."
            )
        X = self._check_X(X)
        samples = self.sample(n_samples, seed) if method == "mc" else None
        return self.model.predict_proba(self.mean(), self.covariance, X, method=method, samples=samples)

    def predict(self, X: Any) -> np.ndarray:
        """Predicted class (threshold 0.5) for a logistic model, or predictive mean for Poisson."""
        if self.model is not None and hasattr(self.model, "predict_mean"):
            return self.model.predict_mean(self.mean(), self.covariance, self._check_X(X))
        return (self.predict_proba(X) >= 0.5).astype(np.float64)

    def accuracy(self, X: Any, y: Any) -> float:
        """Classification accuracy on (X, y) (threshold 0.5 on :meth:`predict_proba`)."""
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        return float(np.mean((self.predict_proba(X) >= 0.5) == (y == 1.0)))

    # -- persistence ---------------------------------------------------------------------------
    def to_dict(self, include_confidential: bool = False) -> dict[str, Any]:
        """A JSON-ready dictionary; a confidential ELBO trace is left out unless asked for."""
        trace = self.elbo_trace
        if self.confidential_trace and not include_confidential:
            trace = np.zeros((0, 2))
        return {
            "format": FORMAT,
            "family": self.family,
            "params": self.params.tolist(),
            "mean": self.mean().tolist(),
            "covariance": self.covariance.tolist(),
            "model_name": self.model_name,
            "model_config": self.model_config,
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
            "elbo_trace": trace.tolist(),
            "confidential_trace": bool(self.confidential_trace and include_confidential),
            "config": self.config,
        }

    def _to_record(self, include_confidential: bool = False) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        keep_trace = include_confidential or not self.confidential_trace
        fields = {
            "family": self.family,
            "model_name": self.model_name,
            "model_config": self.model_config,
            "config": self.config,
            "confidential_trace": bool(self.confidential_trace and include_confidential),
        }
        trace = self.elbo_trace if keep_trace else np.zeros((0, 2))
        return fields, {"params": self.params, "elbo_trace": trace}

    @classmethod
    def _from_record(cls, record: Record, model: Model | None = None, **kwargs: Any) -> DPVIResult:
        f = record.fields
        return cls(
            family=f["family"],
            params=record.arrays["params"],
            model_name=f["model_name"],
            model_config=f["model_config"],
            privacy=record.privacy,
            elbo_trace=record.arrays["elbo_trace"],
            config=f.get("config", {}),
            confidential_trace=bool(f.get("confidential_trace", False)),
            model=model,
        )

    def save(self, path: str | Path, include_confidential: bool = False) -> Path:
        """Write the result in the common ``dpinfer.result`` format; returns the result file.

        A path ending in ``.json`` (what ``dpinfer dpvi --out fit.json`` names) writes the result
        to ``fit.npz`` and a readable copy of :meth:`to_dict` to ``fit.json``, as ABCDP does;
        :meth:`load` of either name reads the ``.npz``. A confidential ELBO trace is left out
        unless asked for.
        """
        path = Path(path)
        if path.suffix == ".json":
            npz = write_record(self, path.with_suffix(".npz"), *self._to_record(include_confidential))
            path.write_text(json.dumps(self.to_dict(include_confidential), indent=2))
            return npz
        return write_record(self, path, *self._to_record(include_confidential))

    @classmethod
    def from_dict(cls, data: dict[str, Any], model: Model | None = None) -> DPVIResult:
        """Inverse of :meth:`to_dict`."""
        if data.get("format") != FORMAT:
            raise InvalidDataError(f"not a DPVI result file (format {data.get('format')!r}).")
        privacy = None if data["privacy"] is None else PrivacyReport.from_dict(data["privacy"])
        return cls(
            family=data["family"],
            params=np.asarray(data["params"]),
            model_name=data["model_name"],
            model_config=data["model_config"],
            privacy=privacy,
            elbo_trace=np.asarray(data["elbo_trace"]),
            config=data.get("config", {}),
            confidential_trace=bool(data.get("confidential_trace", False)),
            model=model,
        )

    @classmethod
    def load(cls, path: str | Path, model: Model | None = None) -> DPVIResult:  # type: ignore[override]
        """Read a result written by :meth:`save` (pass ``model`` for a custom model).

        ``fit.json`` reads the ``fit.npz`` written beside it."""
        path = Path(path)
        if path.suffix == ".json" and path.with_suffix(".npz").exists():
            path = path.with_suffix(".npz")
        return super().load(path, model=model)

    def to_arviz(self, n_draws: int = 4000, seed: Any = 0) -> Any:
        """An ``arviz.InferenceData`` with ``n_draws`` draws from q (one chain) under
        :attr:`param_names`, with the fit's privacy report on the ``posterior`` group.

        arviz is optional and imported here; install it with ``pip install arviz``.
        """
        return draws_to_arviz(self.sample(int(n_draws), seed), self.param_names, self.privacy,
                              inference=f"dpvi-{self.family}")

    # -- what the fit does not know (:mod:`dpinfer.release.dpvi.diagnostics`) -------------------
    @property
    def diagnostics(self) -> dict[str, Any] | None:
        """The fit's noise spread and convergence check (``config["diagnostics"]``), or None."""
        d = self.config.get("diagnostics")
        return d if isinstance(d, dict) else None

    @property
    def noise_sd(self) -> np.ndarray:
        """The sd that the privacy noise alone induces in the returned mean, per coordinate
        (equation (3) of :mod:`dpinfer.release.dpvi.diagnostics`; zeros for a non-private fit or a
        fit without an averaged tail)."""
        d = self.diagnostics
        if d is None or "noise_sd" not in d:
            return np.zeros(self.dim)
        return np.asarray(d["noise_sd"], dtype=np.float64)

    @property
    def converged(self) -> bool | None:
        """Whether the tail-drift check passed (None when it was not run)."""
        d = self.diagnostics
        return None if d is None else bool(d["converged"])

    def sd(self, widen: str | None = WIDEN_DEFAULT) -> np.ndarray:
        """The sd of the intervals: the posterior sd (``widen=None``) or, with ``widen="noise"``
        (the default), sqrt(posterior var + noise_sd²): the spread of the returned mean over the
        privacy noise added to the posterior's (``benchmarks/dpvi_calibration.py`` measures both)."""
        if widen is None:
            return self.std
        if widen != "noise":
            raise InvalidDataError(f"widen must be 'noise' or None, got {widen!r}.")
        return np.sqrt(self.std**2 + self.noise_sd**2)

    def interval(self, level: float = 0.95, widen: str | None = WIDEN_DEFAULT) -> np.ndarray:
        """Central ``level`` intervals mean ± z·:meth:`sd` (Gaussian q), shape ``(dim, 2)``
        (the common :class:`~dpinfer.results.format.ResultFile` layout; ``widen`` as :meth:`sd`)."""
        level = float(level)
        if not 0.0 < level < 1.0:
            raise InvalidDataError(f"level must lie in (0, 1), got {level!r}.")
        z = float(special.ndtri(0.5 + level / 2.0))
        half = z * self.sd(widen)
        return np.column_stack([self.mean() - half, self.mean() + half])

    def summary(self, level: float = 0.9) -> str:
        """A short table: mean, posterior sd, noise sd and the widened ``level`` interval per
        coordinate, the checks, and a one-line privacy statement (the other details are in
        ``privacy.details``)."""
        lines = [f"DPVI {self.family} posterior for model {self.model_name!r} (dim {self.dim})"]
        choice = self.config.get("family_choice")
        if isinstance(choice, dict) and choice.get("requested") == "auto":
            lines.append(f"  family: {choice.get('reason')}")
        names = self.param_names
        w = max(8, *(len(n) for n in names))
        lo, hi = self.interval(level).T
        head = f"  {'':<{w}} {'mean':>10} {'sd':>9} {'noise_sd':>9}  {int(round(100 * level))}% interval"
        lines.append(head)
        mean, sd, nsd = self.mean(), self.std, self.noise_sd
        for j, name in enumerate(names):
            lines.append(
                f"  {name:<{w}} {mean[j]:>10.4g} {sd[j]:>9.3g} {nsd[j]:>9.3g}  [{lo[j]:.4g}, {hi[j]:.4g}]"
            )
        d = self.diagnostics
        if d is not None:
            ratio = float(np.max(d["noise_ratio"])) if d["noise_ratio"] else 0.0
            dom = d.get("noise_dominance") or d["noise_ratio"]  # files written before issue 39: the ratio
            lines.append(
                f"  noise sd / posterior sd: max {ratio:.2f}"
                + (" (the noise dominates)" if dom and float(np.max(dom)) > NOISE_DOMINATES else "")
                + f"; converged: {'yes' if d['converged'] else 'NO'} "
                f"(tail drift z max {max(d['drift_z'], default=0.0):.1f})"
            )
        if self.privacy is None:
            lines.append("  NON-PRIVATE fit")
        else:
            p = self.privacy
            lines.append(
                f"  privacy: ({p.epsilon:.4g}, {p.delta:.3g})-DP, {p.neighbouring}, accountant "
                f"{p.accountant!r}, sigma {p.details.get('noise_multiplier', float('nan')):.4g}, "
                f"q {p.details.get('sampling_rate')}, T {p.details.get('steps')}, "
                f"clip {p.details.get('clip')}"
                + ("" if p.accounted else "; NOT ACCOUNTED (no ledger)")
                + ("; INSECURE RNG: no privacy" if p.insecure_rng else "")
            )
        return "\n".join(lines)
