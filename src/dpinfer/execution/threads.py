"""torch's intra-op threads for the duration of a fit: one by default, the caller's choice otherwise.

torch's CPU kernels split each operation over ``torch.get_num_threads()`` OpenMP threads (the
machine's cores by default) and meet at a barrier after it. When other processes hold the cores,
the threads wait for each other at every barrier: measured on a 2-core machine with one other busy
process, a DPVI step on a batch of 1000 records with 100 features took 2.2–2.6 ms on one thread and
93–176 ms on two; a batch of 10⁴, 24–30 ms against 188–192 ms. Only large tensors repay the threads
on a quiet machine (10⁵ records per batch on 16 cores: ``benchmarks/results/gpu.json``, the CPU
rows). So the fits that run many small steps (DPVI, SPPE/SPLE training) default to one thread, and
``threads=None`` leaves torch's setting alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..errors import InvalidDataError


def check_threads(value: Any) -> int | None:
    """``value`` as a thread count, ``None`` kept; anything else is refused with a clear error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value < 1:
        raise InvalidDataError(
            f"threads must be a positive integer or None (torch's own setting), got {value!r}."
        )
    return int(value)


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Temporarily set torch's intra-op threads to ``n`` (``None``: leave them unchanged)."""
    if n is None:
        yield
        return
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(old)


__all__ = ["check_threads", "torch_threads"]
