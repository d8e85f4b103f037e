"""Per-request wall-clock limits (``service.request_timeout``): nothing charged on a timeout before
the charge, and never charged-and-lost after it.

A release request runs validate → plan (the non-private part: checks, calibration) → reserve the
allowance → charge → draw → store. Its :class:`RequestClock` starts when the request arrives:

* every step before the charge checks the clock (:meth:`RequestClock.check`), and the charge itself
  is entered only through :meth:`RequestClock.begin_charge`, which refuses once the limit has passed
  or the HTTP layer has given up (:meth:`RequestClock.cancel`): such a request is ``aborted``,
  nothing charged, nothing released;
* once the charge has begun it is never interrupted: the draw runs to its end and the release is
  stored with its request (:meth:`dpinfer.service.store.Store.finish`), so the analyst fetches it
  with ``GET /v1/requests/{id}`` (the timeout answer carries the id). A dry run has no charge: its
  DPVI loop stops at the next step past the limit.

:meth:`RequestClock.cancel` and :meth:`RequestClock.begin_charge` take one lock, so the HTTP
layer's answer ("nothing was charged" or "charged, fetch it later") is always the truth.
"""

from __future__ import annotations

import threading
import time

from ..errors import DPInferError


class RequestTimeout(DPInferError):
    """A request past the service's time limit before its charge: nothing was charged (503)."""

    def __init__(self, limit: float) -> None:
        super().__init__(
            f"the request ran past this service's time limit of {limit:g} s (service.request_timeout) "
            "before its charge. Nothing was charged."
        )
        self.limit = limit


class RequestClock:
    """The time limit of one request (module docstring). ``rid``: its request id once reserved."""

    def __init__(self, limit: float) -> None:
        self.limit = float(limit)
        self.deadline = time.monotonic() + self.limit
        self.rid: str | None = None
        self._state = "running"  # -> "charging" | "cancelled"
        self._lock = threading.Lock()

    def expired(self) -> bool:
        return self._state == "cancelled" or time.monotonic() >= self.deadline

    def check(self) -> None:
        """Raise :class:`RequestTimeout` if the limit has passed (only before the charge)."""
        if self._state != "charging" and self.expired():
            raise RequestTimeout(self.limit)

    def begin_charge(self) -> None:
        """Enter the charge, or raise :class:`RequestTimeout` (nothing charged) if it is too late."""
        with self._lock:
            if self.expired():
                self._state = "cancelled"
                raise RequestTimeout(self.limit)
            self._state = "charging"

    def cancel(self) -> bool:
        """Give up on the request: True if it had not begun its charge (it never will)."""
        with self._lock:
            if self._state == "charging":
                return False
            self._state = "cancelled"
            return True

    @property
    def charging(self) -> bool:
        return self._state == "charging"


__all__ = ["RequestClock", "RequestTimeout"]
