"""What a budget accounts for a release: the event in the budget's relation, or a refusal.

A budget's accountant and neighbouring relation are chosen once, when it is registered. A release
may be declared under the other relation; :func:`admit` converts it with a proven bound where one
exists, and otherwise refuses it *before* anything is charged or released. It is a pure function
of public quantities (the event and the budget's accountant and relation).

Conversions
-----------
add-remove -> replace-one (always possible): a replacement is a removal followed by an addition,
so a replace-one neighbour is at distance 2 in the add-remove relation and group privacy with
k = 2 applies (Dwork & Roth 2014, Thm 2.2; for additive noise, the sensitivity at most doubles):
:func:`~dpinfer.privacy.event_conversion.to_replace_one`.

replace-one -> add-remove (only where the mechanism's add-remove sensitivity is known): a
replace-one guarantee says nothing about adding a record (for a mean of n records, adding one
changes n, so the replace-one sensitivity (hi - lo)/n does not bound it). The only events whose
parameters fix their add-remove analysis are the Poisson-subsampled Gaussian, whose noise
multiplier is relative to the per-record clip norm C under both relations (a record moves the
clipped sum by at most C when added or removed): it is re-declared add-remove unchanged, which
is valid because the add-remove analysis needs only that bound. Every other replace-one event is
refused, with what to do instead (declare the release under add-remove, with its add-remove
sensitivity).
"""

from __future__ import annotations

import dataclasses

from ..errors import NeighbouringRelationError, UnsupportedEventError
from .accountants import get_accountant
from .event_conversion import describe, to_replace_one
from .events import (
    ADD_REMOVE,
    REPLACE_ONE,
    ComposedEvent,
    PoissonSubsampledGaussianEvent,
    PrivacyEvent,
    flatten,
)
from .validation import check_relation

__all__ = ["admit", "to_add_remove"]


def to_add_remove(event: PrivacyEvent) -> PrivacyEvent:
    """The add-remove event a replace-one ``event`` implies, where its add-remove analysis is
    known (module docstring); :class:`NeighbouringRelationError` naming the first leaf for which
    it is not."""
    if event.neighbouring == ADD_REMOVE:
        return event
    leaves = flatten(event)
    converted: list[PrivacyEvent] = []
    for leaf in leaves:
        if isinstance(leaf, PoissonSubsampledGaussianEvent):
            converted.append(dataclasses.replace(leaf, neighbouring=ADD_REMOVE))
            continue
        raise NeighbouringRelationError(
            f"{describe(leaf)} is calibrated to its sensitivity under replace-one, which does not "
            "bound the change from adding or removing a record (e.g. a mean's sensitivity (hi - lo)/n "
            "assumes n fixed); a replace-one guarantee does not imply an add-remove one. Declare the "
            "release under add-remove (neighbouring='add-remove', with its add-remove sensitivity, "
            "e.g. a clamped sum and a count)."
        )
    if isinstance(event, ComposedEvent):
        return ComposedEvent(tuple(converted))
    return converted[0]


def admit(event: PrivacyEvent, *, accountant: str, neighbouring: str, dataset: str = "") -> PrivacyEvent:
    """The event a budget with ``accountant`` and ``neighbouring`` accounts for ``event``.

    The event is converted to the budget's relation (module docstring) and checked against the
    accountant. Raises, before anything can be charged:

    * :class:`NeighbouringRelationError` when a replace-one event cannot be read under an
      add-remove budget;
    * :class:`UnsupportedEventError` when the budget's accountant cannot account it (only the
      ``"pure"`` and ``"advanced"`` accountants refuse events: ``"pld"`` and ``"rdp"`` account
      every release of the privacy core).

    The messages say what can be done with this budget and never suggest moving the data set
    to another budget or ledger (that would leave its total spend unbounded).
    """
    relation = check_relation(neighbouring)
    name = f"data set {dataset!r}" if dataset else "this budget"
    try:
        converted = to_replace_one(event) if relation == REPLACE_ONE else to_add_remove(event)
    except NeighbouringRelationError as exc:
        raise NeighbouringRelationError(
            f"{name} is budgeted under {relation!r}: {exc} Nothing was charged or released."
        ) from None
    acc = get_accountant(accountant)
    try:
        acc.check_supported(converted)
    except UnsupportedEventError as exc:
        raise UnsupportedEventError(
            f"{exc} The budget of {name} uses the {acc.name!r} accountant, chosen when it was "
            "registered, and cannot account this release; charge it only releases that accountant "
            "accounts (the 'pld' and 'rdp' accountants account every dpinfer release). Nothing was "
            "charged or released."
        ) from None
    return converted
