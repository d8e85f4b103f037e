"""``DPVI.fit(ledger=..., dataset=...)``, the flat keywords every release took before issue 37 item 4,
is refused with a TypeError naming ``context=ReleaseContext(ledger=..., dataset=...)`` before any
charge, alone or together with ``context=``; the context charges the fit once."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpinfer.privacy import Ledger
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, DataSpec, LogisticRegression, TrainingOptions


def _fit(**kw):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPVI(LogisticRegression(2)).fit(
            X, (X[:, 0] > 0).astype(float), epsilon=1.0, delta=1e-5,
            data=DataSpec(bounds=[(-1.0, 1.0)] * 2, intercept=False),
            training=TrainingOptions(steps=20), seed=0, **kw,
        )  # fmt: skip


def test_flat_ledger_keywords_are_refused_and_the_context_charges(tmp_path) -> None:
    a = Ledger(tmp_path / "a.db", create=True)
    a.register("d", epsilon=3.0, delta=1e-4, accountant="pld")
    for flat in ({"ledger": a, "dataset": "d"}, {"ledger": a, "dataset": "d", "context": ReleaseContext()}):
        with pytest.raises(TypeError, match=r"fit\(\) no longer takes ledger=, dataset=: pass "
                                            r"context=ReleaseContext\(ledger=\.\.\., dataset=\.\.\.\)"):
            _fit(**flat)
    assert a.history("d") == []
    _fit(context=ReleaseContext(ledger=a, dataset="d"))
    assert len(a.history("d")) == 1 and a.spent("d") > 0
