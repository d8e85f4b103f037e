"""The serial backend: every batch in the calling process, in order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .base import Backend


class SerialBackend(Backend):
    """Runs batches one after the other in the calling process (the reference behaviour)."""

    name = "serial"
    n_workers = 1

    def map(self, fn: Callable[[Any], Any], payloads: Sequence[Any]) -> list[Any]:
        return [fn(p) for p in payloads]
