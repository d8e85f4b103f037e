"""The Gaussian PLD built on the whole loss grid at once (dpinfer.privacy.gaussian_pld) is
dp-accounting's ``from_gaussian_mechanism``: the same loss grid and the same probabilities, over
plain and Poisson-subsampled Gaussians under add-or-remove and replace-one.

Add-or-remove is bit-identical (the same floating-point operations); replace-one evaluates
dp-accounting's ``log(sinh)`` with numpy's exp/log1p instead of the math module's, whose last-bit
differences the connect-the-dots differences (divided by the grid step) magnify to at most about
1e-11 in one grid point's mass (measured 5.6e-12 at step 1e-4); ε at δ then agrees to 1e-12.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

dp_accounting = pytest.importorskip("dp_accounting")

from dp_accounting.pld import privacy_loss_distribution as pld_lib  # noqa: E402

from dpinfer.privacy import gaussian_pld as gp  # noqa: E402

REL = dp_accounting.NeighboringRelation
CASES = [  # (σ, q, relation, grid step): plain, heavily and lightly subsampled, both relations
    (0.8, 1.0, REL.ADD_OR_REMOVE_ONE, 1e-3),
    (1.0, 0.5, REL.ADD_OR_REMOVE_ONE, 1e-3),
    (2.5, 0.01, REL.ADD_OR_REMOVE_ONE, 1e-4),
    (1.0, 1.0, REL.REPLACE_ONE, 1e-3),
    (0.8, 0.5, REL.REPLACE_ONE, 1e-3),
    (2.5, 0.01, REL.REPLACE_ONE, 1e-4),
]


def _dense(pmf):
    dense = pmf.to_dense_pmf()
    return dense._lower_loss, np.asarray(dense._probs), dense._infinity_mass  # noqa: SLF001


def _max_gap(a, b) -> float:
    """The largest difference in one grid point's mass between two PLDs (both directions); the
    loss grids and the infinity masses must be the same."""
    gap = 0.0
    for pa, pb in ((a._pmf_remove, b._pmf_remove), (a._pmf_add, b._pmf_add)):  # noqa: SLF001
        (la, xa, ia), (lb, xb, ib) = _dense(pa), _dense(pb)
        assert la == lb and xa.size == xb.size, "different loss grids"
        assert abs(ia - ib) <= 1e-15
        gap = max(gap, float(np.max(np.abs(xa - xb))))
    return gap


@pytest.mark.parametrize(("sigma", "q", "relation", "vdi"), CASES)
def test_the_pld_is_dp_accountings(sigma, q, relation, vdi):
    ours = gp.gaussian_pld(standard_deviation=sigma, sampling_prob=q, neighboring_relation=relation,
                           value_discretization_interval=vdi)
    ref = pld_lib.from_gaussian_mechanism(standard_deviation=sigma, sampling_prob=q,
                                          neighboring_relation=relation, value_discretization_interval=vdi)
    gap = _max_gap(ours, ref)
    if relation == REL.ADD_OR_REMOVE_ONE:
        assert gap == 0.0
    else:
        assert gap <= 1e-10
    for delta in (1e-6, 1e-3):
        e_ours, e_ref = ours.get_epsilon_for_delta(delta), ref.get_epsilon_for_delta(delta)
        assert e_ours == pytest.approx(e_ref, rel=1e-12, abs=1e-15)
    for eps in (0.0, 0.5, 2.0):
        want = ref.get_delta_for_epsilon(eps)
        assert ours.get_delta_for_epsilon(eps) == pytest.approx(want, rel=1e-9, abs=1e-15)


def test_sensitivity_and_the_scalar_call_match_too():
    ours = gp.gaussian_pld(standard_deviation=3.0, sensitivity=2.0, value_discretization_interval=1e-3)
    ref = pld_lib.from_gaussian_mechanism(standard_deviation=3.0, sensitivity=2.0,
                                          value_discretization_interval=1e-3)
    assert _max_gap(ours, ref) == 0.0
    cls = gp._grid_loss_class()
    from dp_accounting.pld import privacy_loss_mechanism as plm

    for adjacency in plm.AdjacencyType:
        mine = cls(1.3, sampling_prob=0.2, adjacency_type=adjacency)
        theirs = plm.GaussianPrivacyLoss(1.3, sampling_prob=0.2, adjacency_type=adjacency)
        for eps in (0.1, 1.0):  # a scalar in, a float out, as dp-accounting's
            value = mine.get_delta_for_epsilon(eps)
            assert isinstance(value, float)
            assert value == pytest.approx(theirs.get_delta_for_epsilon(eps), rel=1e-12)


def test_the_inverse_privacy_loss_is_dp_accountings_pointwise_and_at_the_limits():
    from dp_accounting.pld import privacy_loss_mechanism as plm

    q = 0.3
    for adjacency, name, losses in (
        (plm.AdjacencyType.REMOVE, "remove", [math.log(1 - q), -0.2, 0.0, 0.7, 5.0]),
        (plm.AdjacencyType.ADD, "add", [-5.0, -0.3, 0.0, 0.2, -math.log(1 - q)]),
        (plm.AdjacencyType.REPLACE, "replace", [-4.0, -0.1, 0.0, 0.1, 4.0]),
    ):
        ref = plm.GaussianPrivacyLoss(1.7, sensitivity=1.2, sampling_prob=q, adjacency_type=adjacency)
        got = gp.gaussian_inverse_privacy_loss(np.array(losses), sigma=1.7, sensitivity=1.2, q=q,
                                               adjacency=name)
        want = [ref.inverse_privacy_loss(x) for x in losses]
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    # outside the domain: refused, as dp-accounting refuses
    with pytest.raises(ValueError):
        gp.gaussian_inverse_privacy_loss(np.array([math.log(1 - q) - 0.1]), sigma=1.0, sensitivity=1.0,
                                         q=q, adjacency="remove")
    with pytest.raises(ValueError):
        gp.gaussian_inverse_privacy_loss(np.array([0.5]), sigma=1.0, sensitivity=1.0, q=q, adjacency="add")


def test_a_wrong_subsampling_transform_is_caught(monkeypatch):
    """Known-broken variant: the subsampled inverse without its log(1 + (e^ε - 1)/q) transform (the
    plain Gaussian's inverse used under subsampling) gives a different PLD, which the comparison
    with dp-accounting catches."""
    monkeypatch.setattr(gp, "_log_one_plus_expm1_over_q", lambda loss, q: loss)
    ours = gp.gaussian_pld(standard_deviation=1.0, sampling_prob=0.5, value_discretization_interval=1e-3)
    ref = pld_lib.from_gaussian_mechanism(standard_deviation=1.0, sampling_prob=0.5,
                                          value_discretization_interval=1e-3)
    assert _max_gap(ours, ref) > 1e-3


def test_an_undefined_inverse_raises_instead_of_giving_a_nan_delta(monkeypatch):
    """A NaN cut-off (an inverse evaluated outside its domain) must stop the accounting, as
    dp-accounting's scalar code raises there, not give a NaN δ that composition would carry on."""
    monkeypatch.setattr(gp, "gaussian_inverse_privacy_loss",
                        lambda loss, **kw: np.full(np.shape(loss), np.nan))
    with pytest.raises(ValueError, match="undefined"):
        gp.gaussian_pld(standard_deviation=1.0, sampling_prob=0.5, value_discretization_interval=1e-2)
