"""The neighbouring relation of a differential-privacy guarantee, as one enum.

:class:`Neighbouring` is a ``str`` enum: ``Neighbouring.REPLACE_ONE == "replace-one"``, it hashes,
prints, formats and serialises (JSON, ledger rows) as its string, so every function that took
``"replace-one"`` / ``"add-remove"`` takes either spelling, and stored strings compare equal.
:func:`~dpinfer.privacy.validation.check_relation` turns either into the plain string, so events,
ledger rows and charges are the same whichever spelling the caller used.
"""

from __future__ import annotations

from enum import Enum


class Neighbouring(str, Enum):
    """Which data sets are neighbours.

    ``REPLACE_ONE``: data sets of equal size differing in one record (bounded DP).
    ``ADD_REMOVE``: one data set is the other plus one record (unbounded DP).
    """

    REPLACE_ONE = "replace-one"
    ADD_REMOVE = "add-remove"

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, format_spec: str) -> str:
        return format(str(self.value), format_spec)


#: The valid relation strings, in the order error messages list them.
NEIGHBOURING_RELATIONS: tuple[str, ...] = tuple(str(r.value) for r in Neighbouring)

__all__ = ["NEIGHBOURING_RELATIONS", "Neighbouring"]
