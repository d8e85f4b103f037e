"""Absurd sizes are refused before anything is allocated, simulated or charged.

A request for 10¹² particles or draws used to reach numpy and end in a raw ``MemoryError``
(or in a loop that never returned). :func:`check_allocation` estimates the bytes an array of the
requested shape needs and refuses, with the estimate and what to do, when it exceeds half of the
machine's physical memory. It raises :class:`~dpinfer.errors.InvalidDataError` (nothing is charged
or released: callers run it before any charge).
"""

from __future__ import annotations

import math
import os
from typing import Any

from .errors import InvalidDataError

#: The fraction of physical memory one array may claim before it is refused.
MEMORY_FRACTION = 0.5


def physical_memory() -> int:
    """Bytes of physical memory (a conservative 8 GiB where the OS does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 8 * 2**30


def _human(n_bytes: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.3g} {unit}"
    return f"{n_bytes:.0f} bytes"


def check_allocation(what: str, *shape: Any, itemsize: int = 8, copies: float = 1.0) -> None:
    """Refuse ``what`` when ``copies`` arrays of ``shape`` (``itemsize`` bytes each) would need more
    than :data:`MEMORY_FRACTION` of physical memory."""
    n_bytes = float(itemsize) * float(copies) * math.prod(float(s) for s in shape)
    limit = MEMORY_FRACTION * physical_memory()
    if not n_bytes <= limit:
        raise InvalidDataError(
            f"{what} would need about {_human(n_bytes)} of memory, more than half of this machine's "
            f"{_human(physical_memory())}: ask for fewer (or run it in smaller pieces). Nothing was "
            "allocated, simulated or charged."
        )


__all__ = ["MEMORY_FRACTION", "check_allocation", "physical_memory"]
