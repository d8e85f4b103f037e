"""Events: validation, serialisation, explicit relation conversion."""

import math

import pytest

from dpinfer.errors import InvalidPrivacyParameterError
from dpinfer.privacy import (
    ComposedEvent,
    GaussianEvent,
    KnownEvent,
    LaplaceEvent,
    PoissonSubsampledGaussianEvent,
    SampledWithReplacementGaussianEvent,
    SparseVectorEvent,
    compose,
    event_from_dict,
    event_to_dict,
    get_accountant,
    to_replace_one,
)

ALL = [
    LaplaceEvent(0.5),
    GaussianEvent(1.3, "add-remove"),
    SparseVectorEvent(10, 1.0, True),
    PoissonSubsampledGaussianEvent(0.01, 1.1, 100),
    SampledWithReplacementGaussianEvent(0.05, 2.0, 1000),
    KnownEvent(0.8, 1e-6, description="binomial mechanism"),
    compose(LaplaceEvent(0.1), KnownEvent(0.2)),
]


@pytest.mark.parametrize("event", ALL, ids=lambda e: type(e).__name__)
def test_events_round_trip_through_json_dicts(event):
    assert event_from_dict(event_to_dict(event)) == event
    assert event.neighbouring in ("replace-one", "add-remove")


def test_events_are_frozen():
    with pytest.raises(AttributeError):
        LaplaceEvent(0.5).epsilon = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    "make",
    [
        lambda: LaplaceEvent(0.0),
        lambda: LaplaceEvent(-1.0),
        lambda: LaplaceEvent(math.nan),
        lambda: LaplaceEvent(math.inf),
        lambda: GaussianEvent(0.0),
        lambda: SparseVectorEvent(0, 1.0),
        lambda: SparseVectorEvent(2.5, 1.0),
        lambda: PoissonSubsampledGaussianEvent(0.0, 1.0, 10),
        lambda: PoissonSubsampledGaussianEvent(1.5, 1.0, 10),
        lambda: PoissonSubsampledGaussianEvent(0.1, 1.0, 0),
        lambda: SampledWithReplacementGaussianEvent(0.0, 1.0, 10),
        lambda: SampledWithReplacementGaussianEvent(0.1, -1.0, 10),
        lambda: KnownEvent(1.0, 1.0),
        lambda: KnownEvent(1.0, -0.1),
        lambda: LaplaceEvent(1.0, "swap"),
    ],
)
def test_invalid_parameters_are_refused(make):
    with pytest.raises(InvalidPrivacyParameterError):
        make()


def test_to_replace_one_conversions():
    assert to_replace_one(LaplaceEvent(0.5, "add-remove")) == LaplaceEvent(1.0, "replace-one")
    assert to_replace_one(GaussianEvent(2.0, "add-remove")) == GaussianEvent(1.0, "replace-one")
    assert to_replace_one(SparseVectorEvent(3, 0.5, False, "add-remove")) == SparseVectorEvent(3, 1.0)
    k = to_replace_one(KnownEvent(0.5, 1e-6, "add-remove"))
    assert k.epsilon == 1.0 and k.delta == pytest.approx((1 + math.exp(0.5)) * 1e-6)
    ro = LaplaceEvent(0.3)
    assert to_replace_one(ro) is ro
    c = to_replace_one(ComposedEvent((LaplaceEvent(0.1, "add-remove"), LaplaceEvent(0.2, "add-remove"))))
    assert c.neighbouring == "replace-one"
    assert get_accountant("pure").epsilon(c, 0.0) == pytest.approx(0.6)


def test_gaussian_conversion_matches_doubled_sensitivity():
    # Gaussian(sigma) under add-remove (sensitivity C) is Gaussian(sigma/2) w.r.t. 2C.
    pld = get_accountant("pld")
    ar = GaussianEvent(2.0, "add-remove")
    assert pld.epsilon(to_replace_one(ar), 1e-5) == pytest.approx(pld.epsilon(GaussianEvent(1.0), 1e-5))


def test_with_replacement_batches_are_their_own_event_and_every_accountant_reads_them(tmp_path):
    from dpinfer.errors import UnsupportedEventError
    from dpinfer.privacy import Ledger

    wr = SampledWithReplacementGaussianEvent(0.05, 30.0, 1000)
    assert wr.neighbouring == "replace-one"
    poisson = PoissonSubsampledGaussianEvent(0.05, 30.0, 1000, "replace-one")
    poisson_tight = get_accountant("pld").epsilon(poisson, 1e-5)
    for name in ("pld", "rdp"):
        # a valid dominating analysis (the multiplicity-revealed pair): finite, never below the
        # tight Poisson analysis at the same rate
        assert poisson_tight < get_accountant(name).epsilon(wr, 1e-5) < math.inf
        wr_ar = SampledWithReplacementGaussianEvent(0.05, 30.0, 10, "add-remove")
        with pytest.raises(UnsupportedEventError, match="with replacement"):  # replace-one only
            get_accountant(name).epsilon(wr_ar, 1e-5)
    # the advanced accountant applies the DPVI paper's convention: the Poisson analysis at rate q
    adv = get_accountant("advanced")
    poisson = PoissonSubsampledGaussianEvent(0.05, 30.0, 1000, "replace-one")
    assert adv.epsilon(wr, 1e-3) == adv.epsilon(poisson, 1e-3)
    assert math.isinf(adv.epsilon(wr, 0.0))
    assert to_replace_one(SampledWithReplacementGaussianEvent(0.05, 30.0, 10, "add-remove")).neighbouring == (
        "replace-one"
    )
    # a ledger budgeted with the PLD accountant charges it
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("pld-set", 10.0, 1e-3, "pld")
    with ledger.charge("pld-set", wr):
        pass
    assert len(ledger.history("pld-set")) == 1
    ledger.register("adv-set", 10.0, 1e-3, "advanced")
    with ledger.charge("adv-set", wr):
        pass
    assert ledger.history("adv-set")[0]["event"]["type"] == "SampledWithReplacementGaussianEvent"


def test_subsampled_gaussian_events_share_checks_but_stay_distinct_types():
    from dpinfer.privacy import PoissonSubsampledGaussianEvent, SampledWithReplacementGaussianEvent

    p = PoissonSubsampledGaussianEvent(0.05, 2.0, 10)
    w = SampledWithReplacementGaussianEvent(0.05, 2.0, 10)
    assert p.neighbouring == "add-remove" and w.neighbouring == "replace-one"
    assert not isinstance(w, PoissonSubsampledGaussianEvent) and not isinstance(p, type(w))
    assert p != PoissonSubsampledGaussianEvent(0.05, 2.0, 10, "replace-one")
    for cls in (PoissonSubsampledGaussianEvent, SampledWithReplacementGaussianEvent):
        for bad in [(0.0, 2.0, 10), (0.05, 1e-4, 10), (0.05, 2.0, 1.5), (True, 2.0, 10)]:
            with pytest.raises(InvalidPrivacyParameterError):
                cls(*bad)


def test_neighbouring_enum_is_accepted_wherever_a_string_is():
    import json

    from dpinfer.privacy import REPLACE_ONE, Neighbouring, event_to_dict
    from dpinfer.privacy.mechanisms import LaplaceMechanism

    assert Neighbouring.REPLACE_ONE == "replace-one" and Neighbouring("add-remove") is Neighbouring.ADD_REMOVE
    assert f"{Neighbouring.ADD_REMOVE}" == str(Neighbouring.ADD_REMOVE) == "add-remove"
    assert json.dumps(Neighbouring.REPLACE_ONE) == '"replace-one"'
    for relation in Neighbouring:  # the enum and its string give the same event, bit for bit
        a, b = GaussianEvent(2.0, neighbouring=relation), GaussianEvent(2.0, neighbouring=relation.value)
        assert a == b and repr(a) == repr(b) and hash(a) == hash(b)
        assert type(a.neighbouring) is str and event_to_dict(a) == event_to_dict(b)
    mech = LaplaceMechanism(1, 1.0, 1.0, Neighbouring.ADD_REMOVE)
    assert type(mech.neighbouring) is str
    assert mech.event() == LaplaceMechanism(1, 1.0, 1.0, "add-remove").event()
    assert REPLACE_ONE == Neighbouring.REPLACE_ONE


@pytest.mark.parametrize("bad", ["replace_one", "bounded", "", None, 1])
def test_an_unknown_relation_is_refused_listing_the_valid_ones(bad):
    with pytest.raises(InvalidPrivacyParameterError, match="replace-one.*add-remove"):
        LaplaceEvent(1.0, neighbouring=bad)


def test_the_event_class_list_is_in_one_place():
    from dpinfer.privacy import events
    from dpinfer.privacy.accountants import base
    from dpinfer.privacy.event_conversion import _EVENT_TYPES

    assert _EVENT_TYPES is events.EVENT_TYPES
    assert base.ALL_LEAF_TYPES is events.ALL_LEAF_EVENT_TYPES
    assert base.GAUSSIAN_EVENT_TYPES is events.GAUSSIAN_EVENT_TYPES
    leaf_classes = {c for c in vars(events).values() if isinstance(c, type)
                    and issubclass(c, events.PrivacyEvent) and not c.__name__.startswith("_")}
    assert leaf_classes - {events.PrivacyEvent} == set(events.EVENT_TYPES.values())


def test_a_ledger_charge_is_the_same_whichever_spelling(tmp_path):
    """The enum and its string give the same stored rows and the same spent ε, bit for bit."""
    from dpinfer.privacy import Ledger, Neighbouring

    rows = []
    for i, relation in enumerate(["add-remove", Neighbouring.ADD_REMOVE]):
        ledger = Ledger(tmp_path / f"l{i}.db", create=True)
        ledger.register("d", epsilon=5.0, delta=1e-6, neighbouring=relation)
        with ledger.charge("d", GaussianEvent(3.0, neighbouring=relation), label="x"):
            pass
        (entry,) = ledger.history("d")
        rows.append({k: v for k, v in entry.items() if k not in ("created", "id")})
    assert rows[0] == rows[1] and repr(rows[0]) == repr(rows[1])
