"""The accountant contract, run against every accountant, plus reference values."""

import functools
import math
from dataclasses import dataclass

import dp_accounting
import pytest
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from dpinfer.errors import InvalidPrivacyParameterError, NeighbouringRelationError
from dpinfer.privacy import (
    AdvancedCompositionAccountant,
    ComposedEvent,
    GaussianEvent,
    KnownEvent,
    LaplaceEvent,
    PoissonSubsampledGaussianEvent,
    PrivacyEvent,
    SparseVectorEvent,
    UnsupportedEventError,
    act,
    analytic_gaussian_epsilon,
    available_accountants,
    compose,
    get_accountant,
)


@dataclass(frozen=True)
class MysteryEvent(PrivacyEvent):
    """An event type no accountant knows."""

    neighbouring: str = "replace-one"


# Events each accountant supports (all under add-remove or replace-one consistently).
PSG = PoissonSubsampledGaussianEvent(0.05, 1.5, 200)
SUPPORTED = {
    "pure": [LaplaceEvent(0.3), SparseVectorEvent(5, 0.5), KnownEvent(0.2, 1e-7)],
    "advanced": [PSG, GaussianEvent(2.0, neighbouring="add-remove")],
    "rdp": [PSG, GaussianEvent(2.0, neighbouring="add-remove"), LaplaceEvent(0.5, neighbouring="add-remove")],
    "pld": [PSG, GaussianEvent(2.0, neighbouring="add-remove"), LaplaceEvent(0.5, neighbouring="add-remove")],
}
CONTINUOUS = {"advanced", "rdp", "pld"}  # delta(eps) is a continuous function for these


def test_registry_lists_the_four_accountants():
    assert set(available_accountants()) >= {"pure", "advanced", "rdp", "pld"}
    with pytest.raises(InvalidPrivacyParameterError, match="unknown accountant"):
        get_accountant("moments")


@pytest.mark.parametrize("name", sorted(SUPPORTED))
class TestAccountantContract:
    def test_no_events_costs_nothing(self, name):
        acc = get_accountant(name)
        assert acc.epsilon(ComposedEvent(()), 1e-5) == 0.0
        assert acc.delta(ComposedEvent(()), 0.5) == 0.0

    def test_composition_is_monotone(self, name):
        acc = get_accountant(name)
        events = SUPPORTED[name]
        previous = 0.0
        for k in range(1, len(events) + 1):
            eps = acc.epsilon(compose(*events[:k]), 1e-5)
            assert eps > previous
            previous = eps
        # composing an event with itself costs more than the event alone
        assert acc.epsilon(compose(events[0], events[0]), 1e-5) > acc.epsilon(events[0], 1e-5)

    def test_epsilon_delta_round_trip(self, name):
        acc = get_accountant(name)
        event = compose(*SUPPORTED[name])
        delta = 1e-5
        eps = acc.epsilon(event, delta)
        assert math.isfinite(eps) and eps > 0
        assert acc.delta(event, eps) <= delta * (1 + 1e-3)
        if name in CONTINUOUS:
            # a strictly smaller epsilon needs a strictly larger delta
            assert acc.delta(event, 0.9 * eps) > delta
        else:
            assert acc.delta(event, 0.9 * eps) == 1.0

    def test_unsupported_event_names_the_event(self, name):
        acc = get_accountant(name)
        with pytest.raises(UnsupportedEventError, match="MysteryEvent"):
            first = SUPPORTED[name][0]
            acc.epsilon(compose(first, MysteryEvent(neighbouring=first.neighbouring)), 1e-5)
        with pytest.raises(UnsupportedEventError, match="MysteryEvent"):
            acc.delta(MysteryEvent(), 1.0)

    def test_invalid_delta_is_refused(self, name):
        with pytest.raises(InvalidPrivacyParameterError):
            get_accountant(name).epsilon(SUPPORTED[name][0], 1.0)
        with pytest.raises(InvalidPrivacyParameterError):
            get_accountant(name).epsilon(SUPPORTED[name][0], -1e-9)


def test_specific_unsupported_events():
    with pytest.raises(UnsupportedEventError, match="PoissonSubsampledGaussianEvent"):
        get_accountant("pure").epsilon(PSG, 1e-5)


def test_gaussian_events_are_never_pure_dp():
    for name in ("rdp", "pld", "advanced"):
        assert get_accountant(name).epsilon(GaussianEvent(1e6, "add-remove"), 0.0) == math.inf


def test_pure_accountant_sums_epsilons_and_deltas():
    acc = get_accountant("pure")
    event = compose(LaplaceEvent(0.1), LaplaceEvent(0.2), SparseVectorEvent(10, 0.3), KnownEvent(0.4, 1e-6))
    assert acc.epsilon(event, 1e-6) == pytest.approx(1.0)
    assert acc.epsilon(event, 5e-7) == math.inf  # delta budget below the known event's delta
    assert acc.delta(event, 1.0) == pytest.approx(1e-6)


def test_advanced_reproduces_the_dpvi_paper_vectors():
    # METHODS.md §3.2: 2*act(2*sigma, 5e-4, 4e-5, T=1000, q=0.05)
    assert 2 * act(2 * 6.0496, 5e-4, 4e-5, 1000, 0.05) == pytest.approx(8.2372, abs=5e-4)
    assert 2 * act(2 * 29.964, 5e-4, 4e-5, 1000, 0.05) == pytest.approx(1.2490, abs=5e-4)
    # the same numbers through the accountant interface
    acc = AdvancedCompositionAccountant(delta_prime=4e-5, reproduce_paper=True)
    for sigma, expected in [(6.0496, 8.2372), (29.964, 1.2490)]:
        event = PoissonSubsampledGaussianEvent(0.05, 2 * sigma, 1000, "add-remove")
        assert 2 * acc.epsilon(event, 5e-4) == pytest.approx(expected, abs=5e-4)


def test_advanced_textbook_constant_would_be_caught():
    # The paper's vector needs the code's ln(1.25/delta'): reproducing the paper with the theorem's
    # ln(1/delta') instead (a known-broken variant of reproduce_paper=True) misses it.
    sigma, T, q, d, dp = 2 * 6.0496, 1000, 0.05, 5e-4, 4e-5
    d_iter = (d - dp) / (T * q)
    eps0 = math.sqrt(2 * math.log(1.25 / d_iter)) / sigma
    e_it = math.log1p(q * math.expm1(eps0))
    broken = math.sqrt(2 * T * math.log(1 / dp)) * e_it + T * e_it * math.expm1(e_it)
    assert abs(2 * broken - 8.2372) > 5e-3
    assert 2 * act(2 * 6.0496, d, dp, T, q, composition="theorem") == pytest.approx(2 * broken, rel=1e-12)


def _advanced_composition_theorem(sigma, delta, delta_prime, T, q):
    """Dwork & Roth (2014), Thm 3.20 with the exact Gaussian epsilon per step and amplification."""
    e_it = math.log1p(q * math.expm1(analytic_gaussian_epsilon(sigma, (delta - delta_prime) / (T * q))))
    return math.sqrt(2 * T * math.log(1 / delta_prime)) * e_it + T * e_it * math.expm1(e_it)


def test_advanced_exact_mode_uses_the_theorem_constant():
    # the DPVI example: q = 0.05, sigma = 2, T = 1000, delta = 1e-5 (delta' = 0.1 delta)
    event = PoissonSubsampledGaussianEvent(0.05, 2.0, 1000, "add-remove")
    exact = AdvancedCompositionAccountant().epsilon(event, 1e-5)
    assert exact == pytest.approx(_advanced_composition_theorem(2.0, 1e-5, 1e-6, 1000, 0.05), rel=1e-12)
    assert exact == pytest.approx(286.5413, abs=1e-3)
    # the code's ln(1.25/delta') (the known-broken variant for this mode) gives a larger epsilon
    code_constant = act(2.0, 1e-5, 1e-6, 1000, 0.05, gaussian_bound="analytic", composition="paper")
    assert code_constant == pytest.approx(287.1003, abs=1e-3) and code_constant - exact > 0.5
    with pytest.raises(InvalidPrivacyParameterError, match="composition"):
        act(2.0, 1e-5, 1e-6, 1000, 0.05, composition="textbook")


def test_advanced_replace_one_uses_exact_group_privacy():
    acc = AdvancedCompositionAccountant()
    ar = PoissonSubsampledGaussianEvent(0.05, 8.0, 500, "add-remove")
    ro = PoissonSubsampledGaussianEvent(0.05, 8.0, 500, "replace-one")
    eps_ro = acc.epsilon(ro, 1e-5)
    # the replace-one guarantee is 2*eps_ar at a delta_ar with (1 + e^eps_ar) delta_ar <= 1e-5
    eps_ar = eps_ro / 2
    delta_ar = acc.delta(ar, eps_ar)
    assert (1 + math.exp(eps_ar)) * delta_ar <= 1e-5 * (1 + 1e-6)
    assert eps_ro > 2 * acc.epsilon(ar, 1e-5)


def _dp_events():
    psg = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.GaussianDpEvent(1.5)), 200
    )
    return psg, dp_accounting.GaussianDpEvent(2.0), dp_accounting.LaplaceDpEvent(2.0)


@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_rdp_equals_dp_accounting(delta):
    psg, gauss, lap = _dp_events()
    ref = rdp_privacy_accountant.RdpAccountant()
    ref.compose(dp_accounting.ComposedDpEvent([psg, gauss, lap]))
    ours = get_accountant("rdp").epsilon(
        compose(
            PSG, GaussianEvent(2.0, neighbouring="add-remove"), LaplaceEvent(0.5, neighbouring="add-remove")
        ),
        delta,
    )
    assert ours == pytest.approx(ref.get_epsilon(delta), rel=1e-9)


@functools.cache
def _reference_pld(which: int, replace_one: bool = False) -> pld_privacy_accountant.PLDAccountant:
    """dp-accounting's PLD accountant composed with ``_dp_events()[which]``, built once for both
    deltas (its PLD does not depend on delta; only ``get_epsilon`` does)."""
    if replace_one:
        ref = pld_privacy_accountant.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE)
    else:
        ref = pld_privacy_accountant.PLDAccountant()
    ref.compose(_dp_events()[which])
    return ref


@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_pld_equals_dp_accounting(delta):
    for which, ours_event in enumerate([
        PSG,
        GaussianEvent(2.0, neighbouring="add-remove"),
        LaplaceEvent(0.5, neighbouring="add-remove"),
    ]):
        ref = _reference_pld(which)
        assert get_accountant("pld").epsilon(ours_event, delta) == pytest.approx(
            ref.get_epsilon(delta), rel=1e-6
        )
    # replace-one Poisson subsampling: dp-accounting's REPLACE_ONE analysis
    ref = _reference_pld(0, replace_one=True)
    ro = PoissonSubsampledGaussianEvent(0.05, 1.5, 200, "replace-one")
    assert get_accountant("pld").epsilon(ro, delta) == pytest.approx(ref.get_epsilon(delta), rel=1e-6)


def test_pld_is_tighter_than_rdp_and_advanced():
    event = PoissonSubsampledGaussianEvent(0.05, 1.2, 1000)
    pld = get_accountant("pld").epsilon(event, 1e-5)
    rdp = get_accountant("rdp").epsilon(event, 1e-5)
    adv = get_accountant("advanced").epsilon(event, 1e-5)
    assert pld < rdp < adv


def test_pure_events_in_pld_match_their_epsilon():
    # an eps-DP event alone: PLD certifies exactly eps at delta = 0 (up to discretisation)
    assert get_accountant("pld").epsilon(SparseVectorEvent(3, 0.7), 1e-9) == pytest.approx(0.7, abs=1e-3)


def test_mixed_relations_need_explicit_conversion():
    with pytest.raises(NeighbouringRelationError, match="to_replace_one"):
        compose(LaplaceEvent(0.1, "add-remove"), LaplaceEvent(0.1, "replace-one"))
