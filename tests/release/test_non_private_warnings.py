"""The non-private baselines say so (issue 35, item 6a): ``rejection_abc``, ``rejection_abc_draws``
and ``DPVI.fit(private=False)`` warn with :class:`~dpinfer.errors.NonPrivateResultWarning`, naming
the private call to use instead, and their results say NON-PRIVATE (summary, saved file); a private
release does not warn so. A known-broken variant (the warning removed) is caught by the same check."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from dpinfer.errors import NonPrivateResultWarning, PrivacyWarning
from dpinfer.models.data_spec import DataSpec
from dpinfer.release import ABCResult, rejection_abc, rejection_abc_draws


def _toy() -> tuple[Any, ...]:
    from dpinfer.distances import RFFMMD
    from dpinfer.models.shipped.mixture_uniform import MixtureOfUniforms

    model = MixtureOfUniforms(n_points=20)
    return model, MixtureOfUniforms(n_points=40).observed(seed=1), RFFMMD(0.6, 10, seed=0)


def non_private_warnings(call: Callable[[], Any]) -> tuple[Any, list[str]]:
    """``call()`` and the messages of the NonPrivateResultWarnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call()
    return out, [str(w.message) for w in caught if issubclass(w.category, NonPrivateResultWarning)]


def check_says_non_private(messages: list[str], instead: str) -> None:
    assert len(messages) == 1, messages
    assert "NOT differentially private" in messages[0] and instead in messages[0]


def _rejection() -> ABCResult:
    model, observed, dist = _toy()
    return rejection_abc(observed, model.prior_sample, model.simulate, dist, 0.5, 30, seed=0)


def test_rejection_abc_warns_and_its_result_says_non_private(tmp_path):
    assert issubclass(NonPrivateResultWarning, PrivacyWarning)
    res, messages = non_private_warnings(_rejection)
    check_says_non_private(messages, "dpinfer.release.abcdp(")
    assert messages[0].startswith("rejection_abc:")
    assert "NON-PRIVATE" in res.summary() and not res.private and res.privacy is None
    path = res.save(tmp_path / "ref")
    again = ABCResult.load(path)
    assert "NOT differentially private" in again.meta["privacy_warning"]


def test_rejection_abc_draws_warns_too():
    model, observed, dist = _toy()
    thetas = model.prior_sample(20, np.random.default_rng(0))
    sims = model.simulate(thetas, np.random.default_rng(1))
    res, messages = non_private_warnings(lambda: rejection_abc_draws(observed, (thetas, sims), dist, 0.5))
    check_says_non_private(messages, "abcdp")
    assert messages[0].startswith("rejection_abc_draws:") and "NON-PRIVATE" in res.summary()


def test_the_check_catches_a_baseline_that_does_not_warn(monkeypatch):
    """Known-broken: main before issue 35 returned the result silently."""
    import dpinfer.release.rejection as rejection

    monkeypatch.setattr(rejection, "warn_non_private", lambda what, stacklevel: None)
    _, messages = non_private_warnings(_rejection)
    with pytest.raises(AssertionError):
        check_says_non_private(messages, "abcdp")


def _fit(private: bool) -> Any:
    from dpinfer.release.dpvi import DPVI, LogisticRegression, PrivacyOptions, TrainingOptions

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(200, 2))
    y = (X[:, 0] > 0).astype(float)
    kw: dict[str, Any] = {}
    if private:  # a fixed σ and clip: nothing to calibrate
        kw = {
            "delta": 1e-5,
            "privacy": PrivacyOptions(
                noise_multiplier=1.0, clip=1.0, accountant="rdp", neighbouring="add-remove"
            ),
        }
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*WITHOUT a ledger")  # the private fit's notice
        return DPVI(LogisticRegression(2)).fit(
            X, y, private=private, seed=0, training=TrainingOptions(steps=5), **kw,
            data=DataSpec(intercept=False)
        )


def test_a_non_private_dpvi_fit_warns_and_says_so(tmp_path):
    from dpinfer.release.dpvi import DPVIResult

    fit, messages = non_private_warnings(lambda: _fit(private=False))
    check_says_non_private(messages, "epsilon=")
    assert messages[0].startswith("DPVI.fit(private=False):")
    assert fit.privacy is None and "NON-PRIVATE" in fit.summary()
    assert "NOT differentially private" in fit.config["privacy_warning"]
    again = DPVIResult.load(fit.save(tmp_path / "fit.json"))
    assert "NOT differentially private" in again.config["privacy_warning"]
    private, messages = non_private_warnings(lambda: _fit(private=True))  # known-good: no such warning
    assert messages == [] and "privacy_warning" not in private.config
