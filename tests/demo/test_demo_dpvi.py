"""The demo's DPVI section (issue 39 item 5): its coefficient figure draws the intervals its
summaries print (90%, privacy noise included) and says so; its warnings name the Abalone features
as the figure does, and give no stale advice."""

from __future__ import annotations

import re
import warnings

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")


def test_plot_coefficients_draws_given_intervals_and_labels_them():
    from dpinfer.plots import plot_coefficients

    mean = np.array([0.5, -1.0])
    iv = np.array([[0.1, 0.7], [-3.0, 0.5]])  # asymmetric on purpose: drawn as given
    fig = plot_coefficients({"fit": (mean, iv)}, ["a", "b"], "t", bars="90% interval, noise included")
    ax = fig.axes[0]
    segs = ax.collections[0].get_segments()  # the error bars
    np.testing.assert_allclose([s[:, 1] for s in segs], iv)
    assert "noise included" in ax.get_ylabel()
    # known-broken variant: the sd form (the old call) draws mean +- 2 sd instead
    fig2 = plot_coefficients({"fit": (mean, np.array([0.1, 0.2]))}, ["a", "b"], "t")
    segs2 = fig2.axes[0].collections[0].get_segments()
    np.testing.assert_allclose([s[:, 1] for s in segs2], [[0.3, 0.7], [-1.4, -0.6]])
    assert not np.allclose([s[:, 1] for s in segs2], iv)


@pytest.mark.slow
def test_dpvi_section_figure_is_the_printed_intervals_and_warnings_use_the_names(tmp_path, monkeypatch):
    import dpinfer.plots as plots
    from dpinfer.demo import DemoContext
    from dpinfer.demo.dpvi import FEATURES, section_dpvi
    from dpinfer.privacy import Ledger
    from dpinfer.release.dpvi import DPVINoiseWarning
    from dpinfer.report import DemoReport

    ledger = Ledger(tmp_path / "ledger.db", create=True)
    ledger.register("abalone", epsilon=10.0, delta=1e-5, accountant="pld")
    ctx = DemoContext(tmp_path, ledger, 2026, True, DemoReport(tmp_path))
    drawn = {}
    real = plots.plot_coefficients

    def spy(fits, features, title, path=None, **kw):
        drawn.update(fits=fits, features=list(features), kw=kw)
        return real(fits, features, title, path, **kw)

    monkeypatch.setattr(plots, "plot_coefficients", spy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        section_dpvi(ctx)
    noise = [str(w.message) for w in caught if issubclass(w.category, DPVINoiseWarning)]
    assert noise  # eps = 0.1 on Abalone: the noise dominates
    assert all("theta_" not in m and "use result.interval(widen='noise')" not in m for m in noise)
    assert all(any(f in m for f in FEATURES) for m in noise)
    assert drawn["features"] == list(FEATURES)
    assert "privacy noise included" in drawn["kw"]["bars"]
    assert any("privacy noise included" in title for title, _ in ctx.report.figures)
    # the bars are the intervals the summaries print, fit by fit
    text = dict(ctx.report.sections)["DPVI on Abalone"]
    for label, key in (("eps = 0.1", "eps = 0.1 (defaults)"), ("eps = 1", "eps = 1 (defaults)")):
        block = text.split(key + "\n", 1)[1].split("\n\n", 1)[0]
        printed = [(float(a), float(b)) for a, b in re.findall(r"\[(\S+), (\S+)\]", block)]
        np.testing.assert_allclose(drawn["fits"][label][1], printed, rtol=1e-3, atol=1e-4)
