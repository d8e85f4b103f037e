"""``DPVI.fit(ledger=..., dataset=...)``: the flat keywords of the other releases, charged the same
as ``context=ReleaseContext(ledger=..., dataset=...)``; both together are refused before any charge."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpinfer.errors import InvalidPrivacyParameterError
from dpinfer.privacy import Ledger
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, DataOptions, LogisticRegression, TrainingOptions


def _fit(**kw):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPVI(LogisticRegression(2)).fit(
            X, (X[:, 0] > 0).astype(float), epsilon=1.0, delta=1e-5,
            data=DataOptions(bounds=[(-1.0, 1.0)] * 2, intercept=False),
            training=TrainingOptions(steps=20), seed=0, **kw,
        )  # fmt: skip


def test_flat_ledger_keywords_charge_like_a_context(tmp_path) -> None:
    a = Ledger(tmp_path / "a.db", create=True)
    b = Ledger(tmp_path / "b.db", create=True)
    for led in (a, b):
        led.register("d", epsilon=3.0, delta=1e-4, accountant="pld")
    _fit(ledger=a, dataset="d")
    _fit(context=ReleaseContext(ledger=b, dataset="d"))
    assert len(a.history("d")) == len(b.history("d")) == 1
    assert a.spent("d") == pytest.approx(b.spent("d"))
    with pytest.raises(InvalidPrivacyParameterError, match="not both"):
        _fit(ledger=a, dataset="d", context=ReleaseContext(ledger=b, dataset="d"))
    assert len(a.history("d")) == len(b.history("d")) == 1
