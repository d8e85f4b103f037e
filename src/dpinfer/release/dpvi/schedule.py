"""Time-varying DPVI: phases with their own sampling rate, noise level and clip norm.

The DPVI paper (Jälkö, Dikmen & Honkela 2017, §6) names schedules of the privacy parameters as
future work. A schedule is a sequence of phases k = 1..K, each running T_k steps of Algorithm 1
with Poisson rate q_k, noise multiplier σ_k = r_k·σ (``noise_scale`` r_k, relative to one σ that is
calibrated for the whole fit) and, with a numeric clip, its own clip norm C_k. Phase k releases a
Poisson-subsampled Gaussian mechanism composed T_k times; the fit releases their composition

    M = M_1 ∘ M_2 ∘ … ∘ M_K,   M_k = PoissonSubsampledGaussian(q_k, σ_k)^{T_k},

a :class:`~dpinfer.privacy.ComposedEvent` that the PLD and RDP accountants compose exactly as they
compose any other events (adaptive composition: each phase may depend on the earlier releases).
Calibration to (ε, δ) searches the one σ; the ratios r_k are the user's shape of the schedule.
The clip norm scales the noise (std σ_k C_k) and the sensitivity alike, so it does not enter the
event. With ``clip="auto"`` the adaptive clip runs across phases and a phase cannot fix C_k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidPrivacyParameterError
from ...privacy import PoissonSubsampledGaussianEvent, PrivacyEvent, compose


@dataclass(frozen=True)
class Phase:
    """One phase of a DPVI schedule.

    Attributes
    ----------
    steps
        T_k >= 1 iterations.
    sampling_rate
        q_k in (0, 1]; ``None``: the fit's ``sampling_rate``.
    noise_scale
        r_k > 0: this phase's noise multiplier is r_k·σ, with σ calibrated for the whole fit (or
        the fit's ``noise_multiplier``).
    clip
        C_k > 0 for this phase (numeric ``clip`` only); ``None``: the fit's clip.
    """

    steps: int
    sampling_rate: float | None = None
    noise_scale: float = 1.0
    clip: float | None = None

    @property
    def rate(self) -> float:
        """q_k of a resolved phase (:func:`resolve_schedule` fills in the fit's q)."""
        if self.sampling_rate is None:
            raise InvalidPrivacyParameterError(
                "this phase's sampling_rate was not resolved (resolve_schedule)."
            )
        return float(self.sampling_rate)

    def to_dict(self) -> dict[str, Any]:
        return {"steps": self.steps, "sampling_rate": self.sampling_rate,
                "noise_scale": self.noise_scale, "clip": self.clip}


def _positive(value: Any, k: int, name: str, upper: float = math.inf) -> float:
    """``value`` as a float in (0, upper] (finite), or the error naming the phase and field."""
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and 0.0 < float(value) < math.inf
    if not ok or float(value) > upper:
        bound = "(0, 1]" if upper == 1.0 else "> 0 and finite"
        raise InvalidPrivacyParameterError(f"schedule[{k}].{name} must be {bound}, got {value!r}.")
    return float(value)


def resolve_schedule(
    schedule: Sequence[Phase | dict[str, Any]],
    sampling_rate: float,
    *,
    adaptive: bool,
    sampling: str,
    paper_accounting: bool = False,
) -> tuple[Phase, ...]:
    """The validated phases with every ``sampling_rate`` filled in.

    Raises
    ------
    InvalidPrivacyParameterError
        An empty schedule, a bad field, a clip per phase with ``clip="auto"``, or a setting the
        schedule's accounting does not cover (with-replacement batches, the paper's convention).
    """
    if isinstance(schedule, (str, bytes, Phase, dict)) or not isinstance(schedule, Sequence):
        raise InvalidPrivacyParameterError(
            "schedule must be a list of Phase(steps, sampling_rate=None, noise_scale=1.0, clip=None)."
        )
    if not schedule:
        raise InvalidPrivacyParameterError("schedule has no phases; give at least one Phase(steps=...).")
    if sampling != "poisson":
        raise InvalidPrivacyParameterError(
            "a schedule is accounted as a composition of Poisson-subsampled Gaussian phases: use "
            "sampling='poisson'."
        )
    if paper_accounting:
        raise InvalidPrivacyParameterError(
            "paper_accounting reproduces the paper's constant-σ analysis; it does not cover a schedule."
        )
    out = []
    for k, raw in enumerate(schedule):
        try:
            ph = raw if isinstance(raw, Phase) else Phase(**raw)
        except TypeError as exc:
            raise InvalidPrivacyParameterError(f"schedule[{k}]: {exc}") from None
        steps = ph.steps
        if isinstance(steps, bool) or not isinstance(steps, (int, float)) or int(steps) != steps or steps < 1:
            raise InvalidPrivacyParameterError(f"schedule[{k}].steps must be an integer >= 1, got {steps!r}.")
        q_k = sampling_rate if ph.sampling_rate is None else ph.sampling_rate
        q = _positive(q_k, k, "sampling_rate", 1.0)
        r = _positive(ph.noise_scale, k, "noise_scale")
        clip = ph.clip
        if clip is not None:
            if adaptive:
                raise InvalidPrivacyParameterError(
                    f"schedule[{k}].clip: the adaptive clip (clip='auto') runs across the phases; give "
                    "a numeric clip to the fit to fix a clip norm per phase."
                )
            clip = _positive(clip, k, "clip")
        out.append(Phase(int(steps), q, r, clip))
    return tuple(out)


def schedule_event(
    phases: Sequence[Phase], noise_multiplier: float, neighbouring: str, steps: int | None = None
) -> PrivacyEvent:
    """The event of the first ``steps`` iterations (default: all) at base multiplier σ (module
    docstring): one Poisson-subsampled Gaussian event per (truncated) phase, composed."""
    left = sum(p.steps for p in phases) if steps is None else int(steps)
    events = []
    for p in phases:
        if left <= 0:
            break
        t = min(p.steps, left)
        events.append(
            PoissonSubsampledGaussianEvent(
                p.rate, noise_multiplier * p.noise_scale, t, neighbouring=neighbouring
            )
        )
        left -= t
    return events[0] if len(events) == 1 else compose(*events)


def phase_of_step(phases: Sequence[Phase]) -> list[tuple[int, Phase]]:
    """``[(first step, phase), ...]`` in order."""
    out, t = [], 0
    for p in phases:
        out.append((t, p))
        t += p.steps
    return out


__all__ = ["Phase", "phase_of_step", "resolve_schedule", "schedule_event"]
