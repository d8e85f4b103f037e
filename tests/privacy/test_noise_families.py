"""A mechanism of your own: refused unless it declares its noise family (issue 23, finding 2).

The old default released ``G(s, u)`` on float uniforms from the privacy RNG with no warning. For
a Laplace ``G`` of a count (s = 0 vs its neighbour 1, b = 1) most such outputs cannot be produced
from the neighbour (Mironov 2012): the known-broken path, measured here. The same mechanism with a
declared noise family releases through the family's exact grid construction: every output is an
integer multiple of a public grid far inside the exact range of doubles, and the discrete Laplace
noise has full support, so every output of one input is an output of the other.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from dpinfer.errors import InvalidDataError, InvalidPrivacyParameterError, PrivacyWarning
from dpinfer.models import (
    ComposedMechanism,
    GeometricMechanism,
    LaplaceMechanism,
    Mechanism,
    PrivateDataModel,
    UniformPrior,
)
from dpinfer.privacy import LaplaceEvent, Ledger
from dpinfer.privacy.context import ReleaseContext
from seeded_privacy_rng import prng

B = 1.0  # the Laplace scale of the user's mechanism (sensitivity 1, ε = 1)


class UserLaplace(Mechanism):
    """A user's own Laplace mechanism, written as its inverse-CDF map only (the old contract)."""

    stat_dim = out_dim = noise_dim = 1
    neighbouring = "replace-one"
    name = "my laplace"
    has_density = True

    def G(self, s, u):
        v = np.asarray(u, dtype=np.float64) - 0.5
        return np.asarray(s, dtype=np.float64) - B * np.sign(v) * np.log1p(-2.0 * np.abs(v))

    def log_density(self, s_dp, s):
        return (-np.abs(np.asarray(s_dp) - np.asarray(s)) / B - np.log(2 * B)).sum(-1)

    def event(self):
        return LaplaceEvent(1.0)


class DeclaredLaplace(UserLaplace):
    """The same mechanism, declaring the family that draws its law exactly."""

    def __init__(self):
        self.noise_family = LaplaceMechanism(1, sensitivity=1.0, epsilon=1.0)


class FamilyOnly(Mechanism):
    """A mechanism that only declares its family: G, density, event come from it."""

    stat_dim = out_dim = noise_dim = 1
    neighbouring = "replace-one"
    has_density = True
    name = "family only"

    def __init__(self):
        self.noise_family = GeometricMechanism(1, sensitivity=1, epsilon=0.5)


def _ledger(tmp_path, eps=10.0):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", eps)
    return ledger


def _reachable_from(y, x, b=B):
    """Whether the double y is ``fl(x + n(u))`` for some privacy uniform u = (k + ½)·2⁻⁵² (the
    uniforms of ``PrivacyRNG.uniform``): invert to the candidate k and search around it."""
    d = y - x
    u = np.where(d < 0, 0.5 * np.exp(np.minimum(d, 0) / b), 1 - 0.5 * np.exp(-np.maximum(d, 0) / b))
    k0 = np.floor(u * 2.0**52 - 0.5)
    reach = np.zeros(y.shape, dtype=bool)
    for off in range(-64, 65):
        v = (k0 + off + 0.5) * 2.0**-52 - 0.5
        reach |= (x - b * np.sign(v) * np.log1p(-2.0 * np.abs(v))) == y
    return reach


def _releases(mech, s, n, seed, **kw):
    rng = prng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return np.array([mech.release([s],
                                      context=ReleaseContext(privacy_rng=rng),
                                      **kw).value[0] for _ in range(n)])


def test_the_old_default_float_release_is_refused_and_charges_nothing(tmp_path):
    ledger = _ledger(tmp_path)
    with pytest.raises(InvalidPrivacyParameterError, match="no noise family.*unsafe_float_release=True"):
        UserLaplace().release([0.0], context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=prng(0)))
    assert ledger.history("d") == []
    # inference-time simulation is unchanged: G with public uniforms
    sim = UserLaplace().simulate_release(np.zeros((5, 1)), seed=3)
    np.testing.assert_array_equal(sim, UserLaplace().simulate_release(np.zeros((5, 1)), seed=3))


def test_the_unsafe_switch_warns_marks_the_report_and_ledger_and_leaks_as_measured(tmp_path):
    ledger = _ledger(tmp_path)
    with pytest.warns(PrivacyWarning, match="floating-point uniforms"):
        rel = UserLaplace().release([0.0],
                                    context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=prng(1)),
                                    unsafe_float_release=True)
    assert rel.privacy.details["unsafe_float_release"] is True
    assert "UNSAFE" in rel.privacy.mechanism and "UNSAFE" in rel.privacy.summary()
    [charge] = ledger.history("d")
    assert charge["label"].startswith("UNSAFE-FLOAT") and charge["status"] == "released"
    # the known-broken path it marks: releases from s = 0, how many the neighbour s = 1 can produce
    y0 = _releases(UserLaplace(), 0.0, 2000, seed=2, unsafe_float_release=True)
    assert _reachable_from(y0[:100], 0.0).all()  # the attack's own sanity check
    impossible = float(np.mean(~_reachable_from(y0, 1.0)))
    assert impossible > 0.5, impossible  # measured 1818/2000 (91%) with this seed


def test_a_declared_family_releases_on_the_grid_reachable_from_the_neighbour_with_the_same_law(tmp_path):
    mech = DeclaredLaplace()
    gamma = mech.noise_family.grid.gamma
    y0 = _releases(mech, 0.0, 2000, seed=4)
    units = y0 / gamma
    # every output is γ·m, m an integer far inside the exact doubles; from the neighbour s = 1 the
    # release is γ·(round(1/γ) + Z) with Z discrete Laplace of full support on the integers, so
    # y is an output of the neighbour exactly when y/γ is such an integer: 0 of 2000 identify
    from_neighbour = (units == np.round(units)) & (np.abs(units - round(1.0 / gamma)) < 2.0**52)
    assert int(np.sum(~from_neighbour)) == 0
    # the released law is the user's declared law (KS at the scale that runs), and half the scale
    # (the known-broken calibration) is rejected on the same draws
    scale = mech.noise_family.scale
    assert scale == pytest.approx(B, rel=2.0**-11)
    assert stats.kstest(y0, stats.laplace(scale=scale).cdf).pvalue > 1e-3
    assert stats.kstest(y0, stats.laplace(scale=scale / 2).cdf).pvalue < 1e-6
    ledger = _ledger(tmp_path)
    rel = mech.release([3.0], context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=prng(5)))
    assert rel.privacy.mechanism == "my laplace (released as laplace)"
    assert rel.privacy.details["noise_family"] == "laplace" and rel.privacy.epsilon == pytest.approx(1.0)
    assert not rel.privacy.details.get("unsafe_float_release")
    assert ledger.spent("d") == pytest.approx(1.0, rel=1e-4)  # the ledger's PLD accountant


def test_a_mechanism_declaring_only_its_family_takes_its_law_event_and_checks():
    mech = FamilyOnly()
    s = np.zeros((4, 1))
    u = np.array([[0.1], [0.4], [0.6], [0.9]])
    np.testing.assert_array_equal(mech.G(s, u), mech.noise_family.G(s, u))
    np.testing.assert_array_equal(mech.log_density(np.ones((1, 1)), s[:1]),
                                  mech.noise_family.log_density(np.ones((1, 1)), s[:1]))
    assert mech.event() == mech.noise_family.event() and mech.lattice.tolist() == [1.0]
    assert mech.privacy_report().epsilon == pytest.approx(0.5)
    with pytest.raises(InvalidDataError, match="integers.*not shown"):  # the family's checks run
        mech.release([2.5], context=ReleaseContext(privacy_rng=prng(0)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        out = mech.release([7.0], context=ReleaseContext(privacy_rng=prng(0))).value
    assert out[0] == round(out[0])
    # usable by inference: a model built with it simulates and reads observed counts
    model = PrivateDataModel(UniformPrior(0, 10), lambda t, rng: np.round(t), mech)
    assert model.simulate(np.array([[2.0]]), 0).shape == (1, 1)


def test_a_wrong_family_is_refused_before_anything_is_charged(tmp_path):
    class TwoCoordinates(FamilyOnly):
        stat_dim = out_dim = noise_dim = 2

    class NotAFamily(FamilyOnly):
        def __init__(self):
            self.noise_family = UserLaplace()  # no exact release itself

    ledger = _ledger(tmp_path)
    with pytest.raises(InvalidPrivacyParameterError, match="stat_dim=2"):
        TwoCoordinates().release([1.0, 2.0],
                                 context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=prng(0)))
    with pytest.raises(InvalidPrivacyParameterError, match="exact release"):
        NotAFamily().release([1.0], context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=prng(0)))
    assert ledger.history("d") == []


def test_a_composed_mechanism_with_an_undeclared_part_is_refused_and_with_a_declared_one_exact(tmp_path):
    ledger = _ledger(tmp_path)
    bad = ComposedMechanism([GeometricMechanism(1, 1, 0.5), UserLaplace()])
    with pytest.raises(InvalidPrivacyParameterError, match="no noise family"):
        bad.release([2.0, 0.0], context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=prng(0)))
    assert ledger.history("d") == []
    good = ComposedMechanism([GeometricMechanism(1, 1, 0.5), DeclaredLaplace()])
    out = good.release([2.0, 0.0],
                       context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=prng(0))).value
    gamma = good.parts[1].noise_family.grid.gamma
    assert out[0] == round(out[0]) and out[1] / gamma == round(out[1] / gamma)
    assert ledger.spent("d") == pytest.approx(1.5, rel=1e-4)  # the ledger's PLD accountant
