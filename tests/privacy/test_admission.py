"""A budget's relation and accountant are chosen once: releases of the other relation are
converted with a proven bound or refused before anything is charged (issue 35, points 1 and 7)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpinfer.errors import NeighbouringRelationError, UnsupportedEventError
from dpinfer.privacy import Ledger
from dpinfer.privacy.accountants import get_accountant
from dpinfer.privacy.admission import admit, to_add_remove
from dpinfer.privacy.events import (
    DiscreteGaussianEvent,
    GaussianEvent,
    KnownEvent,
    LaplaceEvent,
    PoissonSubsampledGaussianEvent,
    compose,
)


def _laplace_exact_epsilon(scale: float, shift: float) -> float:
    """The exact ε of Laplace(scale) noise on a statistic that moves by ``shift``: max over y of
    |ln p(y) - ln p(y - shift)| = shift/scale (evaluated numerically on a grid)."""
    y = np.linspace(-50, 50, 200001)
    return float(np.max(np.abs(np.abs(y - shift) - np.abs(y)) / scale))


def test_add_remove_release_is_converted_by_group_privacy_and_a_broken_conversion_is_caught():
    eps = 0.4
    admitted = admit(LaplaceEvent(eps, "add-remove"), accountant="pld", neighbouring="replace-one")
    assert admitted == LaplaceEvent(2 * eps, "replace-one")
    # the reference: a clamped sum of values in [-1, 1] has add-remove sensitivity 1 and
    # replace-one sensitivity 2 (x = -1 replaced by x = 1); Laplace of scale 1/eps
    exact = _laplace_exact_epsilon(1.0 / eps, 2.0)
    assert admitted.epsilon == pytest.approx(exact, rel=1e-6)
    broken = LaplaceEvent(eps, "replace-one")  # a conversion that drops group privacy's factor 2
    assert broken.epsilon < exact * 0.99  # certifies less than the release spends: caught
    # (ε, δ) guarantees: (2ε, (1 + e^ε)δ) (Dwork & Roth 2014, Thm 2.2)
    k = admit(KnownEvent(0.3, 1e-7, "add-remove"), accountant="rdp", neighbouring="replace-one")
    assert (k.epsilon, k.delta) == pytest.approx((0.6, (1 + math.exp(0.3)) * 1e-7))
    # Gaussians: the L2 sensitivity doubles
    g = admit(GaussianEvent(4.0, "add-remove"), accountant="rdp", neighbouring="replace-one")
    assert g == GaussianEvent(2.0)


def test_replace_one_to_add_remove_only_where_the_add_remove_analysis_is_known():
    psg = PoissonSubsampledGaussianEvent(0.01, 1.0, 100, "replace-one")
    assert to_add_remove(psg) == PoissonSubsampledGaussianEvent(0.01, 1.0, 100, "add-remove")
    for ev in (LaplaceEvent(0.5), DiscreteGaussianEvent(10.0, 2.0, 3), compose(psg, LaplaceEvent(0.1))):
        with pytest.raises(NeighbouringRelationError, match="add-remove") as exc:
            admit(ev, accountant="pld", neighbouring="add-remove", dataset="s")
        msg = str(exc.value)
        assert "Nothing was charged" in msg and "new" not in msg.lower() and "ledger" not in msg


def test_unsupported_by_the_budget_accountant_is_refused_without_splitting_advice(tmp_path):
    with pytest.raises(UnsupportedEventError) as exc:
        admit(GaussianEvent(3.0), accountant="pure", neighbouring="replace-one", dataset="s")
    msg = str(exc.value)
    assert "Nothing was charged" in msg
    for advice in ("new data-set", "new ledger", "another", "second"):
        assert advice not in msg


def test_ledger_converts_before_charging_and_refuses_before_charging(tmp_path):
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("ro", 2.0, accountant="pld")
    with ledger.charge("ro", LaplaceEvent(0.3, "add-remove")):
        pass
    (h,) = ledger.history("ro")
    assert h["event"] == {"type": "LaplaceEvent", "epsilon": 0.6, "neighbouring": "replace-one"}
    assert ledger.spent("ro") == pytest.approx(0.6, abs=1e-3)
    ledger.register("ar", 2.0, accountant="rdp", neighbouring="add-remove")
    with pytest.raises(NeighbouringRelationError), ledger.charge("ar", LaplaceEvent(0.3)):
        raise AssertionError("the body must not run")
    assert ledger.history("ar") == []
    with ledger.charge("ar", PoissonSubsampledGaussianEvent(0.01, 2.0, 10, "replace-one")):
        pass
    assert ledger.history("ar")[0]["event"]["neighbouring"] == "add-remove"
    same = PoissonSubsampledGaussianEvent(0.01, 2.0, 10, "add-remove")
    assert get_accountant("rdp").epsilon(same, 1e-6) == pytest.approx(ledger.spent("ar"))
