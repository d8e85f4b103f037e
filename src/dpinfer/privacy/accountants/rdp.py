"""Rényi-DP accounting, delegating the mechanism analyses to dp-accounting."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ...deferred import DeferredModule
from .. import events as ev
from ..dominating import (
    replace_one_subsampled_gaussian_rdp,
    subsampled_gaussian_add_remove_rdp,
    with_replacement_gaussian_rdp,
)
from ..events import ADD_REMOVE, REPLACE_ONE, PrivacyEvent, compose, flatten
from ..gaussian_svt import gaussian_svt_rdp
from .base import ALL_LEAF_TYPES, WITH_REPLACEMENT_REFUSAL, Accountant, register_accountant

if TYPE_CHECKING:
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib
else:  # imported at the first accounting, not at start-up (see dpinfer.deferred)
    dp_accounting = DeferredModule("dp_accounting")
    rdp_lib = DeferredModule("dp_accounting.rdp.rdp_privacy_accountant")


def to_dp_accounting_event(event: PrivacyEvent) -> dp_accounting.DpEvent | None:
    """The dp-accounting event with the same privacy loss, or None if there is none.

    Laplace and Gaussian parameters are relative to the sensitivity under the event's own
    relation, so their privacy loss is that of dp-accounting's unit-sensitivity mechanism.
    """
    if isinstance(event, ev.LaplaceEvent):
        return dp_accounting.LaplaceDpEvent(1.0 / event.epsilon)
    if isinstance(event, ev.GaussianEvent):
        return dp_accounting.GaussianDpEvent(event.noise_multiplier)
    if isinstance(event, ev.DiscreteGaussianEvent):
        # ½(Δ/σ)²-zCDP in any dimension (Canonne, Kamath & Steinke 2020, Thm 14): the Rényi
        # curve α Δ²/(2σ²) of the continuous Gaussian with multiplier σ/Δ.
        return dp_accounting.GaussianDpEvent(event.noise_multiplier)
    if isinstance(event, ev.PoissonSubsampledGaussianEvent):
        return dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(
                event.sampling_rate, dp_accounting.GaussianDpEvent(event.noise_multiplier)
            ),
            event.steps,
        )
    return None


@lru_cache(maxsize=64)
def _replace_one_cached(q: float, sigma: float, orders: tuple[float, ...]) -> np.ndarray:
    """One step's replace-one curve (about 1 s to bound by quadrature; cached)."""
    out = replace_one_subsampled_gaussian_rdp(q, sigma, 1, np.asarray(orders))
    out.setflags(write=False)
    return out


def _replace_one_curve(leaf: ev.PoissonSubsampledGaussianEvent, orders: np.ndarray) -> np.ndarray:
    one = _replace_one_cached(leaf.sampling_rate, leaf.noise_multiplier, tuple(float(o) for o in orders))
    return leaf.steps * np.array(one)


def pure_dp_rdp(epsilon: float, orders: np.ndarray) -> np.ndarray:
    """RDP curve implied by pure ε-DP: min(ε, α ε²/2) (Bun & Steinke 2016, Prop. 3.3)."""
    return np.minimum(epsilon, 0.5 * orders * epsilon**2)


@register_accountant("rdp")
class RDPAccountant(Accountant):
    """Rényi-DP composition over a grid of orders (dp-accounting's analyses and conversion).

    Pure ε-DP events (SVT, discrete Laplace, known (ε, 0)) enter through the RDP curve
    min(ε, αε²/2); the Gaussian sparse vector through its own curve
    (:func:`~dpinfer.privacy.gaussian_svt.gaussian_svt_rdp`). Known events with δ > 0 compose
    basically outside the curve (:meth:`leaf_basic`). Two leaves have no tight curve and get a
    valid dominating one (:mod:`dpinfer.privacy.dominating`; the privacy report gives the slack):
    Poisson-subsampled Gaussians under replace-one (Mironov 2017, Prop. 11, over a removal and an
    addition: :func:`~dpinfer.privacy.dominating.replace_one_subsampled_gaussian_rdp`) and
    Gaussian sums on batches drawn with replacement
    (:func:`~dpinfer.privacy.dominating.with_replacement_gaussian_rdp`).

    Orders beyond the grid: when the best order of the conversion is the largest one (1024 on
    dp-accounting's default grid), the grid is extended geometrically (ratio 1.05, four times
    the top per step) until the optimum is interior or :attr:`max_order` (10⁵) is reached.
    Heavily noised releases (a sparse vector calibrated for large c, long compositions at small
    ε) have their optimal order there, and a capped grid overstates their ε. Any order gives a
    valid bound (Mironov 2017, Prop. 3), so extending only tightens the answer.
    """

    #: the largest Rényi order the grid is extended to
    max_order: float = 1e5

    def __init__(self, orders: Sequence[float] | None = None, *, extend: bool = True) -> None:
        self.orders = np.asarray(
            orders if orders is not None else rdp_lib.DEFAULT_RDP_ORDERS, dtype=np.float64
        )
        self.extend = bool(extend)

    def _leaf_supported(self, event: PrivacyEvent) -> str | None:
        if isinstance(event, ev.SampledWithReplacementGaussianEvent) and event.neighbouring != REPLACE_ONE:
            return WITH_REPLACEMENT_REFUSAL
        if isinstance(event, ALL_LEAF_TYPES):
            return None
        return "no RDP analysis for this event type."

    def analysis(self, leaf: PrivacyEvent) -> tuple[str, str]:
        if isinstance(leaf, ev.KnownEvent) and leaf.delta > 0:
            return "basic", "its (ε, δ) added by basic composition (Dwork & Roth 2014, Thm 3.16)"
        if isinstance(leaf, ev.PoissonSubsampledGaussianEvent) and leaf.neighbouring != ADD_REMOVE:
            return "dominating", (
                "Rényi divergence of the replace-one dominating pair, bounded by quadrature, and "
                "Mironov 2017, Prop. 11 (privacy.dominating)"
            )
        if isinstance(leaf, ev.SampledWithReplacementGaussianEvent):
            return "dominating", (
                "δ-approximate Rényi curve of the multiplicity-revealed pair (privacy.dominating)"
            )
        return "rdp", "Rényi curve, converted to (ε, δ) (Canonne, Kamath & Steinke 2020, Prop. 12)"

    # -- per-leaf analysis (the interface an incremental ledger composes with) ---------------
    def leaf_curve(self, leaf: PrivacyEvent, orders: np.ndarray) -> np.ndarray:
        """The Rényi curve of ONE leaf event at ``orders`` (zeros for a leaf whose guarantee is
        composed basically, see :meth:`leaf_basic`).

        Curves add under composition (Mironov 2017, Prop. 1), so for every event E,
        ``epsilon(E, δ) = Σε_b + ε_RDP(Σ leaf_curve, δ - Σδ_b)`` with (ε_b, δ_b) the leaves'
        :meth:`leaf_basic` parts (:meth:`epsilon_from_parts`).
        """
        self._check_leaf(leaf)
        orders = np.asarray(orders, dtype=np.float64)
        if isinstance(leaf, ev.GaussianSparseVectorEvent):
            return np.asarray(gaussian_svt_rdp(leaf, orders), dtype=np.float64)  # Zhu & Wang 2020, Thm 8
        if isinstance(leaf, ev.KnownEvent):
            if leaf.delta > 0:
                return np.zeros_like(orders)
            return pure_dp_rdp(leaf.epsilon, orders)
        if isinstance(leaf, ev.PoissonSubsampledGaussianEvent) and leaf.neighbouring != ADD_REMOVE:
            # no tight curve: Mironov's weak triangle inequality over remove-then-add (R1)
            return _replace_one_curve(leaf, orders)
        if isinstance(leaf, ev.SampledWithReplacementGaussianEvent):
            q, sigma, steps = leaf.sampling_rate, leaf.noise_multiplier, leaf.steps
            return with_replacement_gaussian_rdp(q, sigma, steps, orders)[0]
        if isinstance(leaf, ev.PoissonSubsampledGaussianEvent):  # add-or-remove (replace-one above)
            step = subsampled_gaussian_add_remove_rdp(leaf.sampling_rate, leaf.noise_multiplier, orders)
            return leaf.steps * step  # what dp-accounting's self-composition computes, cached per step
        dpe = to_dp_accounting_event(leaf)
        if dpe is not None:
            acc = rdp_lib.RdpAccountant(orders)
            acc.compose(dpe)
            return np.asarray(acc.rdp, dtype=np.float64)
        return pure_dp_rdp(leaf.epsilon, orders)  # type: ignore[attr-defined]

    def leaf_basic(self, leaf: PrivacyEvent) -> tuple[float, float]:
        """The (ε, δ) of ``leaf`` composed *basically*, outside the Rényi curve; (0, 0) for most.

        A :class:`KnownEvent` with δ > 0 has no Rényi curve (its worst case puts mass δ at
        infinite loss): it is composed with the rest by basic composition, (ε₁, δ₁) and
        (ε₂, δ₂) giving (ε₁ + ε₂, δ₁ + δ₂) (Dwork & Roth 2014, Thm 3.16). A with-replacement
        Gaussian sets aside the tail of the record's multiplicity, δ = steps·P(K' > k_max) <= 1e-13
        (:func:`~dpinfer.privacy.dominating.with_replacement_gaussian_rdp`).
        """
        self._check_leaf(leaf)
        if isinstance(leaf, ev.KnownEvent) and leaf.delta > 0:
            return float(leaf.epsilon), float(leaf.delta)
        if isinstance(leaf, ev.SampledWithReplacementGaussianEvent):
            # the multiplicity tail set aside (δ-approximate RDP, Bun & Steinke 2016, Lemma 8.3)
            return 0.0, with_replacement_gaussian_rdp(leaf.sampling_rate, leaf.noise_multiplier, leaf.steps,
                                                      np.array([2.0]))[1]
        return 0.0, 0.0

    def _check_leaf(self, leaf: PrivacyEvent) -> None:
        if self._leaf_supported(leaf) is not None:
            self.check_supported(leaf)  # raises UnsupportedEventError with the description

    def rdp_curve(self, event: PrivacyEvent, orders: np.ndarray | None = None) -> np.ndarray:
        """The composed RDP curve of ``event`` at ``orders`` (default :attr:`orders`), without
        the leaves' :meth:`leaf_basic` parts."""
        orders = self.orders if orders is None else np.asarray(orders, dtype=np.float64)
        total = np.zeros_like(orders)
        for leaf in flatten(event):
            total += self.leaf_curve(leaf, orders)
        return total

    def basic_part(self, event: PrivacyEvent) -> tuple[float, float]:
        """(Σε_b, Σδ_b) of :meth:`leaf_basic` over the leaves of ``event``."""
        eps = delta = 0.0
        for leaf in flatten(event):
            e, d = self.leaf_basic(leaf)
            eps += e
            delta += d
        return eps, delta

    def epsilon_from_parts(self, curve_of: Any, basic: tuple[float, float], delta: float) -> float:
        """ε at ``delta`` from a composed curve and a composed basic part.

        ``curve_of(orders)`` returns the composed Rényi curve at ``orders`` (it is asked again on
        larger orders when the grid is extended); ``basic`` is (Σε_b, Σδ_b). The curve is
        converted at δ - Σδ_b and Σε_b added (Dwork & Roth 2014, Thm 3.16); ``inf`` when
        Σδ_b >= δ and the curve is not identically zero.
        """
        eps_b, delta_b = basic
        remaining = float(delta) - delta_b
        if remaining < -1e-15 * max(1.0, delta):
            return math.inf
        remaining = max(remaining, 0.0)
        curve0 = np.asarray(curve_of(self.orders), dtype=np.float64)
        if not np.any(curve0 > 0):
            return eps_b
        if remaining <= 0.0:
            return math.inf
        return eps_b + self._convert(curve_of, rdp_lib.compute_epsilon, remaining)
    def _convert(self, curve_of: Any, convert: Any, target: float) -> float:
        """``convert(orders, curve, target)`` on the grid, extended while the optimum is its top."""
        orders = self.orders
        curve = np.asarray(curve_of(orders), dtype=np.float64)
        value, best = convert(orders, curve, target)
        while self.extend and best is not None and best >= orders.max() and orders.max() < self.max_order:
            top = float(orders.max())
            more = top * 1.05 ** np.arange(1, 30)
            more = more[more <= self.max_order]
            if more.size == 0:
                break
            orders = np.concatenate([orders, more])
            curve = np.concatenate([curve, np.asarray(curve_of(more), dtype=np.float64)])
            value, best = convert(orders, curve, target)
        return float(value)

    @staticmethod
    def pure_epsilon(leaf: PrivacyEvent) -> float:
        """ε of a pure ε-DP leaf (Laplace, discrete Laplace, sparse vector, known (ε, 0)), else 0.

        Such a leaf may enter the Rényi curve (min(ε, αε²/2)) or be composed basically; both are
        valid, and :meth:`epsilon` takes the better of "all pure leaves in the curve" and "all
        pure leaves basic" (Dwork & Roth 2014, Thm 3.16): in the curve, the pure leaves cost
        their full ε at the large orders a Gaussian composition converts at, plus the
        conversion's ln(1/δ)/(α - 1) term again.
        """
        if isinstance(leaf, (ev.LaplaceEvent, ev.DiscreteLaplaceEvent, ev.SparseVectorEvent)) or (
            isinstance(leaf, ev.KnownEvent) and leaf.delta == 0.0
        ):
            return float(leaf.epsilon)
        return 0.0

    def _split_pure(self, event: PrivacyEvent) -> tuple[float, PrivacyEvent | None]:
        """(Σε of the pure leaves, the other leaves composed) or (0, None) if either is empty."""
        leaves = flatten(event)
        pure = [leaf for leaf in leaves if self.pure_epsilon(leaf) > 0]
        rest = [leaf for leaf in leaves if self.pure_epsilon(leaf) == 0]
        if not pure or not rest:
            return 0.0, None
        return sum(self.pure_epsilon(leaf) for leaf in pure), compose(*rest)

    def _epsilon(self, event: PrivacyEvent, delta: float) -> float:
        together = self.epsilon_from_parts(
            lambda orders: self.rdp_curve(event, orders), self.basic_part(event), delta
        )
        pure, rest = self._split_pure(event)
        if rest is None:
            return together
        apart = pure + self.epsilon_from_parts(
            lambda orders: self.rdp_curve(rest, orders), self.basic_part(rest), delta
        )
        return min(together, apart)

    def delta(self, event: PrivacyEvent, epsilon: float) -> float:
        self.check_supported(event)
        if not flatten(event):
            return 0.0
        together = self._delta_of(event, float(epsilon))
        pure, rest = self._split_pure(event)
        if rest is None or float(epsilon) < pure:
            return together
        return min(together, self._delta_of(rest, float(epsilon) - pure))

    def _delta_of(self, event: PrivacyEvent, epsilon: float) -> float:
        eps_b, delta_b = self.basic_part(event)
        remaining = epsilon - eps_b
        if remaining < 0:
            return 1.0

        def curve_of(orders: np.ndarray) -> np.ndarray:
            return self.rdp_curve(event, orders)

        if not np.any(np.asarray(curve_of(self.orders)) > 0):
            return min(1.0, delta_b)
        return min(1.0, delta_b + self._convert(curve_of, rdp_lib.compute_delta, remaining))
