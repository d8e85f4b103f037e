"""The accountant interface and its registry.

An accountant interprets a :class:`~dpinfer.privacy.events.PrivacyEvent` and answers two
questions: the smallest ε it can certify at a given δ, and the smallest δ at a given ε.
"""

from __future__ import annotations

import math
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import InvalidPrivacyParameterError, UnsupportedEventError
from .. import events as ev
from ..event_conversion import describe
from ..events import PrivacyEvent, flatten
from ..validation import check_delta

#: The registries of :mod:`dpinfer.privacy.events` (the one list of event classes), re-exported.
GAUSSIAN_EVENT_TYPES = ev.GAUSSIAN_EVENT_TYPES
ALL_LEAF_TYPES = ev.ALL_LEAF_EVENT_TYPES

#: Why the tight accountants refuse the DPVI paper's with-replacement batches.
WITH_REPLACEMENT_REFUSAL = (
    "fixed-size batches drawn with replacement are analysed under replace-one only (the batch "
    "size is fixed, so adding a record changes every record's chance of being drawn); declare "
    "the release replace-one, or use Poisson sampling."
)
GAUSSIAN_SVT_REFUSAL = (
    "the Gaussian sparse vector technique is not pure DP and has a Rényi-DP analysis only (Zhu & "
    "Wang 2020, Theorem 8), which the 'rdp' accountant uses and the 'pld' accountant turns into a "
    "dominating PLD."
)
_REGISTRY: dict[str, Callable[[], Accountant]] = {}

#: ε answers kept by :meth:`Accountant.epsilon` (least recently used dropped first).
EPSILON_MEMO_SIZE = 4096
_memo: OrderedDict[tuple[Any, ...], float] = OrderedDict()
_memo_lock = threading.Lock()


def clear_epsilon_memo() -> None:
    """Forget every remembered ε (:meth:`Accountant.epsilon`); for tests that patch an accountant."""
    with _memo_lock:
        _memo.clear()


def _settings_key(acc: Accountant) -> tuple[Any, ...]:
    """The accountant's class and settings (its attributes; arrays by dtype, shape and bytes)."""
    items = tuple(
        (k, (v.dtype.str, v.shape, v.tobytes()) if isinstance(v, np.ndarray) else v)
        for k, v in sorted(vars(acc).items())
    )
    return (type(acc), items)


class Accountant(ABC):
    """Turns privacy events into (ε, δ) guarantees under the events' neighbouring relation."""

    name: str = ""

    @abstractmethod
    def _leaf_supported(self, event: PrivacyEvent) -> str | None:
        """``None`` if the leaf event is supported, else the reason why not."""

    @abstractmethod
    def _epsilon(self, event: PrivacyEvent, delta: float) -> float:
        """ε at ``delta`` for a supported event (may be ``math.inf``)."""

    def analysis(self, leaf: PrivacyEvent) -> tuple[str, str]:
        """(kind, method) of the analysis this accountant applies to one leaf event.

        ``kind`` is ``"tight"`` (the leaf's exact privacy curve, up to a pessimistic
        discretisation), ``"rdp"`` (its exact Rényi curve, converted to (ε, δ)), ``"basic"``
        (its (ε, δ) added by basic composition) or ``"dominating"`` (a valid upper bound where no
        tight analysis exists). The privacy report states the slack of every non-tight one.
        """
        return "bound", f"the {self.name!r} accountant's analysis"

    def supports(self, event: PrivacyEvent) -> bool:
        """Whether this accountant can interpret ``event``."""
        return all(self._leaf_supported(e) is None for e in flatten(event))

    def check_supported(self, event: PrivacyEvent) -> None:
        """Raise :class:`UnsupportedEventError` naming the first leaf this accountant cannot handle."""
        if not isinstance(event, PrivacyEvent):
            raise UnsupportedEventError(
                f"accountant {self.name!r} takes a dpinfer PrivacyEvent, got {type(event).__name__}."
            )
        for leaf in flatten(event):
            reason = self._leaf_supported(leaf)
            if reason is not None:
                raise UnsupportedEventError(
                    f"accountant {self.name!r} cannot handle {describe(leaf)}: {reason}"
                )

    def epsilon(self, event: PrivacyEvent, delta: float) -> float:
        """The smallest ε this accountant certifies for ``event`` at ``delta``.

        Returns ``math.inf`` when no finite ε can be certified at that δ.

        Remembered: the answer is a pure function of the accountant's class and settings, the
        event (a frozen, hashable value holding public parameters only) and δ, so the last
        :data:`EPSILON_MEMO_SIZE` answers are reused (a release's report, a ledger's check and a
        calibration ask the same questions again: 125 000 calls in the test suite). An event that
        cannot be hashed is computed every time; an error is never remembered.
        """
        delta = check_delta(delta)
        try:
            key: tuple[Any, ...] | None = (_settings_key(self), event, delta)
            hash(key)
        except TypeError:
            key = None
        if key is not None:
            with _memo_lock:
                hit = _memo.get(key)
                if hit is not None:
                    _memo.move_to_end(key)
                    return hit
        eps = self._compute_epsilon(event, delta)
        if key is not None:
            with _memo_lock:
                _memo[key] = eps
                while len(_memo) > EPSILON_MEMO_SIZE:
                    _memo.popitem(last=False)
        return eps

    def _compute_epsilon(self, event: PrivacyEvent, delta: float) -> float:
        self.check_supported(event)
        leaves = flatten(event)
        if not leaves:
            return 0.0
        if delta == 0.0 and any(isinstance(e, GAUSSIAN_EVENT_TYPES) for e in leaves):
            # A Gaussian mechanism is never pure DP; numerical PLDs can hide this in underflow.
            return math.inf
        return float(self._epsilon(event, delta))

    def delta(self, event: PrivacyEvent, epsilon: float) -> float:
        """The smallest δ this accountant certifies for ``event`` at ``epsilon``.

        The default inverts :meth:`epsilon` by bisection on log δ (ε is non-increasing in δ).
        """
        epsilon = float(epsilon)
        if not math.isfinite(epsilon) or epsilon < 0:
            raise InvalidPrivacyParameterError(f"epsilon must be finite and >= 0, got {epsilon!r}.")
        self.check_supported(event)
        if not flatten(event):
            return 0.0
        return self._delta_by_bisection(event, epsilon)

    def _delta_by_bisection(self, event: PrivacyEvent, epsilon: float) -> float:
        if self._epsilon(event, 0.0) <= epsilon:
            return 0.0
        hi = 1.0 - 1e-12
        if self._epsilon(event, hi) > epsilon:
            return 1.0
        lo = 1e-300
        if self._epsilon(event, lo) <= epsilon:
            return lo
        log_lo, log_hi = math.log(lo), math.log(hi)
        for _ in range(200):
            mid = 0.5 * (log_lo + log_hi)
            if self._epsilon(event, math.exp(mid)) <= epsilon:
                log_hi = mid
            else:
                log_lo = mid
            if log_hi - log_lo < 1e-10:
                break
        return math.exp(log_hi)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def register_accountant(name: str) -> Callable[[type[Accountant]], type[Accountant]]:
    """Class decorator adding an accountant (constructed with no arguments) to the registry."""

    def wrap(cls: type[Accountant]) -> type[Accountant]:
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return wrap


def get_accountant(name: str | Accountant) -> Accountant:
    """An accountant by registry name (``"pure"``, ``"advanced"``, ``"rdp"``, ``"pld"``).

    An :class:`Accountant` instance is returned as is, so configured accountants can be passed
    wherever a name is accepted.
    """
    if isinstance(name, Accountant):
        return name
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise InvalidPrivacyParameterError(
            f"unknown accountant {name!r}; available: {sorted(_REGISTRY)}."
        ) from None


def available_accountants() -> list[str]:
    """Names of all registered accountants."""
    return sorted(_REGISTRY)
