"""The accountants remember their ε answers (``Accountant.epsilon``): the same answer as computing
afresh, keyed by the accountant's class and settings, the event and δ; bounded; errors are never
remembered; safe under threads."""

from __future__ import annotations

import threading

import pytest

from dpinfer.errors import UnsupportedEventError
from dpinfer.privacy.accountants import PLDAccountant, RDPAccountant, base
from dpinfer.privacy.events import (
    ComposedEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSubsampledGaussianEvent,
)


class CountingPLD(PLDAccountant):
    """A PLD accountant counting the ε it computes (not those it remembers)."""

    computed = 0

    def _compute_epsilon(self, event, delta):
        type(self).computed += 1
        return super()._compute_epsilon(event, delta)


EVENT = ComposedEvent((GaussianEvent(2.0), *[LaplaceEvent(0.1)] * 3))


@pytest.fixture(autouse=True)
def fresh_memo():
    base.clear_epsilon_memo()
    CountingPLD.computed = 0
    yield
    base.clear_epsilon_memo()


def test_a_remembered_answer_is_the_computed_one_and_is_not_computed_again():
    acc = CountingPLD()
    first = acc.epsilon(EVENT, 1e-6)
    assert first == PLDAccountant()._compute_epsilon(EVENT, 1e-6)
    assert [acc.epsilon(EVENT, 1e-6), CountingPLD().epsilon(EVENT, 1e-6)] == [first, first]
    assert CountingPLD.computed == 1
    acc.epsilon(EVENT, 1e-5)  # another δ is another question
    assert CountingPLD.computed == 2


def test_the_settings_are_part_of_the_key():
    """Known-broken variant: a memo keyed by the event and δ alone would answer for the 1e-2
    grid with the 1e-4 grid's ε (and the RDP accountant with its other orders likewise)."""
    fine, coarse = PLDAccountant(1e-4), PLDAccountant(1e-2)
    e_fine, e_coarse = fine.epsilon(EVENT, 1e-6), coarse.epsilon(EVENT, 1e-6)
    assert e_fine != e_coarse
    assert e_coarse == coarse._compute_epsilon(EVENT, 1e-6)
    event = PoissonSubsampledGaussianEvent(0.01, 1.1, 100)
    few, many = RDPAccountant(orders=[2.0, 4.0, 8.0], extend=False), RDPAccountant()
    assert few.epsilon(event, 1e-5) == few._compute_epsilon(event, 1e-5)
    assert many.epsilon(event, 1e-5) == many._compute_epsilon(event, 1e-5) != few.epsilon(event, 1e-5)


def test_errors_are_never_remembered_and_the_memo_is_bounded(monkeypatch):
    with pytest.raises(UnsupportedEventError):
        RDPAccountant().epsilon(object(), 1e-6)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedEventError):
        RDPAccountant().epsilon(object(), 1e-6)  # type: ignore[arg-type]
    monkeypatch.setattr(base, "EPSILON_MEMO_SIZE", 2)
    acc = CountingPLD()
    for d in (1e-6, 1e-7, 1e-8):
        acc.epsilon(EVENT, d)
    assert len(base._memo) == 2
    acc.epsilon(EVENT, 1e-8)  # kept
    assert CountingPLD.computed == 3
    acc.epsilon(EVENT, 1e-6)  # dropped (least recently used): computed again
    assert CountingPLD.computed == 4


def test_threads_asking_at_once_get_the_same_answers():
    events = [ComposedEvent((LaplaceEvent(0.05),) * k) for k in range(1, 6)] + [GaussianEvent(1.5)]
    expected = {e: PLDAccountant()._compute_epsilon(e, 1e-6) for e in events}
    seen: list[bool] = []

    def ask():
        acc = PLDAccountant()
        seen.extend(acc.epsilon(e, 1e-6) == expected[e] for _ in range(20) for e in events)

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 6 * 20 * len(events) and all(seen)
