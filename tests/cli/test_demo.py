"""Smoke test of `dpinfer demo` (quick mode): every present section runs and writes its report."""

import warnings

import dpinfer.demo
from dpinfer.cli import main
from dpinfer.errors import PriorDataConflictWarning
from dpinfer.privacy import Ledger


def _fixed_privacy_noise(monkeypatch) -> None:
    """Every release context the demo makes draws its noise from a seeded (insecure, test-only)
    privacy RNG, one seed per context in the order they are made: the demo's releases, and so
    whether a prior-data conflict check fires on them, are the same on every run. With the OS's
    noise the check's 1% false-alarm level per analysis made this test fail now and then."""
    import itertools

    from dpinfer.privacy import context as release_context
    from seeded_privacy_rng import prng

    seeds = itertools.count(2026)
    real = release_context.as_privacy_rng

    def seeded(rng):
        return real(rng) if rng is not None else prng(next(seeds))

    monkeypatch.setattr(release_context, "as_privacy_rng", seeded)


def test_demo_runs_end_to_end(tmp_path, capsys, monkeypatch):
    _fixed_privacy_noise(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["demo", "--out", str(tmp_path), "--quick"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    # issue 39 item 3: the demo's releases fit their models' priors (no prior-data conflict)
    assert not [w for w in caught if issubclass(w.category, PriorDataConflictWarning)]
    assert "prior-data conflict" not in captured.err + out
    assert "privacy: (0.5, 0)-DP, replace-one" in out
    report = (tmp_path / "report.md").read_text()
    assert "mean rings (released)" in report
    assert "rate posterior mean" in report and "Your own model" in report
    assert "DPVI (paper's split)" in report and "synthetic labels" in report
    ledger = Ledger(tmp_path / "ledger.db")
    assert ledger.spent("abalone") <= 10.0
    assert all(h["status"] == "released" for h in ledger.history("abalone"))
    # a second run starts from a fresh ledger instead of failing on an exhausted budget; its
    # first section (one charge) shows it, the others would only repeat the first run's work
    charges = len(ledger.history("abalone"))
    monkeypatch.setattr(dpinfer.demo, "SECTIONS", dpinfer.demo.SECTIONS[:1])
    assert main(["demo", "--out", str(tmp_path), "--quick"]) == 0
    again = Ledger(tmp_path / "ledger.db").history("abalone")
    assert 0 < len(again) < charges and all(h["status"] == "released" for h in again)
