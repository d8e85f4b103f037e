"""DPVI runs on one torch thread by default (``TrainingOptions.threads``), restores the caller's
setting afterwards, and refuses a bad thread count before anything is charged."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from dpinfer.errors import InvalidDataError
from dpinfer.models.data_spec import DataSpec
from dpinfer.privacy import Ledger
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, LogisticRegression, PrivacyOptions, TrainingOptions


def _data(n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, (X[:, 0] > 0).astype(float)


def test_the_loop_runs_on_one_thread_by_default_and_restores_the_setting() -> None:
    X, y = _data()
    seen: list[int] = []
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        for threads, expected in ((1, 1), (None, 2), (2, 2)):
            seen.clear()
            kw = {} if threads == 1 else {"threads": threads}  # 1 is the default
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                DPVI(LogisticRegression(2)).fit(
                    X, y, private=False, seed=0,
                    training=TrainingOptions(
                        steps=3, callback=lambda t, p: seen.append(torch.get_num_threads()), **kw
                    ), data=DataSpec(intercept=False),
                )  # fmt: skip
            assert seen == [expected] * 3, (threads, seen)
            assert torch.get_num_threads() == 2  # the caller's setting is back
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "4"])
def test_a_bad_thread_count_is_refused_before_any_charge(tmp_path, bad) -> None:
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", epsilon=10.0, delta=1e-4, accountant="rdp")
    X, y = _data()
    with pytest.raises(InvalidDataError, match="threads must be a positive integer or None"):
        DPVI(LogisticRegression(2)).fit(
            X, y, delta=1e-5,
            privacy=PrivacyOptions(noise_multiplier=1.0, clip=1.0, accountant="rdp",
                                   neighbouring="add-remove"),
            training=TrainingOptions(steps=5, sampling_rate=0.1, threads=bad),
            context=ReleaseContext(ledger=ledger, dataset="d"), data=DataSpec(intercept=False),
        )  # fmt: skip
    assert ledger.history("d") == []
