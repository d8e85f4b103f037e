"""The per-leaf interface of the PLD and RDP accountants (what an incremental ledger composes).

For every event, ε must be recoverable from the leaves alone: PLD: ⊗ leaf_pld + Σ leaf_basic;
RDP: Σ leaf_curve converted at δ - Σδ_b, plus Σε_b.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from dpinfer.privacy.accountants import PLDAccountant, RDPAccountant
from dpinfer.privacy.events import (
    GaussianEvent,
    KnownEvent,
    LaplaceEvent,
    SparseVectorEvent,
    compose,
    flatten,
)

DELTA = 1e-6
EVENT = compose(
    GaussianEvent(3.0), LaplaceEvent(0.5), LaplaceEvent(25.0), SparseVectorEvent(3, 0.4),
    KnownEvent(0.2, 1e-8), GaussianEvent(3.0),
)


def test_pld_total_from_leaves():
    acc = PLDAccountant()
    leaves = flatten(EVENT)
    vdi = acc.resolution(leaves)
    total = pld_lib.identity(value_discretization_interval=vdi)
    for leaf in leaves:
        total = total.compose(acc.leaf_pld(leaf, vdi))
    basic = sum(acc.leaf_basic(leaf) for leaf in leaves)
    assert basic == 25.0  # the big pure Laplace leaf, composed basically
    eps = basic + total.get_epsilon_for_delta(DELTA)
    # count-wise self-composition (the accountant's own path) and leaf-wise composition agree
    # to the grid's pessimistic rounding
    assert eps == pytest.approx(acc.epsilon(EVENT, DELTA), rel=1e-3)


def test_rdp_total_from_leaves():
    acc = RDPAccountant()
    leaves = flatten(EVENT)
    curve = sum(acc.leaf_curve(leaf, acc.orders) for leaf in leaves)
    basic = tuple(map(sum, zip(*(acc.leaf_basic(leaf) for leaf in leaves), strict=True)))
    assert basic == pytest.approx((0.2, 1e-8))
    grown = lambda orders: sum(acc.leaf_curve(leaf, orders) for leaf in leaves)  # noqa: E731
    eps = acc.epsilon_from_parts(grown, basic, DELTA)
    assert eps == pytest.approx(acc.epsilon(EVENT, DELTA), rel=1e-12)
    assert np.allclose(curve, acc.rdp_curve(EVENT))


def test_rdp_known_event_composes_basically():
    """(ε, δ>0) known events: ε_RDP(δ - Σδ_k) + Σε_k (Dwork & Roth 2014, Thm 3.16)."""
    acc = RDPAccountant()
    g = GaussianEvent(4.0)
    known = KnownEvent(0.3, 2e-7)
    expected = acc.epsilon(g, DELTA - 2e-7) + 0.3
    assert acc.epsilon(compose(g, known), DELTA) == pytest.approx(expected, rel=1e-12)
    # a broken variant that forgets to reserve the known δ certifies a smaller (invalid) ε
    assert acc.epsilon(g, DELTA) + 0.3 < expected
    assert acc.epsilon(known, DELTA) == pytest.approx(0.3)
    assert acc.epsilon(known, 1e-7) == math.inf
    assert acc.epsilon(compose(g, known), 2e-7) == math.inf
    # delta() inverts epsilon()
    eps = acc.epsilon(compose(g, known), DELTA)
    assert acc.delta(compose(g, known), eps) == pytest.approx(DELTA, rel=1e-3)
    assert acc.delta(known, 0.29) == 1.0 and acc.delta(known, 0.3) == pytest.approx(2e-7)


def test_rdp_takes_the_better_of_pure_leaves_in_the_curve_and_composed_basically():
    acc = RDPAccountant()
    g, pure = GaussianEvent(0.8), LaplaceEvent(0.3)
    both = acc.epsilon(compose(g, pure), DELTA)
    basic = acc.epsilon(g, DELTA) + 0.3
    in_curve = acc.epsilon_from_parts(lambda o: acc.rdp_curve(compose(g, pure), o), (0.0, 0.0), DELTA)
    assert both == pytest.approx(min(basic, in_curve), rel=1e-12)
    assert both <= basic and both <= in_curve
    assert acc.delta(compose(g, pure), both) <= DELTA * (1 + 1e-3)


def test_the_subsampled_gaussian_curve_is_dp_accountings_self_composition_to_the_bit():
    """The RDP leaf curve of a Poisson-subsampled Gaussian (add-or-remove) is ``steps`` times one
    cached step; it must equal dp-accounting's self-composed event exactly, and a caller that
    writes into the returned curve must not change the next one (the cache hands out copies).
    Known-broken variant: one step's curve without the ``steps`` factor is caught."""
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

    from dpinfer.privacy.events import PoissonSubsampledGaussianEvent

    acc = RDPAccountant()
    for q, sigma, steps in ((0.01, 1.1, 1000), (0.2, 2.0, 7)):
        leaf = PoissonSubsampledGaussianEvent(q, sigma, steps)
        ref = rdp_lib.RdpAccountant(acc.orders)
        ref.compose(dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps))
        first = acc.leaf_curve(leaf, acc.orders)
        assert np.array_equal(first, np.asarray(ref.rdp))
        first[:] = 0.0  # a caller's own array
        assert np.array_equal(acc.leaf_curve(leaf, acc.orders), np.asarray(ref.rdp))
        one_step = acc.leaf_curve(PoissonSubsampledGaussianEvent(q, sigma, 1), acc.orders)
        assert not np.array_equal(one_step, np.asarray(ref.rdp))  # the broken variant differs
