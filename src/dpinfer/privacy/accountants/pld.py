"""Privacy-loss-distribution accounting (tight numerical composition) via dp-accounting."""

from __future__ import annotations

from collections import Counter

from dp_accounting import NeighboringRelation
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from ..events import (
    ADD_REMOVE,
    LEAF_EVENT_TYPES,
    GaussianEvent,
    LaplaceEvent,
    PoissonSubsampledGaussianEvent,
    PrivacyEvent,
    SampledWithReplacementGaussianEvent,
    flatten,
)
from .base import WITH_REPLACEMENT_REFUSAL, Accountant, register_accountant


@register_accountant("pld")
class PLDAccountant(Accountant):
    """Privacy-loss-distribution accountant (pessimistic discretisation, dp-accounting).

    Laplace and Gaussian events use their exact PLDs; the Poisson-subsampled Gaussian uses
    dp-accounting's analysis under the event's own relation (add-remove or replace-one); pure and
    known (ε, δ) events use the worst-case PLD of an (ε, δ)-DP mechanism.

    Parameters
    ----------
    value_discretization_interval
        Grid of the privacy-loss values (dp-accounting's default 1e-4).
    """

    def __init__(self, value_discretization_interval: float = 1e-4) -> None:
        self.value_discretization_interval = float(value_discretization_interval)

    def _leaf_supported(self, event: PrivacyEvent) -> str | None:
        if isinstance(event, SampledWithReplacementGaussianEvent):
            return WITH_REPLACEMENT_REFUSAL
        if isinstance(event, LEAF_EVENT_TYPES):
            return None
        return "no PLD analysis for this event type."

    def _leaf_pld(self, event: PrivacyEvent, count: int) -> pld_lib.PrivacyLossDistribution:
        vdi = self.value_discretization_interval
        if isinstance(event, GaussianEvent):
            # k-fold composition of a Gaussian is a Gaussian with std σ/sqrt(k).
            return pld_lib.from_gaussian_mechanism(
                standard_deviation=event.noise_multiplier / count**0.5,
                value_discretization_interval=vdi,
            )
        if isinstance(event, LaplaceEvent):
            out = pld_lib.from_laplace_mechanism(
                parameter=1.0 / event.epsilon, value_discretization_interval=vdi
            )
        elif isinstance(event, PoissonSubsampledGaussianEvent):
            relation = (
                NeighboringRelation.ADD_OR_REMOVE_ONE
                if event.neighbouring == ADD_REMOVE
                else NeighboringRelation.REPLACE_ONE
            )
            out = pld_lib.from_gaussian_mechanism(
                standard_deviation=event.noise_multiplier,
                sampling_prob=event.sampling_rate,
                neighboring_relation=relation,
                value_discretization_interval=vdi,
            ).self_compose(event.steps)
        else:
            params = pld_common.DifferentialPrivacyParameters(
                event.epsilon,
                getattr(event, "delta", 0.0),  # type: ignore[attr-defined]
            )
            out = pld_lib.from_privacy_parameters(params, value_discretization_interval=vdi)
        return out.self_compose(count) if count > 1 else out

    def pld(self, event: PrivacyEvent) -> pld_lib.PrivacyLossDistribution:
        """The composed privacy-loss distribution of ``event``."""
        counts = Counter(flatten(event))
        total = pld_lib.identity(value_discretization_interval=self.value_discretization_interval)
        for leaf, count in counts.items():
            total = total.compose(self._leaf_pld(leaf, count))
        return total

    def _epsilon(self, event: PrivacyEvent, delta: float) -> float:
        return self.pld(event).get_epsilon_for_delta(delta)

    def delta(self, event: PrivacyEvent, epsilon: float) -> float:
        self.check_supported(event)
        if not flatten(event):
            return 0.0
        return float(self.pld(event).get_delta_for_epsilon(float(epsilon)))
