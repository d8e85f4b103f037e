"""Step 2 of a DPVI fit: the privacy plan (σ and the guarantee) and the released report.

The release of a fit is the sequence of T noisy gradient sums ``Σ_i clip(g_i, C) + N(0, (σC)² I)``
(Jälkö, Dikmen & Honkela 2017, Algorithm 1), i.e. a subsampled Gaussian mechanism composed T
times: a :class:`~dpinfer.privacy.PoissonSubsampledGaussianEvent` (q, σ, T) for Poisson batches or
a :class:`~dpinfer.privacy.SampledWithReplacementGaussianEvent` for the paper's, under the declared
neighbouring relation. :func:`plan_privacy` calibrates σ to (ε, δ) or reports the ε of a given σ
with the privacy core's accountants; :func:`plan_fit` applies it to a validated fit (or checks a
reused plan against it) and :func:`check_ledger` refuses a charge that the ledger cannot account.
Conventions (exact group privacy or the paper's ``2·act(2σ_paper, δ/2, δ')``) are described in
:mod:`dpinfer.release.dpvi.engine`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidPrivacyParameterError
from ...privacy import (
    AdvancedCompositionAccountant,
    Ledger,
    PoissonSubsampledGaussianEvent,
    PrivacyEvent,
    PrivacyReport,
    SampledWithReplacementGaussianEvent,
    calibrate_noise_multiplier,
    get_accountant,
)
from ...privacy.accountants import Accountant
from ...privacy.validation import check_delta, check_epsilon, check_positive, check_relation
from .optim import count_noise_std, gradient_noise_multiplier
from .schedule import Phase, schedule_event
from .validation import SAMPLING_SCHEMES, FitSpec

#: σ of earlier calibrations by their public settings: a pure function of them, and the PLD
#: search for a thousand subsampled steps takes seconds at small σ (repeated fits re-use it)
_CALIBRATED: dict[tuple[Any, ...], float] = {}


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
    phases
        The schedule (:mod:`dpinfer.release.dpvi.schedule`) whose composition ``event`` is; ``None``: one
        phase at σ.
    """

    noise_multiplier: float
    event: PrivacyEvent  # one subsampled Gaussian event, or a schedule's composition
    epsilon: float
    delta: float
    accountant: Accountant
    convention: str
    target_epsilon: float | None = None
    sampling: str = "poisson"
    phases: tuple[Phase, ...] | None = None

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
    phases: tuple[Phase, ...] | None = None,
) -> PrivacyPlan:
    """Calibrate σ to (ε, δ), or report the ε that a given σ achieves, with the privacy core.

    With ``phases`` (a resolved schedule) the event is their composition at σ_k = r_k·σ and the
    one σ is calibrated (``sampling_rate`` and ``steps`` are then the phases').

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
    if delta_prime is not None:  # never silently ignored (issue 35: every option checked)
        if not is_advanced:
            raise InvalidPrivacyParameterError(
                f"delta_prime is the delta' of the 'advanced' accountant's composition; accountant "
                f"{acc.name!r} has none: drop it."
            )
        if not 0.0 < check_delta(delta_prime, "delta_prime"):
            raise InvalidPrivacyParameterError(f"delta_prime must lie in (0, 1), got {delta_prime!r}.")
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
        if phases is not None:
            return schedule_event(phases, z, relation)
        return event_type(sampling_rate, z, steps, neighbouring=relation)

    # paper: 2·act(z, δ/2), the add-remove analysis at δ/2 with ε doubled (the DPVI authors' code (Jälkö,
    # Dikmen & Honkela 2017, DPBayes/DPVI-code))
    relation, factor, d_acc = (
        ("add-remove", 2.0, delta / 2.0) if paper_accounting else (neighbouring, 1.0, delta)
    )
    if epsilon is not None:
        epsilon = check_epsilon(epsilon)
        key = None
        if accountant is None or isinstance(accountant, str):  # a named accountant: cacheable
            key = (sampling_rate, steps, d_acc, epsilon / factor, acc.name, relation, sampling,
                   paper_accounting, delta_prime, phases)
        z = _CALIBRATED.get(key) if key is not None else None
        if z is None:
            # PLD: σ to 0.1% (at most 0.1% more noise than the least; the search is then a cheap
            # coarse-grid one and two fine-grid evaluations, :func:`calibrate_noise_multiplier`)
            rtol = 1e-3 if acc.name == "pld" else 1e-6
            z = calibrate_noise_multiplier(
                lambda s: event(s, relation), epsilon / factor, d_acc, acc, rtol=rtol
            )
            if key is not None:
                _CALIBRATED[key] = z
    else:
        z = check_positive(noise_multiplier, "noise_multiplier")
    eps = factor * acc.epsilon(event(z, relation), d_acc)
    convention = "paper" if paper_accounting else "exact"
    return PrivacyPlan(z, event(z), eps, delta, acc, convention, epsilon, sampling, phases)


def plan_fit(spec: FitSpec, privacy_plan: PrivacyPlan | None) -> PrivacyPlan | None:
    """:func:`_plan_fit`, then (with the private clip count) the check that σ_b > σ/2, so that the
    gradient multiplier σ_Δ exists (:func:`dpinfer.release.dpvi.optim.gradient_noise_multiplier`); all
    before anything is charged."""
    plan = _plan_fit(spec, privacy_plan)
    if plan is not None and spec.clip_count:
        for q, z in phase_noise(spec, plan.noise_multiplier):
            gradient_noise_multiplier(z, count_noise_std(q * spec.n, z))
    return plan


def phase_noise(spec: FitSpec, noise_multiplier: float) -> list[tuple[float, float]]:
    """``[(q_k, σ_k), ...]`` of the fit's phases (one phase without a schedule)."""
    if spec.phases is None:
        return [(spec.q, noise_multiplier)]
    return [(p.sampling_rate, noise_multiplier * p.noise_scale) for p in spec.phases]  # type: ignore[misc]


def epsilon_spent(plan: PrivacyPlan, steps: int, delta: float | None = None) -> float:
    """The ε of the first ``steps`` iterations of ``plan`` at ``delta`` (default: the plan's δ),
    with the plan's accountant and convention (0 before the first step): the budget during
    training, as Opacus's ``get_epsilon``."""
    steps = int(steps)
    if steps <= 0:
        return 0.0
    delta = plan.delta if delta is None else check_delta(delta)
    ev = plan.event
    relation, factor, d_acc = (
        ("add-remove", 2.0, delta / 2.0) if plan.convention == "paper" else (ev.neighbouring, 1.0, delta)
    )
    if plan.phases is not None:
        partial = schedule_event(plan.phases, plan.noise_multiplier, ev.neighbouring, steps)
    else:  # one subsampled Gaussian event (Poisson or with replacement)
        single: Any = ev
        partial = type(single)(single.sampling_rate, plan.noise_multiplier, steps, neighbouring=relation)
    return float(factor * plan.accountant.epsilon(partial, d_acc))


def _plan_fit(spec: FitSpec, privacy_plan: PrivacyPlan | None) -> PrivacyPlan | None:
    """The plan of a validated fit: None for a non-private fit, ``privacy_plan`` if it matches the
    fit, otherwise :func:`plan_privacy` of the fit's options (calibration happens here, before any
    data is touched).

    Raises
    ------
    InvalidPrivacyParameterError
        Privacy options on a non-private fit, no δ, a reused plan that does not match, or
        inconsistent options.
    CalibrationError
        No noise level meets the (ε, δ) target.
    """
    p = spec.privacy
    if not spec.private:
        if p.epsilon is not None or p.noise_multiplier is not None or privacy_plan is not None:
            raise InvalidPrivacyParameterError(
                "private=False takes neither epsilon, noise_multiplier nor privacy_plan."
            )
        return None
    if p.delta is None:
        raise InvalidPrivacyParameterError("a private fit needs delta (e.g. 1e-5).")
    if privacy_plan is None:
        return plan_privacy(
            sampling_rate=spec.q,
            steps=spec.steps,
            delta=p.delta,
            epsilon=p.epsilon,
            noise_multiplier=p.noise_multiplier,
            accountant=p.accountant,
            neighbouring=p.neighbouring,
            sampling=p.sampling,
            paper_accounting=p.paper_accounting,
            delta_prime=p.delta_prime,
            phases=spec.phases,
        )
    ev: Any = privacy_plan.event  # a single subsampled Gaussian event whenever phases is None
    if (
        p.epsilon is not None
        or p.noise_multiplier is not None
        or privacy_plan.phases != spec.phases
        or (spec.phases is None and not math.isclose(ev.sampling_rate, spec.q))
        or (spec.phases is None and ev.steps != spec.steps)
        or ev.neighbouring != p.neighbouring
        or privacy_plan.sampling != p.sampling
        or not math.isclose(privacy_plan.delta, float(p.delta))
    ):
        raise InvalidPrivacyParameterError(
            f"privacy_plan ({ev}, {privacy_plan.sampling}, delta {privacy_plan.delta:g}) does not "
            f"match this fit (q={spec.q}, steps={spec.steps}, {p.neighbouring}, {p.sampling}, delta "
            f"{p.delta}), or epsilon/noise_multiplier was also given."
        )
    return privacy_plan


def warn_with_replacement(plan: PrivacyPlan | None, sampling: str) -> None:
    """The paper's with-replacement accounting ignores repeated draws: say so."""
    if plan is not None and sampling == "with-replacement":
        warnings.warn(
            "sampling='with-replacement' uses the DPVI paper's accounting, which ignores "
            "repeated draws of a record within a batch; prefer sampling='poisson'.",
            stacklevel=3,
        )


def check_ledger(plan: PrivacyPlan | None, sampling: str, ledger: Ledger | None, dataset: str | None) -> None:
    """Refuse a ledger charge the ledger cannot account (before anything is charged)."""
    if ledger is None:
        return
    if plan is None:
        raise InvalidPrivacyParameterError("a non-private fit cannot be charged to a ledger.")
    if sampling == "with-replacement":
        budget_accountant = ledger.budget(dataset).accountant  # type: ignore[arg-type]
        if budget_accountant != "advanced":
            raise InvalidPrivacyParameterError(
                f"the ledger accounts {dataset!r} with {budget_accountant!r}: it bounds batches drawn "
                "with replacement validly (repeated draws of a record included), far above the "
                "paper's convention this fit's noise was calibrated to, so the charge would not "
                "match the fit's report; use sampling='poisson' (Poisson subsampling, which every "
                "accountant analyses tightly). Nothing was charged."
            )


def fit_report(
    plan: PrivacyPlan,
    spec: FitSpec,
    *,
    insecure_rng: bool,
    accounted: bool,
    clipping: dict[str, Any] | None = None,
) -> PrivacyReport:
    """The :class:`~dpinfer.privacy.PrivacyReport` of a private fit (n only under replace-one).

    ``clipping`` is the private clip record of the loop (:func:`dpinfer.release.dpvi.loop.clip_record`):
    with it the details hold the private clipped-fraction estimate, its per-step trace, the clip
    trace and the gradient multiplier σ_Δ (the event is still the one of σ).
    """
    z, q, sampling = plan.noise_multiplier, spec.q, spec.sampling
    clip: Any = "auto" if spec.adaptive else spec.clip
    replace_one = plan.event.neighbouring == "replace-one"
    details: dict[str, Any] = {
        "noise_multiplier": z,
        "noise_std": None if spec.adaptive else z * float(spec.clip),  # type: ignore[arg-type]
        "paper_sigma": z / 2.0,
        "sampling_rate": q,
        "steps": spec.steps,
        "clip": clip,
        "sampling": sampling,
        # n is public under replace-one only; never reveal it under add-remove
        "expected_batch_size": (q * spec.n if sampling == "poisson" else spec.batch) if replace_one else None,
        "per_example": spec.per_example,
        "convention": plan.convention,
        "target_epsilon": plan.target_epsilon,
        "calibrated": plan.calibrated,
        "secret_randomness": "minibatches and noise from the OS CSPRNG (PrivacyRNG)",
        "floating_point": "noise = (sum of 4 inverse-CDF normals)/2 added in float64 "
        "(Holohan & Braghin 2021, as Opacus secure mode); transcript not on a grid",
    }
    if spec.phases is not None:
        details["schedule"] = [
            {**ph.to_dict(), "noise_multiplier": z * ph.noise_scale} for ph in spec.phases
        ]
    if clipping is not None:
        details.update(clipping)
        if not spec.adaptive:
            details["noise_std"] = clipping["gradient_noise_multiplier"] * float(spec.clip)  # type: ignore[arg-type]
    sens: Any = clip if not spec.adaptive else "adaptive C_t (private count, Andrew et al. 2021)"
    return PrivacyReport(
        epsilon=float(plan.epsilon),
        delta=float(plan.delta),
        accountant=plan.accountant.name,
        neighbouring=plan.event.neighbouring,
        sensitivity={
            "per_example_clip": sens,
            "l2_sensitivity_of_sum": (
                "2 C_t" if spec.adaptive else clip * (2.0 if replace_one else 1.0)
            ),
        },
        events=(plan.event,),
        mechanism="dpvi",
        insecure_rng=insecure_rng,
        accounted=accounted,
        details=details,
    )


__all__ = [
    "PrivacyPlan",
    "check_ledger",
    "epsilon_spent",
    "fit_report",
    "plan_fit",
    "plan_privacy",
    "warn_with_replacement",
]
