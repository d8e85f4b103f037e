"""Basic composition of pure and approximate DP guarantees: ε and δ add up."""

from __future__ import annotations

import math

from ..events import (
    DiscreteLaplaceEvent,
    GaussianSparseVectorEvent,
    KnownEvent,
    LaplaceEvent,
    PrivacyEvent,
    SparseVectorEvent,
    flatten,
)
from .base import GAUSSIAN_SVT_REFUSAL, Accountant, register_accountant


def pure_totals(event: PrivacyEvent) -> tuple[float, float]:
    """(Σε, Σδ) of the leaves of ``event`` (Dwork & Roth 2014, Theorem 3.16)."""
    eps = 0.0
    delta = 0.0
    for leaf in flatten(event):
        eps += leaf.epsilon  # type: ignore[attr-defined]
        delta += getattr(leaf, "delta", 0.0)
    return eps, delta


@register_accountant("pure")
class PureAccountant(Accountant):
    """Sum of ε (and of δ for :class:`KnownEvent`) over the composed events.

    Handles (discrete) Laplace, sparse-vector and known-(ε, δ) events. It certifies (Σε, Σδ) and nothing
    better: ``epsilon(event, delta)`` is Σε when ``delta >= Σδ`` and ``inf`` otherwise.
    """

    def _leaf_supported(self, event: PrivacyEvent) -> str | None:
        if isinstance(event, (LaplaceEvent, DiscreteLaplaceEvent, SparseVectorEvent, KnownEvent)):
            return None
        if isinstance(event, GaussianSparseVectorEvent):
            return GAUSSIAN_SVT_REFUSAL
        return (
            "it is not a pure/known-(ε, δ) event (the 'pld' and 'rdp' accountants analyse Gaussian "
            "mechanisms)."
        )

    def _epsilon(self, event: PrivacyEvent, delta: float) -> float:
        eps, total_delta = pure_totals(event)
        return eps if total_delta <= delta * (1 + 1e-12) else math.inf

    def delta(self, event: PrivacyEvent, epsilon: float) -> float:
        super().check_supported(event)
        eps, total_delta = pure_totals(event)
        return total_delta if epsilon >= eps * (1 - 1e-12) else 1.0
