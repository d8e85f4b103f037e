"""The Gaussian PLD on the whole loss grid (dpinfer.privacy.gaussian_pld) against dp-accounting's
``from_gaussian_mechanism``, side by side in one run.

1. One PLD build, per (σ, q, relation) at the PLD accountant's grid step 1e-4: the median of 3 cold
   builds of each, their ratio, and the largest difference in one grid point's mass.
2. DPVI's σ calibration (PLD, replace-one, q = 0.05, T = 1000, δ = 1e-5, ε ∈ {1, 4}) with the leaf
   cache cleared: with this module, and with ``gaussian_pld`` swapped for dp-accounting's
   constructor (the previous code path); the two σ agree to the calibration's secant steps
   on ε values equal to about 1e-12 (recorded: their relative difference).

Usage: ``python benchmarks/gaussian_pld.py``; writes ``benchmarks/results/gaussian_pld.json``.
The machine may be shared: the load average is recorded.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import dp_accounting
import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from dpinfer.privacy import PoissonSubsampledGaussianEvent, calibrate_noise_multiplier, get_accountant
from dpinfer.privacy import gaussian_pld as gp
from dpinfer.privacy.accountants import pld as pld_module

REL = dp_accounting.NeighboringRelation
CASES = [(0.8, 1.0, REL.ADD_OR_REMOVE_ONE), (1.0, 0.05, REL.ADD_OR_REMOVE_ONE), (1.0, 0.05, REL.REPLACE_ONE),
         (0.6, 0.5, REL.REPLACE_ONE), (3.0, 0.01, REL.ADD_OR_REMOVE_ONE)]
VDI = 1e-4


def _median_time(fn: Any, repeats: int = 3) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _gap(a: Any, b: Any) -> float:
    gap = 0.0
    for pa, pb in ((a._pmf_remove, b._pmf_remove), (a._pmf_add, b._pmf_add)):
        xa, xb = pa.to_dense_pmf()._probs, pb.to_dense_pmf()._probs
        gap = max(gap, float(np.max(np.abs(np.asarray(xa) - np.asarray(xb)))))
    return gap


def builds() -> list[dict[str, Any]]:
    rows = []
    for sigma, q, rel in CASES:
        kw = dict(standard_deviation=sigma, sampling_prob=q, neighboring_relation=rel,
                  value_discretization_interval=VDI)
        t_ref, ref = _median_time(lambda kw=kw: pld_lib.from_gaussian_mechanism(**kw))
        t_ours, ours = _median_time(lambda kw=kw: gp.gaussian_pld(**kw))
        rows.append({"sigma": sigma, "q": q, "relation": rel.name.lower(), "dp_accounting_s": round(t_ref, 4),
                     "ours_s": round(t_ours, 4), "speedup": round(t_ref / t_ours, 1),
                     "max_mass_difference": _gap(ours, ref)})
        print(rows[-1])
    return rows


def calibrations() -> list[dict[str, Any]]:
    acc = get_accountant("pld")
    rows = []

    def make(s: float) -> PoissonSubsampledGaussianEvent:
        return PoissonSubsampledGaussianEvent(0.05, s, 1000, neighbouring="replace-one")

    for eps in (1.0, 4.0):
        pld_module._leaf_pld.cache_clear()
        t0 = time.perf_counter()
        sigma_new = calibrate_noise_multiplier(make, eps, 1e-5, acc, rtol=1e-3)
        t_new = time.perf_counter() - t0
        pld_module._leaf_pld.cache_clear()
        original = pld_module.gaussian_pld
        pld_module.gaussian_pld = lambda **kw: pld_lib.from_gaussian_mechanism(**kw)  # the previous path
        try:
            t0 = time.perf_counter()
            sigma_old = calibrate_noise_multiplier(make, eps, 1e-5, acc, rtol=1e-3)
            t_old = time.perf_counter() - t0
        finally:
            pld_module.gaussian_pld = original
            pld_module._leaf_pld.cache_clear()
        rows.append({"epsilon": eps, "sigma": sigma_new, "sigma_with_dp_accounting": sigma_old,
                     "sigma_relative_difference": abs(sigma_new - sigma_old) / sigma_old,
                     "ours_s": round(t_new, 3),
                     "dp_accounting_s": round(t_old, 3), "speedup": round(t_old / t_new, 1)})
        print(rows[-1])
    return rows


def main() -> None:
    out = {"cpu_count": os.cpu_count(), "load_before": list(os.getloadavg()), "grid_step": VDI,
           "builds": builds(), "dpvi_calibration": calibrations(), "load_after": list(os.getloadavg())}
    path = Path(__file__).resolve().parent / "results" / "gaussian_pld.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
