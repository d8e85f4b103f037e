"""Smoke tests of the ABCDP plots (files are written, axes carry the data)."""

from __future__ import annotations

import numpy as np

from dpinfer.diagnostics import svt_noise_scale
from dpinfer.plots import (
    plot_covid_fit,
    plot_error_vs_threshold,
    plot_flip_curves,
    plot_flip_grid,
    plot_posterior_histograms,
)


def test_plots_write_files(tmp_path):
    rho = np.linspace(0, 1, 50)
    ax = plot_flip_curves(rho, 0.2, {"b=0.1": 0.1, "b=0.01": 0.01})
    assert len(ax.lines) == 3  # two curves + the threshold marker
    plot_flip_grid(rho, 0.2, (10, 100), (10,), (1.0, 10.0),
                   lambda c, e, n: svt_noise_scale(c, e, 2 / n, True), tmp_path / "f1.png")
    table = [
        {"c": 10, "epsilon_abc": ea, "epsilon_total": et, "resample": rs, "error": 0.1 * ea}
        for ea in (0.05, 0.1) for et in (1.0, np.inf) for rs in (False, True)
    ]
    plot_error_vs_threshold(table, tmp_path / "f3.png", prior_error=0.12)
    t = np.arange(5)
    plot_covid_fit([{"title": "x", "curves": np.ones((2, 5)), "mean_curve": t}], t, t, tmp_path / "f4.png")
    plot_posterior_histograms({"run": np.random.default_rng(0).normal(size=(10, 2))}, ("a", "b"), [0, 0],
                              tmp_path / "f5.png")
    for name in ("f1", "f3", "f4", "f5"):
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
