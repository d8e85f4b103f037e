"""Step 1 of a DPVI fit: validate every input before anything is planned, charged or released.

A fit that is refused must cost nothing: the data (numeric, finite, the model's shape and
support), the clip norm, q, T, the Monte Carlo draws, the per-example split, the sampling scheme,
the float type, the optimizer and the combinations that the privacy analysis does not cover
(``per_example="elbo"`` or with-replacement batches under add-remove) are all checked here, before
the privacy plan (:mod:`dpinfer.release.dpvi.planning`) and the ledger charge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InvalidDataError, InvalidPrivacyParameterError
from ...execution.device import resolve_device
from ...execution.threads import check_threads
from ...privacy import Ledger
from ...privacy.validation import check_positive
from .gradients import PER_EXAMPLE_MODES
from .models import Model
from .optim import SGD, Adam, WindowedAdaGrad, make_optimizer
from .options import OptimizerOptions, PrivacyOptions, TrainingOptions
from .schedule import Phase, resolve_schedule

SAMPLING_SCHEMES = ("poisson", "with-replacement")


@dataclass(frozen=True)
class FitSpec:
    """A validated fit: the data, the normalised scalars and the option groups.

    Attributes
    ----------
    X, y
        The checked training data.
    n, q, steps, clip, batch, mc_samples
        Number of records, sampling rate, T, clip norm C (None: no clipping; the starting C_0 of
        an adaptive clip), the fixed batch size ``int(qn)`` and the Monte Carlo draws per step.
    adaptive, clip_count
        Adaptive clipping (``clip="auto"``) and the private unclipped count
        (:mod:`dpinfer.release.dpvi.optim`).
    optimizer
        The (fresh) ascent rule.
    private
        Whether the fit releases noisy gradients.
    device
        The resolved ``torch.device`` of the computation (``TrainingOptions.device``).
    threads
        torch's intra-op threads during the loop (``TrainingOptions.threads``; ``None``: unchanged).
    """

    X: np.ndarray
    y: np.ndarray
    n: int
    q: float
    steps: int
    clip: float | None
    batch: int
    mc_samples: int
    optimizer: WindowedAdaGrad | Adam | SGD
    private: bool
    privacy: PrivacyOptions
    optimizer_options: OptimizerOptions
    training: TrainingOptions
    adaptive: bool = False
    clip_count: bool = False
    phases: tuple[Phase, ...] | None = None
    device: Any = "cpu"
    threads: int | None = 1

    @property
    def sampling(self) -> str:
        return self.privacy.sampling

    @property
    def per_example(self) -> str:
        return self.training.per_example


def validate_fit(
    model: Model,
    X: Any,
    y: Any,
    privacy: PrivacyOptions,
    optimizer: OptimizerOptions,
    training: TrainingOptions,
    *,
    private: bool,
    ledger: Ledger | None,
    dataset: str | None,
    offset: bool = False,
) -> FitSpec:
    """Check everything a fit needs (module docstring); nothing is charged or released.

    Raises
    ------
    InvalidDataError
        Bad data, dtype or init_scale.
    InvalidPrivacyParameterError
        Bad clip, q, T, Monte Carlo draws, per-example split or sampling scheme, or a combination
        the privacy analysis does not cover.
    """
    if not isinstance(private, (bool, np.bool_)):  # private="no" would run a private fit
        raise InvalidPrivacyParameterError(f"private must be True or False, got {private!r}.")
    if training.callback is not None and not callable(training.callback):
        raise InvalidDataError(
            f"callback must be callable as callback(step, params), got {training.callback!r}."
        )
    if not isinstance(training.average, (bool, np.bool_)):
        raise InvalidDataError(f"average must be True or False, got {training.average!r}.")
    X, y = model.check_data(X, y)
    if X.shape[1] != model.dim + int(offset):
        extra = " (plus the offset column)" if offset else ""
        raise InvalidDataError(
            f"X has {X.shape[1]} feature column(s) but the model has dim={model.dim}{extra}; with "
            "DataSpec(intercept=True) (the built-in regressions' default) the model's dim counts the "
            "intercept, and LogisticRegression() (no dim) takes it from the data."
        )
    n = X.shape[0]
    clip, adaptive, count = _check_clip(privacy, private, model.dim)
    try:
        q = float(training.sampling_rate)
    except (TypeError, ValueError):
        q = math.nan
    if not 0.0 < q <= 1.0:
        raise InvalidPrivacyParameterError(
            f"sampling_rate must lie in (0, 1], got {training.sampling_rate!r} (e.g. 0.05 for ~5% of "
            "the records per step)."
        )
    steps, mc_samples = training.steps, training.mc_samples
    if mc_samples is None:  # 4 draws with the default theta split, 1 (the paper's) otherwise
        mc_samples = 4 if training.per_example == "theta" else 1
    if isinstance(steps, bool) or int(steps) != steps or int(steps) < 1:
        raise InvalidPrivacyParameterError(f"steps must be an integer >= 1, got {steps!r}.")
    if int(mc_samples) != mc_samples or int(mc_samples) < 1:
        raise InvalidPrivacyParameterError(f"mc_samples must be an integer >= 1, got {mc_samples!r}.")
    per_example, sampling, neighbouring = training.per_example, privacy.sampling, privacy.neighbouring
    if per_example not in PER_EXAMPLE_MODES:
        raise InvalidPrivacyParameterError(
            f"per_example must be one of {PER_EXAMPLE_MODES}, got {per_example!r}."
        )
    if sampling not in SAMPLING_SCHEMES:
        raise InvalidPrivacyParameterError(f"sampling must be one of {SAMPLING_SCHEMES}, got {sampling!r}.")
    if training.dtype not in ("float64", "float32"):
        raise InvalidDataError(f"dtype must be 'float64' or 'float32', got {training.dtype!r}.")
    base_opt = make_optimizer(optimizer.optimizer, 0.1 if optimizer.lr is None else optimizer.lr)
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
        raise InvalidPrivacyParameterError(
            "charging a ledger needs the dataset name (ReleaseContext(ledger=..., dataset=...))."
        )
    if not 0.0 <= float(training.init_scale) < math.inf:
        raise InvalidDataError(f"init_scale must be >= 0, got {training.init_scale!r}.")
    phases = None
    if training.schedule is not None:
        phases = resolve_schedule(
            training.schedule, q, adaptive=adaptive, sampling=sampling,
            paper_accounting=bool(privacy.paper_accounting) and private,
        )
        default_steps = TrainingOptions.steps
        total = sum(p.steps for p in phases)
        if int(steps) not in (default_steps, total):
            raise InvalidPrivacyParameterError(
                f"steps={steps} was given with a schedule of {total} steps in all; give the steps "
                "in the phases only."
            )
        steps, q = total, phases[0].rate
    return FitSpec(
        X=X,
        y=y,
        n=n,
        q=q,
        steps=int(steps),
        clip=clip,
        batch=batch,
        mc_samples=int(mc_samples),
        optimizer=base_opt,
        private=bool(private),
        privacy=privacy,
        optimizer_options=optimizer,
        training=training,
        adaptive=adaptive,
        clip_count=count,
        phases=phases,
        device=resolve_device(training.device),
        threads=check_threads(training.threads),
    )


def _check_clip(privacy: PrivacyOptions, private: bool, dim: int) -> tuple[float | None, bool, bool]:
    """(C or C_0, adaptive, private count) of the clip options.

    ``clip="auto"`` starts at C_0 = 0.1·sqrt(dim) (unit-free for standardised features, whose
    per-example likelihood gradients have norms of order sqrt(dim)); the geometric update moves C
    by up to e^{0.2 γ} per step, so it adapts within a few tens of steps.
    """
    clip, count = privacy.clip, privacy.clip_count
    adaptive = isinstance(clip, str)
    if adaptive and clip != "auto":
        raise InvalidPrivacyParameterError(f"clip must be 'auto', a positive number or None, got {clip!r}.")
    if not private:
        if count:
            raise InvalidPrivacyParameterError("clip_count is a private count: private fits only.")
        return (None if adaptive or clip is None else check_positive(clip, "clip")), False, False
    if adaptive:
        if count is False:
            raise InvalidPrivacyParameterError("clip='auto' needs the private count (clip_count).")
        clip, count = 0.1 * math.sqrt(dim), True
    else:
        clip = check_positive(clip, "clip")
    if count:
        if privacy.neighbouring != "replace-one" or privacy.sampling != "poisson":
            raise InvalidPrivacyParameterError(
                "adaptive clipping (clip='auto') and clip_count normalise the private count by the "
                "expected batch size qn, which is public only under replace-one with Poisson "
                "batches; under add-remove (n secret) or with with-replacement batches give a "
                "numeric clip (e.g. clip=1.0 for standardised features) and clip_count=False."
            )
        gamma = privacy.clip_quantile
        if gamma is not None and not 0.0 < float(gamma) < 1.0:
            raise InvalidPrivacyParameterError(f"clip_quantile must lie in (0, 1), got {gamma!r}.")
    return float(clip), adaptive, bool(count)


__all__ = ["SAMPLING_SCHEMES", "FitSpec", "validate_fit"]
