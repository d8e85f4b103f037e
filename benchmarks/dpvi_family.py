"""DPVI: wall time per 1000 steps of the mean-field and full-rank families, side by side.

The default fit (``per_example="theta"``, 4 Monte Carlo draws, adaptive private clip, tail
averaging) of a logistic regression with n = 2000 standardised records, q = 0.05 and a fixed σ,
for D coefficients. In this mode the released rows are the θ-gradients (4·D entries) whatever
the family, so the families differ only in the draws θ = u + Lε, the pullback of the one
privatised sum and the optimizer state (2D against D + D(D+1)/2 parameters). The two families are
timed alternately (one torch thread), median of ``--repeats`` runs, loop only (the step callback
brackets it). The ratio full-rank / mean-field is what ``family="auto"`` trades against the
full-rank family's better sd on correlated posteriors (:func:`dpinfer.release.dpvi.families.choose_family`).

Usage: ``python benchmarks/dpvi_family.py [--steps 300] [--repeats 3]``; writes
benchmarks/results/dpvi_family.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from dpinfer.models.data_spec import DataSpec
from dpinfer.privacy import PrivacyRNG
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, LogisticRegression, PrivacyOptions, TrainingOptions

DIMS = (3, 8, 16, 30, 50, 100)


def _time(family: str, X: np.ndarray, y: np.ndarray, steps: int) -> float:
    """Seconds per 1000 steps of one private default fit with ``family``."""
    stamps: list[float] = []

    def cb(t: int, _params: np.ndarray) -> None:
        if t == 0 or t == steps - 1:
            stamps.append(time.perf_counter())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        DPVI(LogisticRegression(X.shape[1]), family).fit(
            X,
            y,
            delta=1e-5,
            privacy=PrivacyOptions(noise_multiplier=1.0),
            training=TrainingOptions(steps=steps, callback=cb),
            seed=0,
            context=ReleaseContext(privacy_rng=PrivacyRNG.insecure_deterministic(0)),
            data=DataSpec(intercept=False),
        )
    return 1000.0 * (stamps[1] - stamps[0]) / (steps - 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    rows = {}
    for d in DIMS:
        X = rng.normal(size=(2000, d)) / np.sqrt(d)
        y = (rng.random(2000) < 1 / (1 + np.exp(-X @ rng.normal(size=d)))).astype(float)
        times: dict[str, list[float]] = {"meanfield": [], "fullrank": []}
        for _ in range(args.repeats):
            for fam in times:
                times[fam].append(_time(fam, X, y, args.steps))
        mf, fr = (float(np.median(times[f])) for f in ("meanfield", "fullrank"))
        rows[str(d)] = {"meanfield_s_per_1000": mf, "fullrank_s_per_1000": fr, "ratio": fr / mf}
        print(f"D = {d:4d}: mean-field {mf:6.2f} s, full-rank {fr:6.2f} s per 1000 steps (x{fr / mf:.2f})")
    out = {
        "benchmark": "dpvi_family",
        "settings": {"n": 2000, "q": 0.05, "steps_timed": args.steps, "repeats": args.repeats,
                     "per_example": "theta", "mc_samples": 4, "clip": "auto", "threads": 1},
        "machine": platform.platform(),
        "torch": torch.__version__,
        "results": rows,
    }
    path = Path(__file__).parent / "results" / "dpvi_family.json"
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
