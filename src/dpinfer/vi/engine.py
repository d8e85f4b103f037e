"""The DPVI engine: differentially private variational inference (Jälkö, Dikmen & Honkela, UAI 2017).

Algorithm (Algorithm 1 of the paper, with the code-level details of METHODS.md §3.1): for
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
comes from a :class:`~dpinfer.privacy.PrivacyRNG` (the OS CSPRNG), is never derived from the
user's ``seed``, and nothing that could reproduce it is stored in the result. The user's ``seed``
drives only what the analysis treats as public: the Monte Carlo draws of the reparameterisation
and (with ``init_scale > 0``) the initialisation. Two private fits with the same seed therefore
follow different trajectories; a non-private baseline (``private=False``) is fully reproducible
from its seed (its batches come from the seed too).

A record whose per-example gradient is not finite contributes a zero row (inside the clipped,
bounded contribution), so every fit completes whatever one record holds: whether a fit is released
must not itself depend on one record.

Without a ledger the fit is *unaccounted*: a :class:`~dpinfer.privacy.PrivacyWarning` is emitted
and the report says ``accounted: false``.
"""

from __future__ import annotations

import contextlib
import math
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..errors import InvalidDataError, InvalidPrivacyParameterError, PrivacyWarning
from ..privacy import (
    AdvancedCompositionAccountant,
    Ledger,
    PoissonSubsampledGaussianEvent,
    PrivacyEvent,
    PrivacyReport,
    PrivacyRNG,
    SampledWithReplacementGaussianEvent,
    as_privacy_rng,
    calibrate_noise_multiplier,
    get_accountant,
)
from ..privacy.accountants import Accountant
from ..privacy.validation import check_delta, check_epsilon, check_positive, check_relation
from .families import FAMILIES, make_family
from .gradients import PER_EXAMPLE_MODES, combine, elbo_estimate, per_example_terms
from .models import Model
from .optim import DPOptimizer, make_optimizer
from .result import DPVIResult
from .sampling import draw_batch

SAMPLING_SCHEMES = ("poisson", "with-replacement")


@dataclass(frozen=True)
class PrivacyPlan:
    """The noise level and guarantee of a private fit, fixed before any data is touched.

    Attributes
    ----------
    noise_multiplier
        σ (noise std σC).
    event
        The privacy event of the whole fit, under the declared neighbouring relation.
    epsilon, delta
        The guarantee reported for ``event``.
    accountant
        The accountant that certified ``epsilon``.
    convention
        ``"exact"`` or ``"paper"`` (see the module docstring).
    target_epsilon
        The ε the noise was calibrated to (``None`` when σ was given).
    sampling
        The sampling scheme the plan was accounted for.
    """

    noise_multiplier: float
    event: PoissonSubsampledGaussianEvent | SampledWithReplacementGaussianEvent
    epsilon: float
    delta: float
    accountant: Accountant
    convention: str
    target_epsilon: float | None = None
    sampling: str = "poisson"

    @property
    def calibrated(self) -> bool:
        """Whether σ was calibrated to a target ε."""
        return self.target_epsilon is not None


def plan_privacy(
    *,
    sampling_rate: float,
    steps: int,
    delta: float,
    epsilon: float | None = None,
    noise_multiplier: float | None = None,
    accountant: str | Accountant | None = None,
    neighbouring: str = "replace-one",
    sampling: str = "poisson",
    paper_accounting: bool = False,
    delta_prime: float | None = None,
) -> PrivacyPlan:
    """Calibrate σ to (ε, δ), or report the ε that a given σ achieves, with the privacy core.

    Raises
    ------
    InvalidPrivacyParameterError
        Inconsistent settings (both or neither of ε and σ, an accountant that does not fit the
        sampling scheme, ...).
    CalibrationError
        No noise level meets the (ε, δ) target.
    """
    check_relation(neighbouring)
    delta = check_delta(delta)
    if delta <= 0.0:
        raise InvalidPrivacyParameterError(
            "DPVI adds Gaussian noise, which needs delta > 0 (e.g. delta=1e-5, well below 1/n)."
        )
    if (epsilon is None) == (noise_multiplier is None):
        raise InvalidPrivacyParameterError(
            "give exactly one of epsilon (the noise is calibrated to it) and noise_multiplier "
            "(the epsilon it gives is reported)."
        )
    if sampling not in SAMPLING_SCHEMES:
        raise InvalidPrivacyParameterError(f"sampling must be one of {SAMPLING_SCHEMES}, got {sampling!r}.")
    if accountant is None:
        accountant = "pld" if sampling == "poisson" else "advanced"
    acc = get_accountant(accountant)
    is_advanced = isinstance(acc, AdvancedCompositionAccountant)
    if sampling == "with-replacement" and not is_advanced:
        raise InvalidPrivacyParameterError(
            "fixed-size batches drawn with replacement are only accounted with the paper's "
            f"'advanced' accountant, not {acc.name!r}; use sampling='poisson' for the PLD/RDP "
            "accountants."
        )
    if paper_accounting and (not is_advanced or neighbouring != "replace-one"):
        raise InvalidPrivacyParameterError(
            "paper_accounting=True reproduces 2*act(2 sigma, delta/2, ...): it needs the 'advanced' "
            "accountant and the replace-one relation."
        )
    if is_advanced and (delta_prime is not None or paper_accounting):
        if isinstance(accountant, AdvancedCompositionAccountant):
            raise InvalidPrivacyParameterError(
                "pass delta_prime/paper_accounting or a configured AdvancedCompositionAccountant, not both."
            )
        acc = AdvancedCompositionAccountant(delta_prime=delta_prime, reproduce_paper=paper_accounting)

    event_type = (
        PoissonSubsampledGaussianEvent if sampling == "poisson" else SampledWithReplacementGaussianEvent
    )

    def event(z: float, relation: str = neighbouring) -> PrivacyEvent:
        return event_type(sampling_rate, z, steps, neighbouring=relation)

    if paper_accounting:
        # 2 * act(z, delta/2): add-remove analysis at delta/2, epsilon doubled (METHODS §3.2).
        def eps_of(z: float) -> float:
            return 2.0 * acc.epsilon(event(z, "add-remove"), delta / 2.0)

        if epsilon is not None:
            epsilon = check_epsilon(epsilon)
            z = calibrate_noise_multiplier(lambda s: event(s, "add-remove"), epsilon / 2.0, delta / 2.0, acc)
        else:
            z = check_positive(noise_multiplier, "noise_multiplier")
        return PrivacyPlan(z, event(z), eps_of(z), delta, acc, "paper", epsilon, sampling)

    if epsilon is not None:
        epsilon = check_epsilon(epsilon)
        z = calibrate_noise_multiplier(event, epsilon, delta, acc)
    else:
        z = check_positive(noise_multiplier, "noise_multiplier")
    return PrivacyPlan(z, event(z), acc.epsilon(event(z), delta), delta, acc, "exact", epsilon, sampling)


def _seed_ints(seq: np.random.SeedSequence) -> int:
    return int(seq.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


class DPVI:
    """Differentially private variational inference for a :class:`~dpinfer.vi.models.Model`.

    Parameters
    ----------
    model
        The model (e.g. ``LogisticRegression(dim)``).
    family
        ``"meanfield"`` (the paper's) or ``"fullrank"``.

    Examples
    --------
    >>> from dpinfer.datasets import load_abalone
    >>> from dpinfer.vi import DPVI, LogisticRegression
    >>> d = load_abalone()
    >>> fit = DPVI(LogisticRegression(8)).fit(d.X_train, d.y_train, epsilon=1.0, delta=1e-5,
    ...                                        clip=5.0, sampling_rate=0.05, steps=1000, seed=1)
    >>> fit.accuracy(d.X_test, d.y_test)  # doctest: +SKIP
    """

    def __init__(self, model: Model, family: str = "meanfield") -> None:
        if not isinstance(model, Model):
            raise InvalidDataError(f"model must be a dpinfer.vi Model, got {type(model).__name__}.")
        if family not in FAMILIES:
            raise InvalidDataError(f"family must be one of {sorted(FAMILIES)}, got {family!r}.")
        self.model = model
        self.family = make_family(family, model.dim)

    def fit(
        self,
        X: Any,
        y: Any,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        clip: float | None = 5.0,
        sampling_rate: float = 0.05,
        steps: int = 1000,
        noise_multiplier: float | None = None,
        accountant: str | Accountant | None = None,
        neighbouring: str = "replace-one",
        sampling: str = "poisson",
        paper_accounting: bool = False,
        delta_prime: float | None = None,
        optimizer: str = "adagrad",
        lr: float = 0.1,
        per_example: str = "elbo",
        mc_samples: int = 1,
        init_scale: float = 0.0,
        private: bool = True,
        seed: int | np.random.SeedSequence | None = None,
        privacy_rng: PrivacyRNG | None = None,
        ledger: Ledger | None = None,
        dataset: str | None = None,
        label: str = "dpvi",
        progress: bool = False,
        track_elbo: bool | None = None,
        elbo_every: int | None = None,
        dtype: str = "float64",
        callback: Callable[[int, np.ndarray], None] | None = None,
        privacy_plan: PrivacyPlan | None = None,
    ) -> DPVIResult:
        """Fit q(θ) to the posterior of the model given (X, y).

        Parameters
        ----------
        X, y
            Training features (n, dim) and targets (n,).
        epsilon, delta
            The privacy target; σ is calibrated to it with ``accountant``. Give ``noise_multiplier``
            instead of ``epsilon`` to fix σ and have the ε it gives reported.
        clip
            Per-example L2 clip norm C (> 0). May be ``None`` only for ``private=False``.
        sampling_rate
            q in (0, 1]: Poisson inclusion probability, or the batch fraction for
            ``sampling="with-replacement"`` (B = int(qN)).
        steps
            T >= 1 iterations.
        accountant
            ``"pld"`` (default for Poisson), ``"rdp"`` (add-remove only), ``"advanced"`` (default
            and required for with-replacement batches), or an accountant instance.
        neighbouring
            ``"replace-one"`` (default; the paper's) or ``"add-remove"``.
        sampling
            ``"poisson"`` (default) or ``"with-replacement"`` (the paper's fixed-size batches).
        paper_accounting, delta_prime
            Report ε with the authors' ``2·act(2σ_paper, δ/2, δ')`` convention; δ' of the advanced
            composition (default 0.1·δ). See the module docstring.
        optimizer, lr
            ``"adagrad"`` (windowed, window 10; the paper's, lr 0.1 for DP), ``"adam"`` or ``"sgd"``.
        per_example
            ``"elbo"`` (default; the authors' per-example ELBO terms) or ``"likelihood"``; see
            :mod:`dpinfer.vi.gradients`.
        mc_samples
            Monte Carlo draws of θ per step (1 in the paper).
        init_scale
            Initial means ~ N(0, init_scale²) from the seed (0: u = 0, unit scales, as PyMC3).
        private
            ``False`` runs the same algorithm without clipping (unless ``clip`` is given) or noise
            and returns a result with ``privacy=None``: a non-private baseline only.
        seed
            Simulation seed: Monte Carlo draws and initialisation only. The minibatches and the
            noise of a private fit never depend on it (module docstring).
        privacy_rng
            Source of the minibatches and the noise of a private fit (``None``: a fresh
            OS-CSPRNG PrivacyRNG).
        ledger, dataset, label
            Charge the fit to ``dataset`` in ``ledger`` before any noisy gradient is computed.
        track_elbo, elbo_every
            Record minibatch ELBO estimates every ``elbo_every`` steps. These are computed on the
            confidential data without noise: default on for non-private fits, off for private
            ones (``True`` records them and marks the trace confidential).
        dtype
            ``"float64"`` (default) or ``"float32"``.
        callback
            ``callback(step, params)`` after every step (e.g. to record a trajectory).
        privacy_plan
            A :class:`PrivacyPlan` from :func:`plan_privacy` to reuse (repeated fits with the same
            q, T and relation skip the calibration and accounting); replaces epsilon,
            noise_multiplier, accountant and the accounting options.

        Returns
        -------
        DPVIResult
        """
        # ---- 1. validate everything (nothing charged, nothing released) --------------------
        X, y = self.model.check_data(X, y)
        if X.shape[1] != self.model.dim:
            raise InvalidDataError(
                f"X has {X.shape[1]} feature column(s) but the model has dim={self.model.dim}."
            )
        n = X.shape[0]
        if private or clip is not None:
            clip = check_positive(clip, "clip")
        try:
            q = float(sampling_rate)
        except (TypeError, ValueError):
            q = math.nan
        if not 0.0 < q <= 1.0:
            raise InvalidPrivacyParameterError(
                f"sampling_rate must lie in (0, 1], got {sampling_rate!r} (e.g. 0.05 for ~5% of the "
                "records per step)."
            )
        if isinstance(steps, bool) or int(steps) != steps or int(steps) < 1:
            raise InvalidPrivacyParameterError(f"steps must be an integer >= 1, got {steps!r}.")
        steps = int(steps)
        if int(mc_samples) != mc_samples or int(mc_samples) < 1:
            raise InvalidPrivacyParameterError(f"mc_samples must be an integer >= 1, got {mc_samples!r}.")
        if per_example not in PER_EXAMPLE_MODES:
            raise InvalidPrivacyParameterError(
                f"per_example must be one of {PER_EXAMPLE_MODES}, got {per_example!r}."
            )
        if sampling not in SAMPLING_SCHEMES:
            raise InvalidPrivacyParameterError(
                f"sampling must be one of {SAMPLING_SCHEMES}, got {sampling!r}."
            )
        if dtype not in ("float64", "float32"):
            raise InvalidDataError(f"dtype must be 'float64' or 'float32', got {dtype!r}.")
        base_opt = make_optimizer(optimizer, lr)
        batch = int(q * n)
        if sampling == "with-replacement" and batch < 1:
            raise InvalidPrivacyParameterError(
                f"sampling_rate={q} gives an empty fixed-size batch for n={n}; raise it."
            )
        if private and per_example == "elbo" and neighbouring != "replace-one":
            raise InvalidPrivacyParameterError(
                "per_example='elbo' shares the prior and entropy terms among the |B| examples of a batch, "
                "so under add-remove one record would change every example's clipped term; use "
                "per_example='likelihood' (data-independent terms outside the clipping) for add-remove."
            )
        if private and sampling == "with-replacement" and neighbouring != "replace-one":
            raise InvalidPrivacyParameterError(
                "fixed-size batches (B = int(q n)) are analysed under replace-one only (n is public)."
            )
        if ledger is not None and not dataset:
            raise InvalidPrivacyParameterError("charging a ledger needs the dataset name (dataset=...).")
        if not 0.0 <= float(init_scale) < math.inf:
            raise InvalidDataError(f"init_scale must be >= 0, got {init_scale!r}.")

        # ---- 2. privacy plan: calibrate or account (before touching the noise) ----------------
        plan: PrivacyPlan | None = None
        if not private:
            if epsilon is not None or noise_multiplier is not None or privacy_plan is not None:
                raise InvalidPrivacyParameterError(
                    "private=False takes neither epsilon, noise_multiplier nor privacy_plan."
                )
        elif delta is None:
            raise InvalidPrivacyParameterError("a private fit needs delta (e.g. 1e-5).")
        elif privacy_plan is not None:
            ev = privacy_plan.event
            if (
                epsilon is not None
                or noise_multiplier is not None
                or not math.isclose(ev.sampling_rate, q)
                or ev.steps != steps
                or ev.neighbouring != neighbouring
                or privacy_plan.sampling != sampling
                or not math.isclose(privacy_plan.delta, float(delta))
            ):
                raise InvalidPrivacyParameterError(
                    f"privacy_plan ({ev}, {privacy_plan.sampling}, delta {privacy_plan.delta:g}) does not "
                    f"match this fit (q={q}, steps={steps}, {neighbouring}, {sampling}, delta {delta}), or "
                    "epsilon/noise_multiplier was also given."
                )
            plan = privacy_plan
        else:
            plan = plan_privacy(
                sampling_rate=q,
                steps=steps,
                delta=delta,
                epsilon=epsilon,
                noise_multiplier=noise_multiplier,
                accountant=accountant,
                neighbouring=neighbouring,
                sampling=sampling,
                paper_accounting=paper_accounting,
                delta_prime=delta_prime,
            )
        if plan is not None:
            privacy_rng = as_privacy_rng(privacy_rng)
            if sampling == "with-replacement":
                warnings.warn(
                    "sampling='with-replacement' uses the DPVI paper's accounting, which ignores "
                    "repeated draws of a record within a batch; prefer sampling='poisson'.",
                    stacklevel=2,
                )
        if ledger is not None and plan is None:
            raise InvalidPrivacyParameterError("a non-private fit cannot be charged to a ledger.")
        if ledger is not None and sampling == "with-replacement":
            budget_accountant = ledger.budget(dataset).accountant  # type: ignore[arg-type]
            if budget_accountant != "advanced":
                raise InvalidPrivacyParameterError(
                    f"the ledger accounts {dataset!r} with {budget_accountant!r}, which would treat the "
                    "paper's with-replacement batches as Poisson subsampling; use sampling='poisson' "
                    "(or a data set budgeted with the 'advanced' accountant)."
                )

        # ---- 3. set up -------------------------------------------------------------------------
        tdtype = torch.float64 if dtype == "float64" else torch.float32
        ss = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        ss_sub, ss_mc, ss_init = ss.spawn(3)
        # the batches of a private fit are secret: PrivacyRNG, never the seed (module docstring)
        batch_source: Any = (
            privacy_rng if plan is not None else torch.Generator().manual_seed(_seed_ints(ss_sub))
        )
        g_mc = torch.Generator().manual_seed(_seed_ints(ss_mc))
        params = self.family.init_params(tdtype)
        if init_scale > 0:
            u0 = np.random.default_rng(ss_init).normal(0.0, float(init_scale), self.model.dim)
            params[: self.model.dim] = torch.as_tensor(u0, dtype=tdtype)
        Xt = torch.as_tensor(X, dtype=tdtype)
        yt = torch.as_tensor(y, dtype=tdtype)
        scale = 1.0 / q if sampling == "poisson" else n / batch
        S, D = int(mc_samples), self.model.dim
        if track_elbo is None:
            track_elbo = not private
        every = int(elbo_every) if elbo_every else max(1, steps // 200)
        trace: list[tuple[float, float]] = []

        if plan is not None and ledger is None:
            warnings.warn(
                f"DPVI fit {label!r} released WITHOUT a ledger: it is not accounted against any "
                "budget (its report says accounted: false). Pass ledger=... and dataset=... to "
                "charge it.",
                PrivacyWarning,
                stacklevel=2,
            )
        charge = (
            ledger.charge(  # type: ignore[union-attr]
                dataset, plan.event, label=label, insecure=bool(privacy_rng.deterministic)  # type: ignore[arg-type,union-attr]
            )
            if ledger is not None
            else contextlib.nullcontext()
        )
        # ---- 4. the private loop: charged first, then noise ----------------------------------
        with charge:
            dp = DPOptimizer(
                base_opt,
                clip,
                plan.noise_multiplier if plan is not None else 0.0,
                privacy_rng if plan is not None else None,  # type: ignore[arg-type]
            )
            iterator: Any = range(steps)
            if progress:
                from tqdm.auto import tqdm

                iterator = tqdm(iterator, desc="dpvi", disable=not sys.stderr.isatty())
            for t in iterator:
                idx = draw_batch(n, q, batch_source, sampling)
                Xb, yb = Xt[idx], yt[idx]
                eps = torch.randn(S, D, generator=g_mc, dtype=tdtype)
                rows, free = per_example_terms(
                    self.model, self.family, params, Xb, yb, eps, scale, per_example
                )
                gradient = combine(dp.privatize(rows), free, scale, per_example)
                if track_elbo and t % every == 0:
                    trace.append((t, elbo_estimate(self.model, self.family, params, Xb, yb, eps, scale)))
                params = dp.step(params, gradient)
                if callback is not None:
                    callback(t, params.detach().numpy().copy())
            if not bool(torch.all(torch.isfinite(params))):
                raise InvalidDataError(
                    "the variational parameters diverged (non-finite values); lower lr or clip. The "
                    "privacy budget of this fit stays charged."
                )

        # ---- 5. result -------------------------------------------------------------------------
        report = None
        if plan is not None:
            z = plan.noise_multiplier
            report = PrivacyReport(
                epsilon=float(plan.epsilon),
                delta=float(plan.delta),
                accountant=plan.accountant.name,
                neighbouring=plan.event.neighbouring,
                sensitivity={
                    "per_example_clip": clip,
                    "l2_sensitivity_of_sum": clip
                    * (2.0 if plan.event.neighbouring == "replace-one" else 1.0),
                },
                events=(plan.event,),
                mechanism="dpvi",
                insecure_rng=bool(privacy_rng.deterministic),  # type: ignore[union-attr]
                accounted=ledger is not None,
                details={
                    "noise_multiplier": z,
                    "noise_std": z * float(clip),  # type: ignore[arg-type]
                    "paper_sigma": z / 2.0,
                    "sampling_rate": q,
                    "steps": steps,
                    "clip": clip,
                    "sampling": sampling,
                    # n is public under replace-one only; never reveal it under add-remove
                    "expected_batch_size": (q * n if sampling == "poisson" else batch)
                    if plan.event.neighbouring == "replace-one"
                    else None,
                    "per_example": per_example,
                    "convention": plan.convention,
                    "target_epsilon": plan.target_epsilon,
                    "calibrated": plan.calibrated,
                    "secret_randomness": "minibatches and noise from the OS CSPRNG (PrivacyRNG)",
                    "floating_point": "noise = (sum of 4 inverse-CDF normals)/2 added in float64 "
                    "(Holohan & Braghin 2021, as Opacus secure mode); transcript not on a grid",
                },
            )
        config = {
            # the seed reproduces only the public randomness (Monte Carlo draws, initialisation)
            "seed_entropy": str(ss.entropy),
            "seed_spawn_key": list(ss.spawn_key),
            "optimizer": optimizer,
            "lr": float(lr),
            "steps": steps,
            "sampling_rate": q,
            "sampling": sampling,
            "clip": clip,
            "per_example": per_example,
            "mc_samples": S,
            "n_train": n if (plan is None or plan.event.neighbouring == "replace-one") else None,
            "private": bool(private),
            "dtype": dtype,
        }
        return DPVIResult(
            family=self.family.name,
            params=params.detach().to(torch.float64).numpy().copy(),
            model_name=self.model.name,
            model_config=self.model.config(),
            privacy=report,
            elbo_trace=np.asarray(trace, dtype=np.float64).reshape(-1, 2),
            config=config,
            confidential_trace=bool(private and track_elbo),
            model=self.model,
        )
