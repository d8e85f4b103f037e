"""The privacy report attached to every private result as ``.privacy``."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..errors import InvalidPrivacyParameterError, UnsupportedEventError
from .accountants import Accountant, get_accountant
from .event_conversion import describe, event_from_dict, event_to_dict
from .events import DiscreteGaussianEvent, DiscreteLaplaceEvent, GaussianEvent, PrivacyEvent, compose, flatten

#: The accountants whose per-leaf ε are compared to find the tightest available analysis.
REFERENCE_ACCOUNTANTS = ("pld", "rdp")


@lru_cache(maxsize=256)
def leaf_analysis(accountant: str, leaf: PrivacyEvent, delta: float) -> dict[str, Any]:
    """Which analysis ``accountant`` uses for one leaf event, and its slack at ``delta``.

    Returns a JSON-ready dict: ``event`` (description), ``analysis`` (the kind:
    ``"tight"``, ``"rdp"``, ``"basic"``, ``"dominating"`` or ``"bound"``, see
    :meth:`~dpinfer.privacy.accountants.Accountant.analysis`), ``method`` (in words, with its
    citation), ``epsilon`` (this leaf alone at ``delta`` under ``accountant``), and, against the
    tightest valid analysis available (the smallest ε any of :data:`REFERENCE_ACCOUNTANTS`
    certifies for the leaf alone), ``reference`` (that accountant), ``reference_epsilon`` and
    ``slack`` = ε / reference ε - 1. A tight analysis has slack 0 by definition (its ε is not
    recomputed elsewhere). The slack of a leaf alone; under composition the composed ε is reported.
    """
    acc = get_accountant(accountant)
    kind, method = acc.analysis(leaf)
    out: dict[str, Any] = {"event": describe(leaf), "analysis": kind, "method": method}
    if kind == "tight":
        out.update(reference=acc.name, slack=0.0)
        return out
    try:
        eps = acc.epsilon(leaf, delta)
    except (UnsupportedEventError, InvalidPrivacyParameterError):
        return out
    refs = {acc.name: eps}
    for name in REFERENCE_ACCOUNTANTS:
        if name == acc.name:
            continue
        try:
            refs[name] = get_accountant(name).epsilon(leaf, delta)
        except (UnsupportedEventError, InvalidPrivacyParameterError):
            continue
    best = min(refs, key=lambda k: refs[k])
    ref = refs[best]
    out.update(epsilon=eps, reference=best, reference_epsilon=ref, slack=_slack(eps, ref))
    if isinstance(leaf, DiscreteGaussianEvent) and leaf.dimension > 1:
        # no valid tight analysis exists: the continuous Gaussian at the same σ/Δ is the
        # near-exact reference (within 1e-3 in ε for σ >> 1 grid unit), not a valid bound itself
        ideal = get_accountant("pld").epsilon(GaussianEvent(leaf.noise_multiplier), delta)
        out.update(exact_reference="continuous Gaussian, same sigma/sensitivity", exact_epsilon=ideal,
                   exact_slack=_slack(eps, ideal))
    return out


def _slack(eps: float, ref: float) -> float:
    if ref > 0 and math.isfinite(ref) and math.isfinite(eps):
        return max(eps / ref - 1.0, 0.0)
    return 0.0


@dataclass(frozen=True, repr=False)
class PrivacyReport:
    """What a release guarantees and how that was derived.

    Attributes
    ----------
    epsilon, delta
        The guarantee certified by ``accountant`` for the composition of ``events``.
    accountant
        Registry name of the accountant that computed ``epsilon``.
    neighbouring
        The neighbouring relation of the guarantee (``"replace-one"`` or ``"add-remove"``).
    sensitivity
        The sensitivity the noise was calibrated to (a number, or a mapping for several).
    events
        The privacy events of the release.
    mechanism
        A short name of the mechanism (``"laplace"``, ``"abcdp-svt"``, ``"dpvi"``, ...).
    insecure_rng
        True if the noise came from ``PrivacyRNG.insecure_deterministic``: NO privacy.
    details
        Further mechanism-specific facts (noise scale, clip norm, sampling rate, ...).
    accounted
        True if the release was charged to a budget ledger before it happened; False if it was
        released without one (an explicit choice: nothing bounds that data set's total spend).
    """

    epsilon: float
    delta: float
    accountant: str
    neighbouring: str
    sensitivity: Any
    events: tuple[PrivacyEvent, ...]
    mechanism: str = ""
    insecure_rng: bool = False
    details: dict[str, Any] = field(default_factory=dict)
    accounted: bool = True

    @classmethod
    def from_event(
        cls,
        event: PrivacyEvent,
        delta: float,
        accountant: str | Accountant,
        sensitivity: Any,
        mechanism: str = "",
        insecure_rng: bool = False,
        details: dict[str, Any] | None = None,
        accounted: bool = True,
    ) -> PrivacyReport:
        """Build a report by asking ``accountant`` for ε at ``delta``."""
        acc = get_accountant(accountant)
        return cls(
            epsilon=acc.epsilon(event, delta),
            delta=float(delta),
            accountant=acc.name,
            neighbouring=event.neighbouring,
            sensitivity=sensitivity,
            events=tuple(flatten(event)),
            mechanism=mechanism,
            insecure_rng=bool(insecure_rng),
            details=dict(details or {}),
            accounted=bool(accounted),
        )

    @property
    def analyses(self) -> list[dict[str, Any]]:
        """For each distinct event: the analysis used and its slack against the tightest
        available (:func:`leaf_analysis`; computed on first use, cached)."""
        out: list[dict[str, Any]] = []
        seen: set[PrivacyEvent] = set()
        for leaf in self.events:
            if leaf in seen:
                continue
            seen.add(leaf)
            try:
                out.append(leaf_analysis(self.accountant, leaf, self.delta))
            except (UnsupportedEventError, InvalidPrivacyParameterError, KeyError):
                out.append({"event": describe(leaf), "analysis": "unknown"})
        return out

    @property
    def event(self) -> PrivacyEvent:
        """All events of the release composed into one."""
        return compose(*self.events)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "accountant": self.accountant,
            "neighbouring": self.neighbouring,
            "sensitivity": self.sensitivity,
            "mechanism": self.mechanism,
            "insecure_rng": self.insecure_rng,
            "events": [event_to_dict(e) for e in self.events],
            "details": self.details,
            "accounted": self.accounted,
            "analyses": self.analyses,
        }

    def to_json(self, **kwargs: Any) -> str:
        """The report as a JSON string."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyReport:
        """Inverse of :meth:`to_dict` (a report written before ``accounted`` existed reads as
        accounted)."""
        data = dict(data)
        data.pop("analyses", None)  # recomputed from the events
        data["accounted"] = bool(data.get("accounted", True))
        data["events"] = tuple(event_from_dict(e) for e in data.get("events", ()))
        return cls(**data)

    def summary(self) -> str:
        """A few human-readable lines: one sensitivity, in the user's units (an event calibrated
        on an integer grid is described by its σ/Δ, not by its grid-unit σ and Δ, which are in
        :meth:`to_dict`), and every detail :func:`~dpinfer.results.display.brief` (a trace as its
        length, min, median and max; the full values are in :meth:`to_dict`)."""
        from ..results.display import brief

        lines = [
            f"privacy: ({self.epsilon:.6g}, {self.delta:.3g})-DP, {self.neighbouring}, "
            f"accountant '{self.accountant}', mechanism '{self.mechanism}'",
            f"  sensitivity: {brief(self.sensitivity)}",
        ]
        printed = {describe(e): printed_event(e) for e in self.events}
        lines += [f"  event: {printed_event(e)}" for e in self.events]
        for a in self.analyses:
            if a.get("analysis") in (None, "tight"):
                continue
            shown = printed.get(a["event"], a["event"])
            line = f"  analysis of {shown}: {a['analysis']} ({a.get('method', '')})"
            if "reference_epsilon" in a:
                line += (f"; slack {100 * a['slack']:.1f}% in epsilon against the tightest available "
                         f"({a['reference']}: {a['reference_epsilon']:.4g})")
            if "exact_epsilon" in a:
                line += f", {100 * a['exact_slack']:.1f}% against the {a['exact_reference']}"
            lines.append(line)
        if self.details:
            lines.append("  details: " + ", ".join(f"{k}={brief(v)}" for k, v in self.details.items()))
        if self.insecure_rng:
            lines.append("  WARNING: noise from an INSECURE deterministic RNG: no privacy.")
        if not self.accounted:
            lines.append("  NOT ACCOUNTED: released without a ledger")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        """One line: ε, δ, accountant, mechanism (the events and details are in :meth:`summary`
        and :meth:`to_dict`)."""
        flags = ("" if not self.insecure_rng else ", INSECURE RNG") + (
            "" if self.accounted else ", NOT ACCOUNTED")
        return (f"<PrivacyReport: ({self.epsilon:.4g}, {self.delta:.3g})-DP, {self.neighbouring}, "
                f"accountant {self.accountant!r}, mechanism {self.mechanism!r}, "
                f"{len(self.events)} event{'s' if len(self.events) != 1 else ''}{flags}>")

    def _repr_html_(self) -> str:
        from ..results.display import report_html

        return report_html(self, self.summary().splitlines())


def printed_event(event: PrivacyEvent) -> str:
    """:func:`describe` for a printed report: an event calibrated on an integer grid (its σ and
    sensitivity in grid units) is shown by its unit-free σ/Δ, so that the report's one
    sensitivity is the one in the user's units."""
    if isinstance(event, DiscreteGaussianEvent):
        return (f"DiscreteGaussianEvent(noise_multiplier={event.noise_multiplier:.6g}, "
                f"dimension={event.dimension}; {event.neighbouring})")
    if isinstance(event, DiscreteLaplaceEvent):
        return f"DiscreteLaplaceEvent(epsilon={event.epsilon:.6g}; {event.neighbouring})"
    return describe(event)


@dataclass(frozen=True)
class PrivateRelease:
    """A released statistic with its privacy report: what every release of a statistic returns
    (:meth:`~dpinfer.privacy.mechanisms.base.Mechanism.release`, :func:`~dpinfer.privacy.laplace`,
    :func:`~dpinfer.privacy.gaussian`, the clamped releases of :mod:`dpinfer.release.streaming`).

    Attributes
    ----------
    value
        The released value: a vector for a mechanism's release; for ``laplace``/``gaussian`` the
        shape of the statistic given (a float for a scalar).
    privacy
        The :class:`PrivacyReport` of the release (its guarantee, accountant and events).
    details
        Public facts about the release (e.g. the grid of a floating-point-safe release).

    Notes
    -----
    It is not a tuple: ``value, event = laplace(...)``, the spelling before issue 37, raises a
    :class:`TypeError` naming ``.value``, ``.event`` and ``.privacy`` instead of unpacking
    (a two-field unpacking would otherwise bind the report where the event was).
    """

    value: Any
    privacy: PrivacyReport
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def event(self) -> PrivacyEvent:
        """The event the release was charged for: its report's one event, or its events composed
        into one."""
        events = self.privacy.events
        return events[0] if len(events) == 1 else self.privacy.event

    def __iter__(self) -> Any:
        raise TypeError(
            "a PrivateRelease is not a (value, event) tuple: read release.value, release.event and "
            "release.privacy (laplace() and gaussian() return a PrivateRelease since issue 37)."
        )
