"""Smoke test of `dpinfer demo` (quick mode): every present section runs and writes its report."""

from dpinfer.cli import main
from dpinfer.privacy import Ledger


def test_demo_runs_end_to_end(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--quick"]) == 0
    out = capsys.readouterr().out
    assert "privacy: (0.5, 0)-DP, replace-one" in out
    report = (tmp_path / "report.md").read_text()
    assert "mean rings (released)" in report
    assert "rate posterior mean" in report and "Your own model" in report
    assert "DPVI (paper's split)" in report and "synthetic labels" in report
    ledger = Ledger(tmp_path / "ledger.db")
    assert ledger.spent("abalone") <= 10.0
    assert all(h["status"] == "released" for h in ledger.history("abalone"))
    # a second run starts from a fresh ledger instead of failing on an exhausted budget
    assert main(["demo", "--out", str(tmp_path), "--quick"]) == 0
