"""Privacy-loss-distribution accounting (tight numerical composition) via dp-accounting."""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING

from ...deferred import DeferredModule
from .. import events as ev
from ..discrete_gaussian_pld import discrete_gaussian_pld
from ..dominating import pld_from_rdp, with_replacement_gaussian_pld
from ..events import ADD_REMOVE, REPLACE_ONE, PrivacyEvent, flatten
from ..gaussian_pld import gaussian_pld
from ..gaussian_svt import gaussian_svt_rdp
from .base import ALL_LEAF_TYPES, WITH_REPLACEMENT_REFUSAL, Accountant, register_accountant

if TYPE_CHECKING:
    import dp_accounting
    from dp_accounting.pld import common as pld_common
    from dp_accounting.pld import privacy_loss_distribution as pld_lib
else:  # imported at the first accounting, not at start-up (see dpinfer.deferred)
    dp_accounting = DeferredModule("dp_accounting")
    pld_common = DeferredModule("dp_accounting.pld.common")
    pld_lib = DeferredModule("dp_accounting.pld.privacy_loss_distribution")

#: Grid points a single leaf's PLD may use before the loss grid is coarsened.
_MAX_POINTS = 2e5
#: The coarsest grid a with-replacement leaf asks for (see :meth:`PLDAccountant.leaf_resolution`).
_WITH_REPLACEMENT_VDI = 1e-2
#: Pure leaves above this ε are composed basically (see :meth:`PLDAccountant.leaf_basic`).
_BIG_PURE_EPSILON = 20.0


@lru_cache(maxsize=32)
def _leaf_pld(event: PrivacyEvent, count: int, vdi: float) -> pld_lib.PrivacyLossDistribution:
    """The PLD of ``count`` compositions of ``event`` on the loss grid ``vdi``.

    Cached: a pure function of frozen, hashable arguments (events are frozen dataclasses), and
    0.01-0.1 s to build for a Gaussian leaf (its loss grid evaluated in numpy by
    :func:`~dpinfer.privacy.gaussian_pld.gaussian_pld`; 0.03-1 s with dp-accounting's per-point
    loop), which every report of the same release would otherwise repeat. The PLD objects are
    never mutated (composition returns new ones).
    """
    if isinstance(event, ev.GaussianEvent):
        # k-fold composition of a Gaussian is a Gaussian with std σ/sqrt(k).
        return gaussian_pld(standard_deviation=event.noise_multiplier / count**0.5,
                            value_discretization_interval=vdi)
    if isinstance(event, ev.LaplaceEvent):
        out = pld_lib.from_laplace_mechanism(
            parameter=1.0 / event.epsilon, value_discretization_interval=vdi
        )
    elif isinstance(event, ev.DiscreteLaplaceEvent) and event.sensitivity <= 2**17:
        out = pld_lib.from_discrete_laplace_mechanism(
            parameter=event.epsilon / event.sensitivity,
            sensitivity=event.sensitivity,
            value_discretization_interval=vdi,
        )
    elif isinstance(event, ev.DiscreteGaussianEvent) and event.dimension > 1:
        # no tight PLD: a dominating one from its zCDP curve α·Δ²/(2σ²) (CKS 2020, Thm 14),
        # through the profile bound (D2) and connect-the-dots (D1) of privacy.dominating
        z = event.noise_multiplier
        out = pld_from_rdp(lambda orders: orders / (2.0 * z * z), value_discretization_interval=vdi)
    elif isinstance(event, ev.GaussianSparseVectorEvent):
        # no tight PLD: a dominating one from its Rényi curve (Zhu & Wang 2020, Thm 8)
        out = pld_from_rdp(lambda orders: gaussian_svt_rdp(event, orders), value_discretization_interval=vdi)
    elif isinstance(event, ev.SampledWithReplacementGaussianEvent):
        # no tight PLD: the multiplicity-revealed dominating pair of privacy.dominating
        out = with_replacement_gaussian_pld(
            event.sampling_rate, event.noise_multiplier, event.steps, value_discretization_interval=vdi
        )
    elif isinstance(event, ev.DiscreteGaussianEvent):
        # exact (pessimistic) PLD of the discrete Gaussian, CKS 2020 Thm 7: dp-accounting's
        # from_discrete_gaussian_mechanism, to the bit, with its buckets filled in numpy
        out = discrete_gaussian_pld(
            sigma=event.sigma,
            sensitivity=int(event.sensitivity),
            value_discretization_interval=vdi,
        )
    elif isinstance(event, ev.PoissonSubsampledGaussianEvent):
        relation = (
            dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
            if event.neighbouring == ADD_REMOVE
            else dp_accounting.NeighboringRelation.REPLACE_ONE
        )
        out = gaussian_pld(
            standard_deviation=event.noise_multiplier,
            sampling_prob=event.sampling_rate,
            neighboring_relation=relation,
            value_discretization_interval=vdi,
        ).self_compose(event.steps)
    else:
        params = pld_common.DifferentialPrivacyParameters(
            getattr(event, "epsilon"),  # noqa: B009 - the pure/approximate leaf events (LaplaceEvent, KnownEvent)
            getattr(event, "delta", 0.0),
        )
        out = pld_lib.from_privacy_parameters(params, value_discretization_interval=vdi)
    return out.self_compose(count) if count > 1 else out


@register_accountant("pld")
class PLDAccountant(Accountant):
    """Privacy-loss-distribution accountant (pessimistic discretisation, dp-accounting).

    Laplace and Gaussian events, continuous or discrete (one-dimensional), use their exact PLDs;
    the Poisson-subsampled Gaussian uses dp-accounting's analysis under the event's own relation
    (add-remove or replace-one); pure and known (ε, δ) events use the worst-case PLD of an
    (ε, δ)-DP mechanism. Pure leaves with ε > 20 compose basically, and tiny noise multipliers
    coarsen the loss grid (both remain valid upper bounds; see :meth:`leaf_basic`, :meth:`resolution`).

    Three leaves have no tight PLD and get a valid *dominating* one
    (:mod:`dpinfer.privacy.dominating`; :func:`~dpinfer.privacy.dominating.analysis_of` names the
    analysis, and the privacy report gives its slack):

    * the multivariate discrete Gaussian (the private GLM's release): ½(Δ/σ)²-zCDP (Canonne,
      Kamath & Steinke 2020, Thm 14), whose privacy profile is bounded by the Rényi conversion
      (D2) and turned into a dominating pair by connect-the-dots on that bound (D1);
    * the Gaussian sparse vector: the same from its Rényi curve (Zhu & Wang 2020, Thm 8);
    * Gaussian sums on batches drawn with replacement (replace-one): the pair that reveals the
      record's multiplicity in the batch (:func:`~dpinfer.privacy.dominating.with_replacement_gaussian_pld`).

    Parameters
    ----------
    value_discretization_interval
        Grid of the privacy-loss values (dp-accounting's default 1e-4).
    """

    def __init__(self, value_discretization_interval: float = 1e-4) -> None:
        self.value_discretization_interval = float(value_discretization_interval)

    def _leaf_supported(self, event: PrivacyEvent) -> str | None:
        if isinstance(event, ev.SampledWithReplacementGaussianEvent) and event.neighbouring != REPLACE_ONE:
            return WITH_REPLACEMENT_REFUSAL
        if isinstance(event, ALL_LEAF_TYPES):
            return None
        return "no PLD analysis for this event type."

    def analysis(self, leaf: PrivacyEvent) -> tuple[str, str]:
        if isinstance(leaf, ev.DiscreteGaussianEvent) and leaf.dimension > 1:
            return "dominating", (
                "PLD from its zCDP curve (Canonne, Kamath & Steinke 2020, Thm 14): Rényi profile bound "
                "(CKS 2020, Prop. 12) made a dominating pair by connect-the-dots (privacy.dominating)"
            )
        if isinstance(leaf, ev.GaussianSparseVectorEvent):
            return "dominating", (
                "PLD from its Rényi curve (Zhu & Wang 2020, Thm 8): Rényi profile bound made a "
                "dominating pair by connect-the-dots (privacy.dominating)"
            )
        if isinstance(leaf, ev.SampledWithReplacementGaussianEvent):
            return "dominating", "PLD of the pair that reveals the record's multiplicity (privacy.dominating)"
        if self.leaf_basic(leaf) > 0.0:
            return "tight", "pure ε, composed basically (Dwork & Roth 2014, Thm 3.16)"
        if isinstance(leaf, (ev.KnownEvent, ev.SparseVectorEvent)) or (
            isinstance(leaf, ev.DiscreteLaplaceEvent) and leaf.sensitivity > 2**17
        ):
            return "tight", "worst-case PLD of its (ε, δ) guarantee (tight for the guarantee itself)"
        return "tight", "exact PLD (dp-accounting, pessimistic discretisation)"

    # -- per-leaf analysis (the interface an incremental ledger composes with) ---------------
    def leaf_basic(self, leaf: PrivacyEvent) -> float:
        """The ε of ``leaf`` that is composed *basically*, outside the PLD (0 for most leaves).

        Pure leaves with ε > 20 (:data:`_BIG_PURE_EPSILON`) are kept out of the PLD: basic
        composition of a pure ε_A-DP part with an (ε_B, δ)-DP part is (ε_A + ε_B, δ)-DP (Dwork &
        Roth 2014, Thm 3.16), and at such ε a tight PLD gains nothing meaningful but would need
        ~ε/Δ grid points. For every event E,
        ``epsilon(E, δ) = Σ_leaves leaf_basic + (⊗_leaves leaf_pld).get_epsilon_for_delta(δ)``.
        """
        pure = isinstance(leaf, (ev.LaplaceEvent, ev.DiscreteLaplaceEvent, ev.SparseVectorEvent)) or (
            isinstance(leaf, ev.KnownEvent) and leaf.delta == 0.0
        )
        if pure and leaf.epsilon > _BIG_PURE_EPSILON:  # type: ignore[attr-defined]
            return float(leaf.epsilon)  # type: ignore[attr-defined]
        return 0.0

    def leaf_pld(self, leaf: PrivacyEvent, vdi: float) -> pld_lib.PrivacyLossDistribution:
        """The PLD of ONE leaf event on the loss grid ``vdi`` (identity for a leaf that
        :meth:`leaf_basic` composes basically).

        The composition of the leaves' PLDs, plus the sum of their :meth:`leaf_basic` parts, is
        what :meth:`epsilon` evaluates; PLDs on the same grid compose in any order. Choose
        ``vdi`` >= :meth:`leaf_resolution` of the leaf (a with-replacement leaf asks for 1e-2: on
        a 1e-4 grid its PLD takes about a minute to build).
        """
        self._check_leaf(leaf)
        if self.leaf_basic(leaf) > 0.0:
            return pld_lib.identity(value_discretization_interval=vdi)
        return _leaf_pld(leaf, 1, float(vdi))

    def leaf_resolution(self, leaf: PrivacyEvent, count: int = 1) -> float:
        """The coarsest loss grid this accountant would use for ``count`` copies of ``leaf``
        (:meth:`resolution` of a set of leaves is the largest of these)."""
        vdi = self.value_discretization_interval
        if isinstance(leaf, (ev.GaussianEvent, ev.DiscreteGaussianEvent, ev.PoissonSubsampledGaussianEvent)):
            z = leaf.noise_multiplier / (count**0.5 if isinstance(leaf, ev.GaussianEvent) else 1.0)
            vdi = max(vdi, 6.0 / (z * z) / _MAX_POINTS)
        elif isinstance(leaf, (ev.LaplaceEvent, ev.DiscreteLaplaceEvent)):
            vdi = max(vdi, 2.0 * leaf.epsilon / _MAX_POINTS)
        elif isinstance(leaf, ev.SampledWithReplacementGaussianEvent):
            # its dominating PLD spans losses up to ~(2k/σ)² for multiplicities k ~ 6: a fine
            # grid costs minutes and changes ε by < 1e-4 relative (measured)
            vdi = max(vdi, _WITH_REPLACEMENT_VDI)
        return vdi

    def resolution(self, leaves: list[PrivacyEvent]) -> float:
        """The loss grid: the configured one, coarsened where a tiny noise multiplier would need
        more than ~2e5 grid points per leaf (a coarser pessimistic grid is still a valid upper
        bound; without this a multiplier of 0.01 asks for tens of GiB)."""
        vdi = self.value_discretization_interval
        for leaf, count in Counter(leaves).items():
            vdi = max(vdi, self.leaf_resolution(leaf, count))
        return vdi

    def _check_leaf(self, leaf: PrivacyEvent) -> None:
        reason = self._leaf_supported(leaf)
        if reason is not None:
            self.check_supported(leaf)  # raises UnsupportedEventError with the description

    def _split(self, event: PrivacyEvent) -> tuple[float, list[PrivacyEvent]]:
        """(Σ :meth:`leaf_basic` of the leaves, the leaves that go into the PLD)."""
        big = 0.0
        rest: list[PrivacyEvent] = []
        for leaf in flatten(event):
            b = self.leaf_basic(leaf)
            if b > 0.0:
                big += b
            else:
                rest.append(leaf)
        return big, rest

    def pld(self, event: PrivacyEvent) -> pld_lib.PrivacyLossDistribution:
        """The composed privacy-loss distribution of ``event`` (without its large pure leaves)."""
        return self._pld_of(self._split(event)[1])

    def _pld_of(self, leaves: list[PrivacyEvent]) -> pld_lib.PrivacyLossDistribution:
        vdi = self.resolution(leaves)
        total = pld_lib.identity(value_discretization_interval=vdi)
        for leaf, count in Counter(leaves).items():
            total = total.compose(_leaf_pld(leaf, count, vdi))
        return total

    def _epsilon(self, event: PrivacyEvent, delta: float) -> float:
        big, rest = self._split(event)
        if not rest:
            return big
        return big + self._pld_of(rest).get_epsilon_for_delta(delta)

    def delta(self, event: PrivacyEvent, epsilon: float) -> float:
        self.check_supported(event)
        big, rest = self._split(event)
        if not rest:
            return 0.0 if float(epsilon) >= big else 1.0
        if float(epsilon) < big:
            return 1.0
        return float(self._pld_of(rest).get_delta_for_epsilon(float(epsilon) - big))
