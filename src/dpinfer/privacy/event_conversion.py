"""Converting privacy events: to the replace-one relation, to and from JSON, to one line of text.

The events themselves (:mod:`dpinfer.privacy.events`) are plain frozen data; this module holds
what is *done* with them outside an accountant:

* :func:`to_replace_one` -- the replace-one event an add-remove event implies (group privacy),
* :func:`event_to_dict` / :func:`event_from_dict` -- the JSON form stored in ledgers and reports,
* :func:`describe` -- a one-line description for messages and ``dpinfer budget history``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ..errors import InvalidPrivacyParameterError
from . import events as ev
from .events import REPLACE_ONE, PrivacyEvent

__all__ = ["describe", "event_from_dict", "event_to_dict", "to_replace_one"]


def to_replace_one(event: PrivacyEvent) -> PrivacyEvent:
    """Convert an add-remove event into the replace-one event it implies.

    A replacement is a removal followed by an addition, so sensitivities under replace-one are at
    most twice those under add-remove (group privacy with k = 2):

    * Laplace(ε) and SVT(c, ε) -> the same with 2ε; discrete Laplace (ε, Δ) -> (2ε, 2Δ),
    * discrete Gaussian (σ, Δ) -> (σ, 2Δ),
    * Gaussian(σ) -> Gaussian(σ/2) (the L2 sensitivity doubles), and the same for both noise
      multipliers of a Gaussian sparse vector,
    * Known(ε, δ) -> Known(2ε, (1 + e^ε)δ) (group privacy, Dwork & Roth 2014, Thm 2.2),
    * Poisson-subsampled (or with-replacement) Gaussian: the same mechanism analysed under
      replace-one (its noise multiplier is relative to the per-example clip norm under both
      relations).

    Replace-one events are returned unchanged. The converse conversion is not valid in general
    and is not offered.
    """
    if event.neighbouring == REPLACE_ONE:
        return event
    if isinstance(event, ev.ComposedEvent):
        return ev.ComposedEvent(tuple(to_replace_one(e) for e in event.events))
    if isinstance(event, (ev.LaplaceEvent, ev.SparseVectorEvent)):
        return dataclasses.replace(event, epsilon=2 * event.epsilon, neighbouring=REPLACE_ONE)
    if isinstance(event, ev.DiscreteLaplaceEvent):
        return ev.DiscreteLaplaceEvent(2 * event.epsilon, 2 * event.sensitivity, REPLACE_ONE)
    if isinstance(event, ev.DiscreteGaussianEvent):
        return ev.DiscreteGaussianEvent(event.sigma, 2 * event.sensitivity, event.dimension, REPLACE_ONE)
    if isinstance(event, ev.GaussianEvent):
        return ev.GaussianEvent(event.noise_multiplier / 2, neighbouring=REPLACE_ONE)
    if isinstance(event, ev.GaussianSparseVectorEvent):
        return dataclasses.replace(
            event,
            threshold_noise_multiplier=event.threshold_noise_multiplier / 2,
            query_noise_multiplier=event.query_noise_multiplier / 2,
            neighbouring=REPLACE_ONE,
        )
    if isinstance(event, ev.KnownEvent):
        delta = (1.0 + math.exp(event.epsilon)) * event.delta
        if delta >= 1.0:
            raise InvalidPrivacyParameterError(
                f"group privacy turns {event} into a vacuous guarantee (delta >= 1)."
            )
        return ev.KnownEvent(2 * event.epsilon, delta, REPLACE_ONE, event.description)
    if isinstance(event, (ev.PoissonSubsampledGaussianEvent, ev.SampledWithReplacementGaussianEvent)):
        return dataclasses.replace(event, neighbouring=REPLACE_ONE)
    raise InvalidPrivacyParameterError(f"no replace-one conversion known for {event!r}.")


#: Every event type by class name, for :func:`event_from_dict`.
_EVENT_TYPES: dict[str, type[PrivacyEvent]] = ev.EVENT_TYPES


def event_to_dict(event: PrivacyEvent) -> dict[str, Any]:
    """A JSON-ready dictionary of an event (``{"type": ..., fields...}``)."""
    out: dict[str, Any] = {"type": type(event).__name__}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.name == "events":
            value = [event_to_dict(e) for e in value]
        out[f.name] = value
    return out


def event_from_dict(data: dict[str, Any]) -> PrivacyEvent:
    """Inverse of :func:`event_to_dict`."""
    data = dict(data)
    kind = data.pop("type", None)
    if kind not in _EVENT_TYPES:
        raise InvalidPrivacyParameterError(f"unknown privacy event type {kind!r}.")
    if kind == "ComposedEvent":
        data["events"] = tuple(event_from_dict(e) for e in data.get("events", ()))
    return _EVENT_TYPES[kind](**data)


def describe(event: PrivacyEvent) -> str:
    """A one-line human-readable description of an event."""
    if isinstance(event, ev.ComposedEvent):
        return "Composed[" + ", ".join(describe(e) for e in event.events) + "]"
    fields = ", ".join(
        f"{f.name}={_short(getattr(event, f.name))}"
        for f in dataclasses.fields(event)
        if f.name not in ("neighbouring", "description")
    )
    return f"{type(event).__name__}({fields}; {event.neighbouring})"


def _short(value: Any) -> str:
    """A parameter for reading: floats to 6 significant digits (``sigma=26265.4``, not
    ``26265.400491901884``); the exact values stay in :func:`event_to_dict`."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, float) for v in value):
        inner = ", ".join(f"{v:.6g}" for v in value)
        return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else (
            f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
        )
    return repr(value)
