"""DPVI keeps no per-step trace of its noisy clip count (issue 35, item 6b).

Each step's private count Σ(1[‖g_i‖ ≤ C] − ½) + N(0, σ_b²) is a float64 sum of a half-integer and
float Gaussian noise: its low-order bits can reveal the count (Mironov 2012), so a fit's report
and saved file hold only aggregates (``clipped_fraction``, ``clip_final``), not the per-step
values nor the per-step clip norms (from which the counts can be read back). A known-broken
variant (the traces stored again, as before issue 35) is caught by the same check.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from dpinfer.models.data_spec import DataSpec
from dpinfer.privacy.context import ReleaseContext
from seeded_privacy_rng import prng

STEPS = 20


def _fit() -> Any:
    from dpinfer.release.dpvi import DPVI, LogisticRegression, PrivacyOptions, TrainingOptions

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(400, 2))
    y = (X[:, 0] > 0).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPVI(LogisticRegression(2)).fit(
            X, y, delta=1e-5, privacy=PrivacyOptions(noise_multiplier=2.0), seed=0,
            training=TrainingOptions(steps=STEPS, sampling_rate=0.2),
            context=ReleaseContext(privacy_rng=prng(1)), data=DataSpec(intercept=False),
        )  # fmt: skip


def per_step_values(obj: Any, path: str = "") -> list[str]:
    """Where ``obj`` (a report or a saved file, parsed) holds a list of one number per step."""
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in per_step_values(v, f"{path}.{k}")]
    if isinstance(obj, list) and len(obj) == STEPS and all(isinstance(v, (int, float)) for v in obj):
        return [path]
    return []


def test_a_private_fit_keeps_no_per_step_clip_count(tmp_path):
    fit = _fit()
    details = fit.privacy.details
    assert (
        details["clip"] == "auto" and 0.0 <= details["clipped_fraction"] <= 1.0 and details["clip_final"] > 0
    )
    assert per_step_values(fit.privacy.to_dict()) == []
    saved = fit.save(tmp_path / "fit")
    again = type(fit).load(saved)
    assert per_step_values(again.privacy.to_dict()) == [] and per_step_values(again.config) == []
    with np.load(saved, allow_pickle=False) as arrays:  # no array of one value per step either
        assert [k for k in arrays.files if arrays[k].shape[:1] == (STEPS,)] == []


def test_the_check_catches_a_fit_that_stores_the_count_trace(monkeypatch):
    """Known-broken: main before issue 35 stored clipped_fraction_trace and clip_trace."""
    from dpinfer.release.dpvi import loop

    record = loop.clip_record

    def old(dp: Any) -> dict[str, Any]:
        return {
            **record(dp),
            "clipped_fraction_trace": [1.0 - u for u in dp.unclipped_trace],
            "clip_trace": list(dp.clip_trace),
        }

    monkeypatch.setattr(loop, "clip_record", old)
    found = per_step_values(_fit().privacy.to_dict())
    assert sorted(found) == [".details.clip_trace", ".details.clipped_fraction_trace"], found
