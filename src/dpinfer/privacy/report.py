"""The privacy report attached to every private result as ``.privacy``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .accountants import Accountant, get_accountant
from .event_conversion import describe, event_from_dict, event_to_dict
from .events import PrivacyEvent, compose, flatten


@dataclass(frozen=True)
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
        }

    def to_json(self, **kwargs: Any) -> str:
        """The report as a JSON string."""
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyReport:
        """Inverse of :meth:`to_dict` (a report written before ``accounted`` existed reads as
        accounted)."""
        data = dict(data)
        data["accounted"] = bool(data.get("accounted", True))
        data["events"] = tuple(event_from_dict(e) for e in data.get("events", ()))
        return cls(**data)

    def summary(self) -> str:
        """A few human-readable lines."""
        lines = [
            f"privacy: ({self.epsilon:.6g}, {self.delta:.3g})-DP, {self.neighbouring}, "
            f"accountant '{self.accountant}', mechanism '{self.mechanism}'",
            f"  sensitivity: {self.sensitivity}",
        ]
        lines += [f"  event: {describe(e)}" for e in self.events]
        if self.details:
            lines.append("  details: " + ", ".join(f"{k}={v}" for k, v in self.details.items()))
        if self.insecure_rng:
            lines.append("  WARNING: noise from an INSECURE deterministic RNG: no privacy.")
        if not self.accounted:
            lines.append("  NOT ACCOUNTED: released without a ledger")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()
