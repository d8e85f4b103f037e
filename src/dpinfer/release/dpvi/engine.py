"""The DPVI engine: differentially private variational inference (Jälkö, Dikmen & Honkela, UAI 2017).

Algorithm (Algorithm 1 of the paper, with the code-level details of the DPVI authors' code (Jälkö, Dikmen
& Honkela 2017, DPBayes/DPVI-code)): for
t = 1..T draw a minibatch, draw θ = u + L ε by reparameterisation, compute every example's
gradient of its ELBO term with respect to the variational parameters, clip each to L2 norm C,
sum, add N(0, (σC)² I), and take a windowed-AdaGrad (or Adam) ascent step.

Privacy
-------
The release is the sequence of T noisy gradient sums (everything else is post-processing). It is
described by a :class:`~dpinfer.privacy.PoissonSubsampledGaussianEvent` (q, σ, T) under the
declared neighbouring relation (a :class:`~dpinfer.privacy.SampledWithReplacementGaussianEvent`
for the paper's batches), and accounted by the privacy core:

* ``sampling="poisson"`` (default): each record joins each batch independently with probability q,
  which is what the PLD and RDP accountants analyse. Under add-remove one record moves the sum by
  at most C, under replace-one by at most 2C; the accountants handle both. Default accountant
  ``"pld"`` and relation ``"replace-one"`` (the paper's bounded DP).
* ``sampling="with-replacement"``: the paper's fixed-size batches of B = int(qN) records drawn
  with replacement, accounted only with the paper's ``"advanced"`` accountant (subsampling
  amplification + advanced composition). This is the *paper's* analysis: it treats the batch as
  a q-subsample and ignores that a record can be drawn twice in one batch (probability about
  B²/(2N²) per step). Use it to reproduce the paper, not for new releases.

Per-example terms and the relation: with ``per_example="elbo"`` (the authors' split) every
example's term carries (log p + H)/|B|, so the batch size enters every clipped row. Under
replace-one |B| is the same for neighbouring data sets (it depends on the coin flips only), so a
record still moves the sum by at most 2C; under add-remove it would not, hence add-remove requires
``per_example="likelihood"`` (scale 1/q is public; prior and entropy outside the clipping). For
the same reason n (and the expected batch size qn) is left out of the result under add-remove.

Defaults (the posterior of the user's model, not a clipping artefact): ``per_example="theta"``
clips each record's likelihood gradient with respect to θ (at the 4 shared Monte Carlo draws)
*before* the 1/q scaling and maps the privatised sum to the variational parameters afterwards
(post-processing; :mod:`dpinfer.release.dpvi.gradients`), with the prior and entropy gradients exact
outside the clipping, and ``clip="auto"`` adapts C privately to the 0.995 quantile of the
per-example norms (Andrew et al. 2021; :mod:`dpinfer.release.dpvi.optim`), so almost no row is clipped and
the fixed point is the ELBO optimum up to the noise. When a public noise level is small
(λ <= 0.05, :func:`~dpinfer.release.dpvi.optim.noise_error_per_clip`) the defaults also take the full-rank
family (``family="auto"``, D <= 30: mean-field VI understates the sd of a correlated posterior
at any ε), the 0.999 quantile and AdaGrad lr 0.05. On logistic, probit, Poisson and
unknown-scale regressions (n = 2000) the means land within 0.15 posterior sd of the exact
posterior on average over seeds at ε = 100 and the sd within 8% (examples/dpvi/README.md); one
fit at ε ≤ 2 is several posterior sd off, which its ``noise_sd`` and :class:`DPVINoiseWarning`
say (:mod:`dpinfer.release.dpvi.diagnostics`; ``benchmarks/dpvi_calibration.py``).
``per_example="elbo"`` with ``clip=5`` is the DPVI paper's reproduction:
its rows carry the 1/q factor, nearly all are clipped, and the means land about 20
posterior sd from the exact posterior at any ε. The adaptive clip needs the public qn (replace-one,
Poisson batches); elsewhere give a numeric clip. Its private count also estimates the clipped
fraction (``report.details["clipped_fraction"]``; with a numeric clip on request,
``clip_count=True``); a :class:`UserWarning` says when more than half the rows were clipped. A
non-private fit (``private=False``) clips nothing unless a numeric clip is given.

Noise multiplier convention: σ here is relative to C (noise std σC), as in DP-SGD. The authors'
code adds N(0, (2σ_paper C)²), so σ = 2σ_paper; both are in the report.

Accounting convention for replace-one with the advanced accountant:

* ``paper_accounting=False`` (default, exact): add-remove ε at δ_ar is converted to replace-one by
  group privacy, (2ε, (1 + e^ε)δ_ar), with δ_ar solved so that (1 + e^ε)δ_ar = δ;
* ``paper_accounting=True``: the authors' ``2·act(2σ_paper, δ/2, δ', T, q)``, which takes the group
  δ to be 2·(δ/2) = δ, dropping the e^ε factor (slightly optimistic), and keeps the classical
  Gaussian bound even where it is not valid (ε0 >= 1).

The fit is charged to the ledger (when given) before the first noisy gradient is computed, and
every input is validated (and the noise calibrated) before that. The ledger composes the fit's
event with its own accountant; with-replacement fits are therefore only charged to data sets
budgeted with the ``"advanced"`` accountant.

Randomness: everything the privacy analysis treats as secret — the minibatches (amplification by
subsampling holds only if nobody knows which records were in which batch) and the gradient noise —
is drawn by the privacy core (:func:`dpinfer.privacy.subsampling.subsample`,
:mod:`dpinfer.privacy.mechanisms.gaussian_sum`) from the PrivacyRNG (the OS CSPRNG) of the fit's
:class:`~dpinfer.privacy.context.ReleaseContext`, is never derived from the user's ``seed``, and
nothing that could reproduce it is stored in the result. The user's ``seed``
drives only what the analysis treats as public: the Monte Carlo draws of the reparameterisation
and (with ``init_scale > 0``) the initialisation. Two private fits with the same seed therefore
follow different trajectories; a non-private baseline (``private=False``) is fully reproducible
from its seed (its batches come from the seed too).

A record whose per-example gradient is not finite contributes a zero row (inside the clipped,
bounded contribution), so every fit completes whatever one record holds: whether a fit is released
must not itself depend on one record.

Without a ledger the fit is *unaccounted*: a :class:`~dpinfer.privacy.PrivacyWarning` is emitted
and the report says ``accounted: false``.

Pipeline
--------
:meth:`DPVI.fit` is five steps, each its own function: validate
(:func:`dpinfer.release.dpvi.validation.validate_fit`) → plan privacy
(:func:`dpinfer.release.dpvi.planning.plan_fit`,
which calibrates with :func:`~dpinfer.release.dpvi.planning.plan_privacy`, then the ledger checks) → charge
the whole fit's event once through the fit's :class:`~dpinfer.privacy.context.ReleaseContext`
(``context=``; :meth:`~dpinfer.privacy.context.ReleaseContext.release`; each step then draws
inside that release) → loop (:func:`dpinfer.release.dpvi.loop.run_loop`) → result (report from
:func:`dpinfer.release.dpvi.planning.fit_report`). Besides ε, δ, the seed and the context, its
options come in three groups (:mod:`dpinfer.release.dpvi.options`): ``privacy=PrivacyOptions(...)``,
``optimizer=OptimizerOptions(...)`` and ``training=TrainingOptions(...)``.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ...data.inputs import bind_dataset, is_source, release_data
from ...errors import (
    InvalidDataError,
    InvalidPrivacyParameterError,
    NonPrivateResultWarning,
    refuse_removed_keywords,
)
from ...execution.threads import torch_threads
from ...models.data_spec import DataSpec, data_spec
from ...privacy.context import FLAT_RELEASE_KEYWORDS, ReleaseContext
from .design import prepare_design
from .diagnostics import Trajectory, diagnose, warn_diagnostics
from .families import GaussianFamily, choose_family, make_family
from .loop import noise_error, prepare_loop, run_loop, warn_clipped
from .models import Model
from .options import (
    OptimizerOptions,
    PrivacyOptions,
    TrainingOptions,
    check_group,
    merge_privacy,
    refuse_moved,
)
from .planning import check_ledger, epsilon_spent, fit_report, plan_fit, warn_with_replacement
from .result import DPVIResult
from .sampling import draw_batch
from .validation import FitSpec, validate_fit

#: What a ``private=False`` fit says about itself (``config["privacy_warning"]`` and its warning).
NON_PRIVATE_FIT = (
    "NON-PRIVATE: fitted to the confidential data without noise; the result is NOT "
    "differentially private: do not publish it or anything computed from it. For a private fit call "
    "DPVI(...).fit(X, y, epsilon=..., delta=..., context=ReleaseContext(ledger=..., dataset=...)) "
    "(private=True, the default)."
)

if TYPE_CHECKING:
    from .planning import PrivacyPlan


class DPVI:
    """Differentially private variational inference for a :class:`~dpinfer.release.dpvi.models.Model`.

    Parameters
    ----------
    model
        The model (e.g. ``LogisticRegression(dim)``).
    family
        ``"auto"`` (default: full-rank for D <= 30 with ``per_example="theta"`` when the
        gradient noise is small, mean-field otherwise;
        :func:`~dpinfer.release.dpvi.families.choose_family`), ``"meanfield"`` (the paper's) or
        ``"fullrank"``. Each fit resolves ``"auto"`` against its own ``per_example`` and σ; the
        family used and the reason are in ``result.family`` and ``result.config["family_choice"]``.

    Examples
    --------
    >>> from dpinfer.datasets import load_abalone
    >>> from dpinfer.release.dpvi import DPVI, LogisticRegression, PrivacyOptions, TrainingOptions
    >>> d = load_abalone()
    >>> fit = DPVI(LogisticRegression(8)).fit(
    ...     d.X_train, d.y_train, epsilon=1.0, delta=1e-5, privacy=PrivacyOptions(clip=5.0),
    ...     training=TrainingOptions(sampling_rate=0.05, steps=1000), seed=1)
    >>> fit.accuracy(d.X_test, d.y_test)  # doctest: +SKIP
    """

    def __init__(self, model: Model, family: str = "auto") -> None:
        if not isinstance(model, Model):
            raise InvalidDataError(f"model must be a dpinfer.release.dpvi Model, got {type(model).__name__}.")
        self.model = model
        self.requested_family = family
        self._family: GaussianFamily | None = None
        self._family_reason = "requested"
        if model.dim is not None:  # else built at the first fit, from the data's columns
            chosen, reason = choose_family(family, model.dim)  # the default mode's choice until a fit
            self._family, self._family_reason = make_family(chosen, model.dim), reason
        elif family not in ("auto", "meanfield", "fullrank"):
            choose_family(family, 1)  # an unknown name is refused now
        self._plan: PrivacyPlan | None = None
        self._steps_done = 0

    @property
    def family(self) -> GaussianFamily:
        """The variational family of the next (or last) fit; assigning one fixes it (no ``auto``).

        A model whose dim comes from the data has none before its first fit."""
        if self._family is None:
            raise InvalidDataError(
                f"{type(self.model).__name__}() takes its dim from the data: the family exists after the "
                "first fit (or give the model its dim)."
            )
        return self._family

    @family.setter
    def family(self, value: GaussianFamily) -> None:
        self._family, self.requested_family, self._family_reason = value, value.name, "requested"

    def _resolve_family(self, spec: FitSpec, noise_multiplier: float) -> None:
        """Resolve ``family="auto"`` against this fit's per-example mode and public noise level."""
        if self.requested_family != "auto":
            return
        lam = noise_error(spec, noise_multiplier, self.model.dim)
        chosen, self._family_reason = choose_family("auto", self.model.dim, spec.per_example, lam)
        if self._family is None or chosen != self._family.name or self._family.dim != self.model.dim:
            self._family = make_family(chosen, self.model.dim)

    def _fit_dim(self, X: Any, intercept: bool, *, defaulted: bool, offset: bool) -> None:
        """Set a data-sized model's dim from the design, or check a given dim against it (issue 40:
        the intercept default is True, as ``private_glm``'s; it was False). A dim that counts the
        feature columns only, with the intercept left to its default, is the earlier convention:
        refused with a message naming both new spellings (nothing is charged yet)."""
        model = self.model
        if not model.regression or np.ndim(X) != 2:
            return
        cols = int(np.shape(X)[1]) - int(offset)
        if model.dim_from_data:
            model.dim = cols
            if self.requested_family != "auto" and (self._family is None or self._family.dim != cols):
                self._family = make_family(self.requested_family, cols)
            return
        if model.dim == cols:
            return
        k = cols - int(intercept)
        name = type(model).__name__
        if defaulted and intercept and model.dim == k:
            raise InvalidDataError(
                f"{name}({model.dim}) for {k} feature column(s) counts no intercept, but DPVI.fit's "
                "intercept default is now True, as private_glm's: use "
                f"{name}() (dim from the data) for the model with an intercept, or "
                "data=dpinfer.DataSpec(intercept=False) for the model without one. Nothing was charged."
            )
        raise InvalidDataError(
            f"{name}({model.dim}) but the design has {cols} column(s) ({k} feature(s)"
            f"{' + intercept' if intercept else ''}): use {name}() to take dim from the data. Nothing was "
            "charged."
        )

    def privacy_spent(self, delta: float | None = None) -> float:
        """ε spent so far by the running (or last) private fit at ``delta`` (default: its δ):
        the plan's accountant evaluated for the steps completed (callable from ``callback``;
        Opacus's ``get_epsilon``). 0.0 before the first step.

        Raises
        ------
        InvalidPrivacyParameterError
            No private fit has been planned on this object.
        """
        if self._plan is None:
            raise InvalidPrivacyParameterError("no private fit has been planned on this DPVI object.")
        return epsilon_spent(self._plan, self._steps_done, delta)

    get_epsilon = privacy_spent

    @refuse_removed_keywords(FLAT_RELEASE_KEYWORDS)
    def fit(
        self,
        X: Any,
        y: Any,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        privacy: PrivacyOptions | None = None,
        optimizer: OptimizerOptions | None = None,
        training: TrainingOptions | None = None,
        private: bool = True,
        seed: int | np.random.SeedSequence | None = None,
        context: ReleaseContext | None = None,
        privacy_plan: PrivacyPlan | None = None,
        data: DataSpec | None = None,
        **removed: Any,
    ) -> DPVIResult:
        """Fit q(θ) to the posterior of the model given (X, y) (the pipeline of the module docstring).

        Parameters
        ----------
        X, y
            Training features (n, dim) and targets (n,).
        epsilon, delta
            The privacy target: σ is calibrated to (ε, δ) with the accountant of ``privacy``. Give
            ``privacy=PrivacyOptions(noise_multiplier=σ)`` instead of ``epsilon`` to fix σ and
            have the ε it gives reported. Either may instead be set in ``privacy``, not in both.
        privacy
            :class:`~dpinfer.release.dpvi.options.PrivacyOptions`: σ, the clip (``"auto"``, the
            default: adaptive and private, replace-one and Poisson batches only; or the
            per-example L2 norm C; None only for ``private=False``), the clipped-fraction count,
            the quantile of the adaptive clip, the accountant (``"pld"`` for Poisson batches,
            ``"advanced"`` for the paper's with-replacement batches), the neighbouring relation,
            the sampling scheme and the authors' ``2·act(2σ_paper, δ/2, δ')`` convention (module
            docstring).
        optimizer
            :class:`~dpinfer.release.dpvi.options.OptimizerOptions`: ``"adagrad"`` (windowed,
            window 10; the paper's, lr 0.1 for DP), ``"adam"`` or ``"sgd"``; ``lr=None``: 0.1, or
            0.05 for AdaGrad when the noise is small.
        training
            :class:`~dpinfer.release.dpvi.options.TrainingOptions`: q = 0.05, T = 1000 (or a
            schedule of phases, :mod:`dpinfer.release.dpvi.schedule`), the per-example split
            (``"theta"`` with 4 draws; ``"elbo"`` with 1 draw reproduces the DPVI paper; see
            :mod:`dpinfer.release.dpvi.gradients`), tail averaging of the iterates, the float type,
            the ELBO trace (non-private fits only by default), the device (``"cpu"``, ``"cuda"``,
            ``"auto"``), a progress bar and a per-step ``callback(step, params)`` (which may call
            :meth:`privacy_spent`).
        private
            ``False`` runs the same algorithm without clipping (unless a numeric clip is given) or
            noise and returns a result with ``privacy=None``: a non-private baseline only. It warns
            (:class:`~dpinfer.errors.NonPrivateResultWarning`) and the result says ``NON-PRIVATE``
            (its summary and ``config["privacy_warning"]``).
        seed
            Simulation seed: Monte Carlo draws and initialisation only. The minibatches and the
            noise of a private fit never depend on it (module docstring).
        context
            The :class:`~dpinfer.privacy.context.ReleaseContext` of a private fit: the ledger and
            data set the fit is charged to before any noisy gradient is computed, and the source
            of the minibatches and the noise (``None``: unaccounted, with a warning, and a fresh
            OS-CSPRNG :class:`~dpinfer.privacy.PrivacyRNG`; tests pass
            ``ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(...))``). Its label
            defaults to ``"dpvi"``. Its data set must be the schema's when ``data`` has one. The
            flat ``ledger=``, ``dataset=`` and ``privacy_rng=`` keywords are refused with a
            :class:`TypeError` naming ``context=ReleaseContext(...)``, as by every release.
        privacy_plan
            A :class:`~dpinfer.release.dpvi.planning.PrivacyPlan` from
            :func:`~dpinfer.release.dpvi.planning.plan_privacy`
            to reuse (repeated fits with the same q, T and relation skip the calibration and
            accounting); replaces epsilon, noise_multiplier, accountant and the accounting options.

        data
            :class:`~dpinfer.models.data_spec.DataSpec`, the one description of the data (which
            ``private_glm`` takes too): the design (:mod:`dpinfer.release.dpvi.design`): the
            intercept (``None``, the default: ``True`` for the built-in regressions, a first
            column of ones named ``"intercept"``; the model's dim, when given, counts it;
            ``LogisticRegression()`` takes it from the data), public ``bounds``
            (``{column: (lo, hi)}``, one pair per column or one for all) that scale each feature
            column to [−1, 1] (data outside them: an error, nothing charged), a per-record offset
            of the linear predictor (PoissonRegression's exposure, log t), the coordinate names
            (default: a table's own string labels), which label ``param_names``, ``summary()``,
            ``to_arviz()`` and the warnings, and the data set's public
            :class:`~dpinfer.data.Schema`: ``bounds`` default to its declared bounds, the data are
            refused if they do not match it, and the context must charge its data set. With a
            data source as ``X`` (a file, a DuckDB query, a table), ``y`` (and ``offset``) name
            its columns (:mod:`dpinfer.data.inputs`). ``y_bounds`` and ``offset_bounds`` (the
            GLM's) are refused: the fit's clipping bounds each record's influence. The earlier
            keywords ``intercept=``, ``bounds=``, ``offset=``, ``feature_names=`` and ``schema=``
            are refused with a message naming ``data=DataSpec(...)``; so is ``DataOptions``, which
            ``DataSpec`` replaced.

        Returns
        -------
        DPVIResult

        Raises
        ------
        TypeError
            A group of the wrong type, ε or δ given twice, a context that is not a
            :class:`~dpinfer.privacy.context.ReleaseContext`, or an unknown keyword (each setting
            other than those above is a field of one of the three groups).
        """
        refuse_moved(removed)
        p_opts = merge_privacy(privacy, epsilon, delta)
        o_opts = check_group("optimizer", optimizer, OptimizerOptions)
        t_opts = check_group("training", training, TrainingOptions)
        d_opts = data_spec(data)
        if d_opts.y_bounds is not None or d_opts.offset_bounds is not None:
            raise InvalidDataError(
                "DPVI.fit does not use DataSpec(y_bounds=..., offset_bounds=...) (the GLM's bounds of the "
                "response and the offset): its clipping bounds each record's influence; leave them unset. "
                "Nothing was charged."
            )
        bounds, offset, schema = d_opts.bounds, d_opts.offset, d_opts.schema
        feature_names = d_opts.feature_names
        intercept = self.model.regression if d_opts.intercept is None else d_opts.intercept
        if not isinstance(intercept, (bool, np.bool_)):  # "no" would be read as True
            raise InvalidDataError(
                f"intercept must be True or False, got {intercept!r}. Nothing was charged."
            )
        if context is not None and not isinstance(context, ReleaseContext):
            raise TypeError(f"context must be a ReleaseContext, got {type(context).__name__}.")
        if schema is not None or isinstance(y, str) or isinstance(offset, str) or is_source(X):
            # a data source and/or the data set's public schema (dpinfer.data.inputs): the
            # columns, the bounds (an explicit bounds= overrides) and the data set's name
            rd = release_data(X, y, schema=schema, feature_names=feature_names, offset=offset)
            X, y, offset, feature_names = rd.X, rd.y, rd.offset, rd.names
            bounds = bounds if bounds is not None else rd.bounds
            bind_dataset(rd.schema, context)
        ledger, dataset = (context.ledger, context.dataset) if context is not None else (None, None)
        # 1. validate everything (nothing planned, charged or released yet)
        X, names, design = prepare_design(
            self.model, X, intercept=bool(intercept), bounds=bounds, offset=offset,
            feature_names=feature_names,
        )
        defaulted = d_opts.intercept is None
        self._fit_dim(X, bool(intercept), defaulted=defaulted, offset=offset is not None)
        spec = validate_fit(
            self.model, X, y, p_opts, o_opts, t_opts, private=private, ledger=ledger, dataset=dataset,
            offset=offset is not None,
        )
        # 2. plan privacy: calibrate or account, then the ledger checks (before touching the noise)
        plan = plan_fit(spec, privacy_plan)
        self._resolve_family(spec, plan.noise_multiplier if plan is not None else 0.0)
        self._plan, self._steps_done = plan, 0
        # a private fit's secret randomness and charge go through one ReleaseContext; a
        # non-private fit has none
        release = ReleaseContext.of(context, label="dpvi") if plan is not None else None
        warn_with_replacement(plan, spec.sampling)
        check_ledger(plan, spec.sampling, ledger, dataset)
        state = prepare_loop(self.model, self.family, spec, release, seed)

        # 3. charge, before the first noisy gradient; 4. the loop
        callback = t_opts.callback

        def on_step(t: int, params: np.ndarray) -> None:
            self._steps_done = t + 1
            if callback is not None:
                callback(t, params)

        record = Trajectory()

        def loop(_: Any = None) -> tuple[torch.Tensor, list[tuple[float, float]], dict[str, Any] | None]:
            return run_loop(
                self.model,
                self.family,
                spec,
                state,
                plan.noise_multiplier if plan is not None else 0.0,
                release,
                draw=draw_batch,
                progress=t_opts.progress,
                callback=on_step,
                record=record,
            )

        with torch_threads(spec.threads):
            if release is None:  # a non-private fit releases nothing and is never charged
                params, trace, clipping = loop()
            else:  # the whole fit's event, charged (or warned unaccounted) once; each step draws inside
                params, trace, clipping = release.release(plan.event, loop, what="DPVI fit")  # type: ignore[union-attr]
        warn_clipped(clipping)
        # 5. the result, with its noise spread and convergence check (post-processing)
        result = self._result(spec, plan, release, state, params, trace, clipping)
        if names is not None:
            result.config["feature_names"] = names
        if design is not None:
            result.config["design"] = design
        if plan is None:  # a non-private baseline: fitted to the confidential data without noise
            result.config["privacy_warning"] = NON_PRIVATE_FIT
            warnings.warn(f"DPVI.fit(private=False): {NON_PRIVATE_FIT}", NonPrivateResultWarning,
                          stacklevel=2)
        diag = diagnose(record, result.covariance, spec.steps)
        if diag is not None:
            result.config["diagnostics"] = diag.to_dict()
            warn_diagnostics(result, diag, plan.epsilon if plan is not None else None)
        return result

    def _result(
        self,
        spec: FitSpec,
        plan: PrivacyPlan | None,
        context: ReleaseContext | None,
        state: Any,
        params: torch.Tensor,
        trace: list[tuple[float, float]],
        clipping: dict[str, Any] | None = None,
    ) -> DPVIResult:
        report = None
        if plan is not None and context is not None:
            report = fit_report(
                plan, spec, insecure_rng=context.insecure, accounted=context.accounted, clipping=clipping
            )
        o, t = spec.optimizer_options, spec.training
        config = {
            # the seed reproduces only the public randomness (Monte Carlo draws, initialisation)
            "seed_entropy": str(state.seed.entropy),
            "seed_spawn_key": list(state.seed.spawn_key),
            "optimizer": o.optimizer,
            "lr": float(spec.optimizer.lr),
            "steps": spec.steps,
            "sampling_rate": spec.q,
            "sampling": spec.sampling,
            "clip": "auto" if spec.adaptive else spec.clip,
            "per_example": spec.per_example,
            "family_choice": {
                "requested": self.requested_family,
                "chosen": self.family.name,
                "reason": self._family_reason,
            },
            "average": bool(spec.training.average),
            "schedule": None if spec.phases is None else [p.to_dict() for p in spec.phases],
            "mc_samples": spec.mc_samples,
            "n_train": spec.n if (plan is None or plan.event.neighbouring == "replace-one") else None,
            "private": spec.private,
            "dtype": t.dtype,
            **({} if spec.device.type == "cpu" else {"device": str(spec.device)}),
        }
        return DPVIResult(
            family=self.family.name,
            params=params.detach().to(torch.float64).cpu().numpy().copy(),
            model_name=self.model.name,
            model_config=self.model.config(),
            privacy=report,
            elbo_trace=np.asarray(trace, dtype=np.float64).reshape(-1, 2),
            config=config,
            confidential_trace=bool(spec.private and state.track_elbo),
            model=self.model,
        )


__all__ = ["DPVI"]
