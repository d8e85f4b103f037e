"""Progress that works in a notebook (issue 26): SMC-ABC's bars are ``tqdm.auto`` bars on stderr,
shown by default on a terminal or in a notebook kernel and off otherwise; ``progress=`` forces it."""

from __future__ import annotations

import sys

from dpinfer.execution import progress
from dpinfer.inference.smc.options import RunOptions


def test_default_is_on_in_a_notebook_and_off_when_not_interactive(monkeypatch):
    assert RunOptions().progress is None  # decided when the run starts
    monkeypatch.setattr(progress, "in_notebook", lambda: False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert progress.resolve(None) is False and progress.resolve(True) is True
    assert progress.progress_bar(10, "x").disable
    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    assert progress.resolve(None) is True and progress.resolve(False) is False
    monkeypatch.setattr(progress, "widgets_available", lambda: True)  # a notebook with ipywidgets: a widget
    bar = progress.progress_bar(10, "x", unit="particle")
    assert not bar.disable and type(bar).__module__.startswith("tqdm")
    bar.close()
    monkeypatch.setattr(progress, "widgets_available", lambda: False)  # without: one line, no redraws
    assert isinstance(progress.progress_bar(10, "x"), progress.LineProgress)


def test_in_notebook_is_false_outside_a_kernel():
    assert progress.in_notebook() is False


def test_smc_abc_shows_simulations_so_far_on_stderr(capsys):
    from dpinfer.inference import smc_abc
    from dpinfer.models.shipped.gaussian_mean import GaussianMean

    smc_abc(GaussianMean(n=30, epsilon=1.0), [0.4], n_particles=200, batch_size=200, schedule=[1.0, 0.5],
            seed=0, backend="serial", run=RunOptions(progress=True))
    captured = capsys.readouterr()
    assert captured.out == ""  # library code prints nothing: the bar is on stderr
    assert "population 1" in captured.err and "simulations in all" in captured.err
