"""The privacy report names, per event, the analysis used and its slack against the tightest
analysis available (issue 35, point 1)."""

from __future__ import annotations

import pytest

from dpinfer.privacy.accountants import get_accountant
from dpinfer.privacy.events import (
    DiscreteGaussianEvent,
    GaussianEvent,
    LaplaceEvent,
    PoissonSubsampledGaussianEvent,
    compose,
)
from dpinfer.privacy.report import PrivacyReport, leaf_analysis


def test_tight_leaves_have_no_slack_and_are_not_recomputed():
    a = leaf_analysis("pld", LaplaceEvent(0.5), 1e-6)
    assert a["analysis"] == "tight" and a["slack"] == 0.0 and "reference_epsilon" not in a


def test_dominating_leaf_slack_against_the_other_accountant_and_the_continuous_gaussian():
    mdg = DiscreteGaussianEvent(400.0, 100.0, 12)
    a = leaf_analysis("pld", mdg, 1e-6)
    assert a["analysis"] == "dominating" and "Canonne" in a["method"]
    assert a["epsilon"] == pytest.approx(get_accountant("pld").epsilon(mdg, 1e-6))
    assert a["reference_epsilon"] == min(a["epsilon"], get_accountant("rdp").epsilon(mdg, 1e-6))
    assert a["slack"] == pytest.approx(a["epsilon"] / a["reference_epsilon"] - 1.0)
    assert a["exact_epsilon"] == pytest.approx(get_accountant("pld").epsilon(GaussianEvent(4.0), 1e-6))
    assert 0.0 < a["exact_slack"] <= 0.10  # measured 7.8% at this σ/Δ and δ
    ro = PoissonSubsampledGaussianEvent(0.05, 2.0, 50, "replace-one")
    b = leaf_analysis("rdp", ro, 1e-5)
    assert b["analysis"] == "dominating" and b["reference"] == "pld"
    assert 0.0 < b["slack"] <= 0.10


def test_report_summary_and_json_carry_the_analyses():
    event = compose(DiscreteGaussianEvent(400.0, 100.0, 12), LaplaceEvent(0.1))
    report = PrivacyReport.from_event(event, 1e-6, "pld", 1.0, mechanism="glm")
    kinds = [a["analysis"] for a in report.analyses]
    assert kinds == ["dominating", "tight"]
    text = report.summary()
    assert "dominating" in text and "slack" in text and "continuous Gaussian" in text
    d = report.to_dict()
    assert [a["analysis"] for a in d["analyses"]] == kinds
    assert PrivacyReport.from_dict(d) == report  # the analyses are recomputed, not stored
