"""Shared helpers of the DPVI paper-reproduction scripts (examples/dpvi/)."""

from __future__ import annotations

import csv
import functools
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from dpinfer.models.data_spec import DataSpec
from dpinfer.release.dpvi import (
    DPVI,
    LogisticRegression,
    OptimizerOptions,
    PrivacyOptions,
    PrivacyPlan,
    TrainingOptions,
    plan_privacy,
)

RESULTS = Path(__file__).parent / "results"


@functools.cache
def _plan(epsilon: float, delta: float, q: float, steps: int, accountant: str | None) -> PrivacyPlan:
    return plan_privacy(sampling_rate=q, steps=steps, delta=delta, epsilon=epsilon, accountant=accountant)


def calibrate(
    epsilon: float, delta: float, q: float, steps: int, accountant: str | None = None
) -> tuple[float, float]:
    """Noise multiplier for (epsilon, delta) with the privacy core (PLD, replace-one by default); cached."""
    plan = _plan(epsilon, delta, q, steps, accountant)
    return plan.noise_multiplier, plan.epsilon


def plan_for(noise_multiplier: float, delta: float, q: float, steps: int, **kw: Any) -> PrivacyPlan:
    """The privacy plan of a given noise level (accounted once, reused by every run)."""
    key = (noise_multiplier, delta, q, steps, tuple(sorted(kw.items())))
    if key not in _PLANS:
        _PLANS[key] = plan_privacy(
            sampling_rate=q, steps=steps, delta=delta, noise_multiplier=noise_multiplier, **kw
        )
    return _PLANS[key]


_PLANS: dict[Any, PrivacyPlan] = {}


def accuracies(
    X: np.ndarray,
    y: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    runs: int,
    *,
    noise_multiplier: float | None,
    delta: float = 1e-3,
    clip: float = 5.0,
    q: float = 0.05,
    steps: int = 1000,
    lr: float = 0.1,
    seed0: int = 0,
    **kw: Any,
) -> tuple[list[float], float | None]:
    """Test accuracies of ``runs`` fits (fresh OS-entropy privacy noise each) and the reported epsilon.

    ``noise_multiplier=None`` runs the non-private baseline (no clipping, no noise). ``kw``: the
    accounting options of :func:`plan_for` (``accountant``, ``sampling``, ``paper_accounting``,
    ``delta_prime``).
    """
    engine = DPVI(LogisticRegression(X.shape[1]))
    # the paper's per-example ELBO terms, one draw and last iterate (dpinfer's defaults are the theta
    # split and tail averaging): these scripts reproduce the paper's numbers
    training = TrainingOptions(sampling_rate=q, steps=steps, per_example="elbo", average=False)
    optimizer = OptimizerOptions(lr=lr)
    accs, eps = [], None
    plan = None if noise_multiplier is None else plan_for(noise_multiplier, delta, q, steps, **kw)
    for r in range(runs):
        if noise_multiplier is None:
            fit = engine.fit(X, y, optimizer=optimizer, training=training, private=False, seed=seed0 + r,
                data=DataSpec(intercept=False))
        else:
            fit = engine.fit(
                X,
                y,
                delta=delta,
                privacy=PrivacyOptions(clip=clip, sampling=kw.get("sampling", "poisson")),
                optimizer=optimizer,
                training=training,
                privacy_plan=plan,
                seed=seed0 + r, data=DataSpec(intercept=False),
            )
            eps = fit.privacy.epsilon
        accs.append(fit.accuracy(X_test, y_test))
    return accs, eps


def summarize(accs: list[float]) -> tuple[float, float]:
    """Mean and standard error."""
    a = np.asarray(accs, dtype=float)
    return float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else 0.0


def write_csv(name: str, rows: list[dict[str, Any]]) -> Path:
    """Write rows to results/NAME.csv."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    print(f"wrote {path}")
    return path


def savefig(fig: Any, name: str) -> Path:
    """Save a figure to results/NAME.png."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.png"
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")
    return path


class Timer:
    """Prints the elapsed time of a block."""

    def __init__(self, label: str) -> None:
        self.label = label

    def __enter__(self) -> Timer:
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        print(f"  {self.label}: {time.perf_counter() - self.t0:.1f} s")
