"""Events: validation, serialisation, explicit relation conversion."""

import math

import pytest

from dpinfer.privacy import (
    ComposedEvent,
    GaussianEvent,
    KnownEvent,
    LaplaceEvent,
    PoissonSubsampledGaussianEvent,
    SparseVectorEvent,
    compose,
    event_from_dict,
    event_to_dict,
    get_accountant,
    to_replace_one,
)
from dpinfer.privacy.errors import InvalidPrivacyParameterError

ALL = [
    LaplaceEvent(0.5),
    GaussianEvent(1.3, "add-remove"),
    SparseVectorEvent(10, 1.0, True),
    PoissonSubsampledGaussianEvent(0.01, 1.1, 100),
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
