"""Rényi-DP accounting, delegating the mechanism analyses to dp-accounting."""

from __future__ import annotations

from collections.abc import Sequence

import dp_accounting
import numpy as np
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

from ..events import (
    ADD_REMOVE,
    LEAF_EVENT_TYPES,
    DiscreteGaussianEvent,
    GaussianEvent,
    GaussianSparseVectorEvent,
    KnownEvent,
    LaplaceEvent,
    PoissonSubsampledGaussianEvent,
    PrivacyEvent,
    SampledWithReplacementGaussianEvent,
    flatten,
)
from ..gaussian_svt import gaussian_svt_rdp
from .base import WITH_REPLACEMENT_REFUSAL, Accountant, register_accountant


def to_dp_accounting_event(event: PrivacyEvent) -> dp_accounting.DpEvent | None:
    """The dp-accounting event with the same privacy loss, or None if there is none.

    Laplace and Gaussian parameters are relative to the sensitivity under the event's own
    relation, so their privacy loss is that of dp-accounting's unit-sensitivity mechanism.
    """
    if isinstance(event, LaplaceEvent):
        return dp_accounting.LaplaceDpEvent(1.0 / event.epsilon)
    if isinstance(event, GaussianEvent):
        return dp_accounting.GaussianDpEvent(event.noise_multiplier)
    if isinstance(event, DiscreteGaussianEvent):
        # ½(Δ/σ)²-zCDP in any dimension (Canonne, Kamath & Steinke 2020, Thm 14): the Rényi
        # curve α Δ²/(2σ²) of the continuous Gaussian with multiplier σ/Δ.
        return dp_accounting.GaussianDpEvent(event.noise_multiplier)
    if isinstance(event, PoissonSubsampledGaussianEvent):
        return dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(
                event.sampling_rate, dp_accounting.GaussianDpEvent(event.noise_multiplier)
            ),
            event.steps,
        )
    return None


def pure_dp_rdp(epsilon: float, orders: np.ndarray) -> np.ndarray:
    """RDP curve implied by pure ε-DP: min(ε, α ε²/2) (Bun & Steinke 2016, Prop. 3.3)."""
    return np.minimum(epsilon, 0.5 * orders * epsilon**2)


@register_accountant("rdp")
class RDPAccountant(Accountant):
    """Rényi-DP composition over a grid of orders (dp-accounting's analyses and conversion).

    Pure ε-DP events (SVT, discrete Laplace, known (ε, 0)) enter through the RDP curve
    min(ε, αε²/2); the Gaussian sparse vector through its own curve
    (:func:`~dpinfer.privacy.gaussian_svt.gaussian_svt_rdp`). Known events
    with δ > 0 and Poisson-subsampled Gaussians under replace-one have no RDP analysis here:
    use the ``"pld"`` accountant for those.
    """

    def __init__(self, orders: Sequence[float] | None = None) -> None:
        self.orders = np.asarray(
            orders if orders is not None else rdp_lib.DEFAULT_RDP_ORDERS, dtype=np.float64
        )

    def _leaf_supported(self, event: PrivacyEvent) -> str | None:
        if isinstance(event, SampledWithReplacementGaussianEvent):
            return WITH_REPLACEMENT_REFUSAL
        if isinstance(event, KnownEvent) and event.delta > 0:
            return "an (ε, δ) guarantee with δ > 0 has no RDP curve; use the 'pld' accountant."
        if isinstance(event, PoissonSubsampledGaussianEvent) and event.neighbouring != ADD_REMOVE:
            return (
                "dp-accounting's RDP analysis of Poisson subsampling is add-remove only; use the "
                "'pld' accountant for a replace-one guarantee."
            )
        if isinstance(event, (*LEAF_EVENT_TYPES, GaussianSparseVectorEvent)):
            return None
        return "no RDP analysis for this event type."

    def rdp_curve(self, event: PrivacyEvent) -> np.ndarray:
        """The composed RDP curve of ``event`` at :attr:`orders`."""
        total = np.zeros_like(self.orders)
        for leaf in flatten(event):
            dpe = to_dp_accounting_event(leaf)
            if isinstance(leaf, GaussianSparseVectorEvent):
                total += gaussian_svt_rdp(leaf, self.orders)  # Zhu & Wang 2020, Thm 8
            elif dpe is not None:
                acc = rdp_lib.RdpAccountant(self.orders)
                acc.compose(dpe)
                total += acc.rdp
            else:
                total += pure_dp_rdp(leaf.epsilon, self.orders)  # type: ignore[attr-defined]
        return total

    def _epsilon(self, event: PrivacyEvent, delta: float) -> float:
        eps, _ = rdp_lib.compute_epsilon(self.orders, self.rdp_curve(event), delta)
        return eps

    def delta(self, event: PrivacyEvent, epsilon: float) -> float:
        self.check_supported(event)
        if not flatten(event):
            return 0.0
        d, _ = rdp_lib.compute_delta(self.orders, self.rdp_curve(event), float(epsilon))
        return float(d)
