"""Issue 12 on models nobody tuned for: SMC-ABC schedules, exact samplers, backends.

Measured in one run, against exact references (lattice FFT / enumeration):

* **SMC-ABC, old vs new default**: ``schedule="paper"`` (1.0·0.7^k → 0.2, the old default) and
  the scale-free ``"adaptive"`` default, on (a) the issue's clamped mean with Laplace noise of
  scale 0.015 (GaussianMean n=100, clamp ±1.5, ε=2), (b) Poisson counts released as a clamped sum
  with Laplace noise, (c) two clamped means in one 2-D Laplace release: posterior mean error in
  exact posterior sds, sd ratio, simulations, wall time (serial backend for both).
* **Exact samplers**: tempered SMC (mechanism density as ABC kernel) and mechanism-density
  importance sampling on the same problems: errors, simulations, wall time, log evidence.
* **Backends on a cheap simulator**: the same SMC-ABC run on ``serial``, ``processes`` (2
  workers) and ``auto``: wall time (the machine is shared: ratios only, from this run).

The problems (b), (c) are the test suite's (tests/user_problems.py). Usage:
``python benchmarks/user_models.py [--seeds 3]``; writes benchmarks/results/user_models.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from dpinfer.inference import mechanism_importance_sampling, smc_abc
from dpinfer.inference.exact import tempered as tempered_smc
from dpinfer.models.shipped.gaussian_mean import GaussianMean
from user_problems import PoissonClampedSum, TwoClampedMeans  # noqa: E402


def problems() -> list[tuple[str, Any, list[float], list[tuple[float, float]]]]:
    """(name, model, observed, [(exact mean, exact sd) per parameter])."""
    gm = GaussianMean(n=100, clamp=(-1.5, 1.5), epsilon=2.0)
    e = gm.exact_posterior([0.4], grid_size=301, bins=100)
    pois = PoissonClampedSum()
    ep = pois.exact_posterior([110.0])
    two = TwoClampedMeans()
    et = two.exact_marginals([0.5, -0.8])
    return [
        ("clamped-mean-laplace-0.015", gm, [0.4], [(e.mean, e.sd)]),
        ("poisson-clamped-sum", pois, [110.0], [(ep.mean, ep.sd)]),
        ("two-clamped-means", two, [0.5, -0.8], [(x.mean, x.sd) for x in et]),
    ]


def score(res: Any, exact: list[tuple[float, float]], wall: float) -> dict[str, Any]:
    m, s = res.mean(), res.sd()
    return {
        "mean_error_in_sd": [float((m[j] - mu) / sd) for j, (mu, sd) in enumerate(exact)],
        "sd_ratio": [float(s[j] / sd) for j, (_, sd) in enumerate(exact)],
        "n_simulations": int(res.n_simulations),
        "wall_s": wall,
    }


def timed(f: Any, *a: Any, **k: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    out = f(*a, **k)
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "user_models.json"))
    args = ap.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    out: dict[str, Any] = {"smc_abc": {}, "exact": {}, "backends": {}}
    for name, model, obs, exact in problems():
        rows: dict[str, list[Any]] = {"paper (old default)": [], "adaptive (new default)": []}
        for seed in range(args.seeds):
            for label, sched in (("paper (old default)", "paper"), ("adaptive (new default)", "adaptive")):
                res, wall = timed(smc_abc, model, obs, schedule=sched, backend="serial", seed=seed)
                row = score(res, exact, wall)
                row["populations"], row["final_tolerance"] = len(res.populations), res.tolerance
                rows[label].append(row)
        out["smc_abc"][name] = rows
        ex: dict[str, list[Any]] = {"tempered_smc": [], "importance_sampling": []}
        for seed in range(args.seeds):
            res, wall = timed(tempered_smc, model, obs, seed=seed)
            ex["tempered_smc"].append({**score(res, exact, wall), "log_evidence": res.log_evidence,
                                       "stages": len(res.stages)})
            res, wall = timed(mechanism_importance_sampling, model, obs, seed=seed)
            ex["importance_sampling"].append({**score(res, exact, wall), "log_evidence": res.log_evidence,
                                              "ess": res.ess})
        out["exact"][name] = ex
        print(name, json.dumps({k: [r["sd_ratio"] for r in v] for k, v in {**rows, **ex}.items()}))
    model, obs = GaussianMean(n=100, clamp=(-1.5, 1.5), epsilon=2.0), [0.4]
    for backend in ("serial", "processes", "auto"):
        res, wall = timed(smc_abc, model, obs, backend=backend, n_workers=2, seed=0)
        out["backends"][backend] = {"wall_s": wall, "backend": res.settings["backend"],
                                    "mean": res.mean().tolist()}
    print("backends", {k: round(v["wall_s"], 2) for k, v in out["backends"].items()})
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
