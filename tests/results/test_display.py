"""Notebook-native results and readable reports (issue 40 items 1 and 5).

Every result and privacy report has a one-line ``repr`` and an escaped, well-formed
``_repr_html_`` built from released quantities (:mod:`dpinfer.results.display`; every result
type on a real fit: ``test_results_contract.py``); printed reports summarise traces and show one
sensitivity, in the user's units; ``plot()`` returns a Figure that a notebook draws inline; progress
off a terminal is at most one line per population.
"""

from __future__ import annotations

import io
import sys
import warnings
from html.parser import HTMLParser

import numpy as np
import pytest

from dpinfer.execution import progress as prog
from dpinfer.models.data_spec import DataSpec
from dpinfer.models.synthesis import MarginalHistogramModel, SyntheticData
from dpinfer.privacy.events import DiscreteGaussianEvent, GaussianEvent
from dpinfer.privacy.report import PrivacyReport
from dpinfer.release import PrivateSMCResult
from dpinfer.results.display import brief, render_html, render_text, result_summary
from dpinfer.results.format import _REGISTRY, ResultFile


def _report(**details):
    return PrivacyReport.from_event(GaussianEvent(2.0), 1e-6, "pld", sensitivity=1.5, mechanism="gaussian",
                                    details=details)


def _result(names=("mu", "sigma"), privacy="default"):
    rng = np.random.default_rng(0)
    return PrivateSMCResult(particles=rng.normal(size=(50, len(names))), weights=np.full(50, 1 / 50),
                            param_names=tuple(names), privacy=_report() if privacy == "default" else privacy)


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack.pop() == tag, f"</{tag}> closes nothing open"

    def handle_data(self, data):
        self.text.append(data)


def _parse(page):
    p = _Tags()
    p.feed(page)
    p.close()
    assert p.stack == []
    return "".join(p.text)


def test_a_result_shows_method_privacy_and_parameters():
    res = _result()
    text = repr(res)
    eps = f"{res.privacy.epsilon:.4g}"
    assert text == (f"<PrivateSMCResult: ε = {eps}, δ = 1e-06, accountant 'pld', mechanism 'gaussian'; "
                    "50 particles; 2 parameters (mu, sigma)>")
    shown = _parse(res._repr_html_())
    assert "mu" in shown and "95% interval" in shown and "sensitivity 1.5" in shown
    assert f"{res.mean()[0]:.4g}" in shown


def test_html_escapes_names_and_is_well_formed():
    res = _result(names=("<b>", "x&y"))
    page = res._repr_html_()
    assert "<b>" not in page and "&lt;b&gt;" in page and "x&amp;y" in page
    assert "<b>" in _parse(page)  # the name reads back as given
    assert "<b>" in repr(res)  # plain text: not escaped


def test_a_non_private_result_and_warnings_are_shown():
    res = _result(privacy=None)
    assert "no privacy release" in repr(res)
    insecure = PrivacyReport(**{**_report().__dict__, "insecure_rng": True, "accounted": False})
    res = _result(privacy=insecure)
    assert "2 warnings" in repr(res)
    page = res._repr_html_()
    assert "INSECURE" in page and "NOT ACCOUNTED" in page


def test_every_result_class_gets_the_common_display():
    """No ResultFile subclass falls back to a dataclass's field-by-field repr (arrays)."""
    import dpinfer.inference  # noqa: F401 - registers the result classes
    import dpinfer.inference.exact.baselines  # noqa: F401
    import dpinfer.inference.exact.gibbs_ss  # noqa: F401
    import dpinfer.inference.glm  # noqa: F401
    import dpinfer.inference.neural  # noqa: F401
    import dpinfer.release  # noqa: F401
    import dpinfer.release.dpvi  # noqa: F401

    assert len(_REGISTRY) >= 13
    for cls in _REGISTRY.values():
        assert cls.__repr__ is ResultFile.__repr__, cls.__name__
        assert cls._repr_html_ is ResultFile._repr_html_, cls.__name__


def test_a_display_never_raises():
    class Broken(PrivateSMCResult):
        def mean(self):
            raise RuntimeError("no")

    res = Broken(particles=np.zeros((3, 1)), weights=np.full(3, 1 / 3), param_names=("a",), privacy=None)
    assert "<table>" not in res._repr_html_() and "a" in res._repr_html_()
    s = result_summary(res, stats=True)
    assert s["table"] is None and render_text(s).startswith("<Broken")
    assert render_html(s).startswith("<div")


def test_synthesis_outputs_and_reports_display():
    rep = _report()
    model = MarginalHistogramModel(columns=("age", "bmi"), lower=(0.0, 0.0), upper=(1.0, 1.0), bins=(2, 3),
                                   integer=(False, False), counts=(np.array([3, 4]), np.array([1, 2, 3])),
                                   privacy=rep)
    synth = SyntheticData(records=np.zeros((7, 2)), columns=("age", "bmi"), thetas=np.zeros((7, 1)),
                          source_privacy=rep)
    for obj, size in ((model, "bins 2, 3"), (synth, "7 synthetic records")):
        text, page = repr(obj), obj._repr_html_()
        assert "2 columns (age, bmi)" in text and size in text and "array" not in text
        assert "ε = " in _parse(page)
    text = repr(rep)
    assert text.startswith("<PrivacyReport: (") and "'pld'" in text and "\n" not in text
    assert "sensitivity: 1.5" in _parse(rep._repr_html_())


def test_printed_reports_summarise_traces_and_keep_them_in_to_dict():
    trace = list(np.linspace(0, 1, 1000))
    rep = _report(clipped_fraction_trace=trace, noise_std=6.305853089743752)
    text = str(rep)
    assert len(text) < 1000 and "clipped_fraction_trace=[1000 values: min 0, median 0.5, max 1]" in text
    assert text.endswith("noise_std=6.30585")
    assert rep.to_dict()["details"]["clipped_fraction_trace"] == trace
    assert brief([1.0, 2.0]) == "[1, 2]" and brief({"a": 0.123456789}) == "{a: 0.123457}"


def test_a_printed_report_shows_one_sensitivity_in_user_units():
    event = DiscreteGaussianEvent(sigma=26258.5, sensitivity=5795.45, dimension=8)
    rep = PrivacyReport.from_event(event, 1e-6, "rdp", sensitivity=2.8284271247461903, mechanism="gaussian",
                                   details={"grid": 0.00048828125})
    text = str(rep)
    assert text.count("sensitivity: ") == 1 and "sensitivity: 2.82843" in text
    assert "sensitivity=" not in text and "5795" not in text and "26258" not in text  # no grid units
    assert "noise_multiplier=4.53088" in text  # σ/Δ: the same in any units
    assert rep.to_dict()["events"][0]["sensitivity"] == 5795.45  # grid units kept in to_dict


def test_a_dpvi_report_prints_in_a_few_kilobytes():
    from dpinfer.privacy.context import ReleaseContext
    from dpinfer.release.dpvi import DPVI, LogisticRegression, PrivacyOptions, TrainingOptions
    from seeded_privacy_rng import prng

    rng = np.random.default_rng(0)
    X, y = rng.uniform(-1, 1, (200, 2)), (rng.random(200) < 0.4).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = DPVI(LogisticRegression(2)).fit(
            X, y, delta=1e-5, seed=0, privacy=PrivacyOptions(noise_multiplier=2.0, clip="auto"),
            training=TrainingOptions(steps=40, sampling_rate=0.1),
            context=ReleaseContext(privacy_rng=prng(1)), data=DataSpec(intercept=False))
    for text in (str(fit.privacy), repr(fit.privacy), fit.summary(), repr(fit), fit._repr_html_()):
        assert len(text.encode()) <= 4096
    text = str(fit.privacy)  # one sensitivity (the clip, and the sum's 2 C_t), no event in grid units
    assert text.count("sensitivity:") == 1 and "sensitivity=" not in text


def test_ipython_displays_results_and_reports():
    formatters = pytest.importorskip("IPython.core.formatters")
    res = _result()
    data, _ = formatters.DisplayFormatter().format(res)
    assert data["text/plain"] == repr(res) and data["text/html"] == res._repr_html_()
    data, _ = formatters.DisplayFormatter().format(res.privacy)
    assert "text/html" in data and "object at 0x" not in data["text/plain"]


# -- plots ----------------------------------------------------------------------------------------
class _FakeKernel:
    """``ipykernel`` as a running kernel shows it: ``kernelapp.IPKernelApp.initialized()``."""

    class kernelapp:  # noqa: N801 - the module's name
        class IPKernelApp:
            @staticmethod
            def initialized() -> bool:
                return True


def test_plot_returns_a_figure_that_still_draws(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    import dpinfer.plots as plots

    kernel = _FakeKernel()
    assert plots.in_notebook_kernel({"ipykernel": kernel}) and not plots.in_notebook_kernel({})
    # known-broken variant of the detection: ipykernel imported (nbclient does) is not a kernel
    assert not plots.in_notebook_kernel({"ipykernel": object()})
    res = _result()
    fig = res.plot()
    assert isinstance(fig, Figure) and fig.number in plots.plt.get_fignums()  # a script can still show it
    plots.plt.close(fig)
    monkeypatch.setitem(sys.modules, "ipykernel", kernel)  # in a kernel: released from pyplot ...
    fig = res.plot(tmp_path / "p.png")
    assert isinstance(fig, Figure) and fig.number not in plots.plt.get_fignums()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")  # ... and still drawable, as the notebook's formatter does
    assert buf.getvalue().startswith(b"\x89PNG") and (tmp_path / "p.png").stat().st_size > 0


# -- progress -------------------------------------------------------------------------------------
def test_progress_kind_follows_the_front_end():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    assert prog.bar_kind(Tty()) == "tty"
    assert prog.bar_kind(io.StringIO(), notebook=True, widgets=True) == "widget"
    assert prog.bar_kind(io.StringIO(), notebook=True, widgets=False) == "lines"
    assert prog.bar_kind(io.StringIO(), notebook=False) == "lines"


def test_progress_off_a_terminal_is_one_line_per_bar(capsys):
    bar = prog.progress_bar(100, "population 1", True, unit="particle")
    assert isinstance(bar, prog.LineProgress)
    for _ in range(50):
        bar.update(2)
        bar.set_postfix_str("1234 simulations in all")
    bar.close()
    bar.close()
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("population 1: 100/100 particles, 1234 simulations in all, ")
    assert prog.progress_bar(10, "off", False).disable  # not asked for: a disabled tqdm, nothing printed


def test_smc_progress_off_a_terminal_prints_at_most_one_line_per_population(capsys):
    from dpinfer.inference import smc_abc
    from dpinfer.inference.smc.options import RunOptions
    from dpinfer.models import GaussianMean

    gm = GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        smc_abc(gm, [0.6], n_particles=100, schedule=[2.0, 1.0], backend="serial", seed=1, batch_size=100,
                run=RunOptions(progress=True))
    lines = capsys.readouterr().err.splitlines()
    assert 1 <= len(lines) <= 2 and all(line.startswith("population ") for line in lines), lines
