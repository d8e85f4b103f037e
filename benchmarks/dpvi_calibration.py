"""Issue 29: what one default DPVI fit gives, and whether it says what it does not know.

Two logistic problems with exact posteriors (``tests/glm_reference.py``: importance sampling
from the Laplace approximation):

* ``logistic``: n = 2000, D = 5 standardised features (``simulate``), the model's N(0, 1) prior;
* ``patients``: the issue's scenario, 3000 records of age, BMI, systolic pressure and smoking,
  scaled by their public bounds (``bounds=``) with ``intercept=True``; the exact posterior is
  computed on the same scaled design.

For each ε ∈ {0.5, 1, 2, 10} and a non-private fit: ONE default fit (seed 0; private fits draw
their noise from the OS, so a rerun differs), and per coordinate |z| = |mean − exact mean| / exact
sd, the posterior-sd ratio (fit / exact), the widened-sd ratio (sqrt(sd² + noise_sd²) / exact sd),
noise_sd / posterior sd, whether the exact mean lies in the fit's 90% interval (posterior sd
alone, and widened), whether it warned (DPVINoiseWarning, DPVIConvergenceWarning), and the wall
time of the fit and of the σ calibration (cold cache).

The σ calibration is also timed against the previous search (doubling from σ = 1 and bisection
to rtol 10⁻⁶ on the fine PLD grid, reproduced here) at q = 0.05, T = 1000, δ = 10⁻⁵.

Usage: ``python benchmarks/dpvi_calibration.py [--skip-old]``; writes
``benchmarks/results/dpvi_calibration.json``. The machine may be shared: times are one run's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from dpinfer.privacy import PoissonSubsampledGaussianEvent, calibrate_noise_multiplier, get_accountant  # noqa: E402
from dpinfer.privacy.accountants import pld as pld_module  # noqa: E402
from dpinfer.release.dpvi import (  # noqa: E402
    DPVI,
    DataSpec,
    DPVIConvergenceWarning,
    DPVINoiseWarning,
    LogisticRegression,
    planning,  # noqa: E402
)
from glm_reference import reference_posterior, simulate  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0, 10.0)
BOUNDS = [(18.0, 90.0), (15.0, 50.0), (90.0, 200.0), (0.0, 1.0)]


def patients(n: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The issue's patient records (raw units) and a logistic outcome."""
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(55, 15, n), 18, 90)
    bmi = np.clip(rng.normal(28, 5, n), 15, 50)
    sbp = np.clip(rng.normal(130, 18, n), 90, 200)
    smoker = (rng.random(n) < 0.25).astype(float)
    raw = np.column_stack([age, bmi, sbp, smoker])
    eta = -1.2 + 0.04 * (age - 55) + 0.12 * (bmi - 28) + 0.01 * (sbp - 130) + 0.7 * smoker
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    return raw, y


def scaled_design(raw: np.ndarray) -> np.ndarray:
    b = np.asarray(BOUNDS)
    return np.column_stack([np.ones(len(raw)), 2 * (raw - b[:, 0]) / (b[:, 1] - b[:, 0]) - 1])


def problems() -> dict[str, dict[str, Any]]:
    X, y = simulate("logistic", 2000, np.array([1.0, -0.5, 0.5, 0.25, 0.0]), seed=11)
    raw, yp = patients()
    return {
        "logistic": {"X": X, "y": y, "kw": {"data": DataSpec(intercept=False)}, "design": X},
        "patients": {"X": raw, "y": yp, "kw": {"data": DataSpec(intercept=True, bounds=BOUNDS)},
                     "design": scaled_design(raw)},
    }


def one_fit(prob: dict[str, Any], ref: dict[str, Any], epsilon: float | None) -> dict[str, Any]:
    D = prob["design"].shape[1]
    planning._CALIBRATED.clear()
    pld_module._leaf_pld.cache_clear()
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if epsilon is None:
            fit = DPVI(LogisticRegression(D)).fit(prob["X"], prob["y"], private=False, seed=0, **prob["kw"])
        else:
            fit = DPVI(LogisticRegression(D)).fit(
                prob["X"], prob["y"], epsilon=epsilon, delta=1e-5, seed=0, **prob["kw"]
            )
    wall = time.perf_counter() - t0
    m, s = np.asarray(ref["mean"]), np.asarray(ref["sd"])
    z = np.abs(fit.mean() - m) / s
    lo0, hi0 = fit.interval(0.9, widen=None).T
    lo1, hi1 = fit.interval(0.9, widen="noise").T
    ratio = fit.noise_sd / fit.std
    return {
        "epsilon": epsilon,
        "family": fit.family,
        "abs_z": np.round(z, 3).tolist(),
        "abs_z_mean": round(float(z.mean()), 3),
        "abs_z_max": round(float(z.max()), 3),
        "sd_ratio": np.round(fit.std / s, 3).tolist(),
        "widened_sd_ratio": np.round(fit.sd("noise") / s, 3).tolist(),
        "noise_sd_over_posterior_sd": np.round(ratio, 3).tolist(),
        "noise_sd_over_posterior_sd_max": round(float(ratio.max()), 3),
        "exact_mean_in_90_interval": int(np.sum((m >= lo0) & (m <= hi0))),
        "exact_mean_in_widened_90_interval": int(np.sum((m >= lo1) & (m <= hi1))),
        "coordinates": D,
        "noise_warning": any(issubclass(w.category, DPVINoiseWarning) for w in caught),
        "convergence_warning": any(issubclass(w.category, DPVIConvergenceWarning) for w in caught),
        "converged": fit.converged,
        "fit_seconds": round(wall, 2),
        "sigma": None if fit.privacy is None else fit.privacy.details["noise_multiplier"],
    }


def old_calibration(make_event: Any, target: float, delta: float, acc: Any, rtol: float = 1e-6) -> float:
    """The search before issue 29: doubling from σ = 1, then bisection to ``rtol``."""

    def meets(s: float) -> bool:
        e = acc.epsilon(make_event(s), delta)
        return math.isfinite(e) and e <= target

    hi = 1.0
    while not meets(hi):
        hi *= 2.0
    lo = hi / 2.0
    while meets(lo):
        hi, lo = lo, lo / 2.0
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return hi


def calibration_times(skip_old: bool) -> list[dict[str, Any]]:
    acc = get_accountant("pld")
    out = []
    for eps in (0.5, 1.0, 2.0, 10.0, 100.0):
        def make(s: float) -> PoissonSubsampledGaussianEvent:
            return PoissonSubsampledGaussianEvent(0.05, s, 1000, neighbouring="replace-one")

        row: dict[str, Any] = {"epsilon": eps}
        pld_module._leaf_pld.cache_clear()
        t0 = time.perf_counter()
        row["sigma_new"] = calibrate_noise_multiplier(make, eps, 1e-5, acc)
        row["seconds_new"] = round(time.perf_counter() - t0, 2)
        if not skip_old:
            pld_module._leaf_pld.cache_clear()
            t0 = time.perf_counter()
            row["sigma_old"] = old_calibration(make, eps, 1e-5, acc)
            row["seconds_old"] = round(time.perf_counter() - t0, 2)
        out.append(row)
        print("calibration", row, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skip-old", action="store_true", help="do not time the old bisection")
    args = ap.parse_args()
    torch.set_num_threads(1)
    load0 = os.getloadavg()
    result: dict[str, Any] = {"cpu_count": os.cpu_count(), "load_before": load0, "problems": {}}
    for name, prob in problems().items():
        ref = reference_posterior("logistic", prob["design"], prob["y"], draws=100_000, seed=0)
        rows = []
        for eps in (None, *EPSILONS):
            row = one_fit(prob, ref, eps)
            print(name, row, flush=True)
            rows.append(row)
        result["problems"][name] = {"n": len(prob["y"]), "exact_sd": np.round(ref["sd"], 4).tolist(),
                                    "importance_ess": round(float(ref["ess"])), "fits": rows}
    result["calibration"] = calibration_times(args.skip_old)
    result["load_after"] = os.getloadavg()
    out = Path(__file__).resolve().parent / "results" / "dpvi_calibration.json"
    out.write_text(json.dumps(result, indent=1))
    print("wrote", out)


if __name__ == "__main__":
    main()
