"""Every mechanism of the registry is accountable by every budget's accountant (issue 35, point 1):
the events each registry entry charges are accepted by ``pld`` and ``rdp``, with a finite ε, in
a budget of the entry's relation and (after conversion) in a replace-one budget."""

from __future__ import annotations

import math

import pytest

from dpinfer.audit.registry import REGISTRY
from dpinfer.privacy import Ledger
from dpinfer.privacy.accountants import get_accountant
from dpinfer.privacy.admission import admit
from dpinfer.privacy.events import (
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    GaussianEvent,
    GaussianSparseVectorEvent,
    KnownEvent,
    PoissonSubsampledGaussianEvent,
    SampledWithReplacementGaussianEvent,
    SparseVectorEvent,
    compose,
)

#: What each registry entry charges (the event types of its mechanism, at typical parameters).
CHARGES = {
    "grid.laplace": DiscreteLaplaceEvent(1.0, 7),
    "grid.gaussian": compose(DiscreteGaussianEvent(40.0, 8.0, 1), DiscreteGaussianEvent(40.0, 8.0, 3)),
    "LaplaceMechanism": DiscreteLaplaceEvent(0.5, 1024),
    "GaussianMechanism": DiscreteGaussianEvent(300.0, 64.0, 4),
    "GeometricMechanism": DiscreteLaplaceEvent(1.0, 2),
    "RandomizedResponseMechanism": KnownEvent(1.0, 0.0, description="randomized response"),
    "ComposedMechanism": compose(DiscreteLaplaceEvent(0.5, 16), DiscreteLaplaceEvent(0.5, 1)),
    "clamped_release.mean": DiscreteLaplaceEvent(0.5, 5243),
    "clamped_release.sum_and_count": compose(DiscreteLaplaceEvent(0.5, 10, "add-remove"),
                                             DiscreteLaplaceEvent(0.5, 1, "add-remove")),
    "BinomialTrajectoryMechanism": KnownEvent(1.0, 0.0, description="binomial (Xiong et al. 2025)"),
    "KnownNoiseMechanism.gaussian": DiscreteGaussianEvent(10.0, 1.0, 5),
    "KnownNoiseMechanism.laplace": DiscreteLaplaceEvent(0.25, 3),
    "SparseVector": SparseVectorEvent(10, 1.0),
    "GaussianSparseVector": GaussianSparseVectorEvent(3, 4.0, 8.0, 200),
    "abcdp.embedding": GaussianEvent(5.0),
    "dpvi.step": compose(PoissonSubsampledGaussianEvent(0.01, 1.0, 100, "replace-one")),
    "dpvi.step.with_replacement": SampledWithReplacementGaussianEvent(0.01, 2.0, 100),
    "dpvi.clip_count": GaussianEvent(8.0, "add-remove"),
    "gaussian_rounds": compose(*[DiscreteGaussianEvent(50.0, 10.0, 2)] * 3),
}
#: Events accepted in addition (an (ε, δ) known release; DPVI under add-remove).
EXTRA = (KnownEvent(0.5, 1e-7), PoissonSubsampledGaussianEvent(0.01, 1.0, 100, "add-remove"))


def test_every_registry_entry_has_its_charge_listed():
    assert set(CHARGES) == {e.name for e in REGISTRY}


@pytest.mark.parametrize("name", sorted(CHARGES))
@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_every_registry_mechanism_is_accepted_by_both_accountants(name, accountant):
    event = CHARGES[name]
    acc = get_accountant(accountant)
    assert acc.supports(event)
    assert 0.0 < acc.epsilon(event, 1e-6) < math.inf
    # and by a replace-one budget of that accountant, converted where declared add-remove
    admitted = admit(event, accountant=accountant, neighbouring="replace-one")
    assert admitted.neighbouring == "replace-one"
    assert acc.epsilon(admitted, 1e-6) >= acc.epsilon(event, 1e-6) * (1 - 1e-3)


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_extra_events_are_accepted(accountant, tmp_path):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", 30.0, delta=1e-6, accountant=accountant)
    for event in EXTRA:
        with ledger.charge("d", event):
            pass
    assert len(ledger.history("d")) == 2 and ledger.spent("d") < 30.0
