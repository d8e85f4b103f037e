"""SPPE's flow depth against sbi's NPE at the user's budget (issue 27, item 3): an experiment.

On the two problems of ``tests/user_problems.py`` (exact references), seeds 0-3, 3000 simulations:
sbi's NPE (its defaults, one round) and ``SPPE(model, simulations=3000)`` with an NSF of 5
transforms (the default), an NSF of 3 and a MAF of 5. CPU time (process time) of each fit and its
2000 draws, rounds, epochs, C2ST of 2000 draws against 2000 exact draws. All 32 fits run at once
in a pool of 16 single-threaded processes (one per core of the machine it was written for), so
the CPU times are comparable within the run, not with a quiet machine's.

Usage: ``python benchmarks/neural_flow_depth.py`` (writes ``$OUT/exp.json`` or /tmp/exp.json);
the run on the lent GPU machine's 16-core host is ``results/neural_flow_depth.json``.

``--sequential`` runs the same fits one after another in this process (a quiet machine's CPU
times; key ``sequential`` of the results file). ``--sir`` checks the depth on a harder problem
before it becomes a default: the synthetic SIR release of ``examples/private_data/sir_reference.py``
(K = 10^4, ε = 10), ``SPPE(model, seed=s, flow=...)`` at its defaults (``rounds="auto"``, budget
5000) with 5 and with 3 transforms, seeds 0 and 1, C2ST of 1000 draws against 1000 draws of the
exact reference (mechanism-density importance sampling, 10 000 θ × 100, seed 11; key ``sir``).

Measured (one run each): on the quiet 2-core machine (``sequential``) NSF-3 took 9.6 s of CPU
for the four Poisson fits and 29.6 s for the four two-means fits against NSF-5's 15.0 s and
40.4 s, at C2ST 0.500-0.523 against 0.506-0.530; but on SIR it was less accurate: C2ST 0.600
and 0.574 against NSF-5's 0.521 and 0.520 (1000 against 1000 draws, se about 0.016). So SPPE
keeps 5 transforms by default.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
import warnings
from multiprocessing import get_context
from typing import Any

os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

FLOWS = {
    "nsf5": {"kind": "nsf", "transforms": 5},
    "nsf3": {"kind": "nsf", "transforms": 3},
    "maf5": {"kind": "maf", "transforms": 5},
}


def job(args: tuple[str, int, str]) -> dict[str, Any]:
    import neural_vs_sbi as nvs
    import numpy as np
    import torch

    from dpinfer.diagnostics.metrics import c2st
    from dpinfer.inference.neural import SPPE

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    prob, seed, variant = args
    _, model, obs, exact = next(p for p in nvs._user_problems() if p[0] == prob)
    ref = exact(2000, seed + 100)
    c0 = time.process_time()
    if variant == "npe":
        r = nvs.run_sbi("npe", model, obs, 1, 3000, seed, 2000)
        d, epochs, rounds = np.asarray(r["draws"]).reshape(2000, -1), r["epochs"], 1
    else:
        post = SPPE(model, simulations=3000, seed=seed, flow=FLOWS[variant]).fit(obs)
        d = post.sample(2000, seed=seed + 1).reshape(2000, -1)
        epochs, rounds = [r.epochs for r in post.rounds], len(post.rounds)
    cpu = time.process_time() - c0
    return {"problem": prob, "seed": seed, "variant": variant, "cpu": cpu, "epochs": epochs, "rounds": rounds,
            "c2st": float(c2st(d, ref, seed=seed)), "sd_ratio": (d.std(0) / ref.std(0)).tolist()}  # fmt: skip


def sir(seeds: tuple[int, ...] = (0, 1)) -> dict[str, Any]:
    """``--sir``: NSF-5 against NSF-3 at SPPE's defaults on the SIR release (module docstring)."""
    from pathlib import Path

    import numpy as np
    import torch

    from dpinfer.diagnostics.metrics import c2st
    from dpinfer.inference.neural import SPPE

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "private_data"))
    from sir_reference import benchmark_reference, synthetic_release

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    model, obs = synthetic_release(10_000)
    t0 = time.perf_counter()
    ref_res = benchmark_reference(model, obs)
    ref = ref_res.sample(1000, seed=5)
    out: dict[str, Any] = {
        "reference": {"ess": float(ref_res.ess), "mean": ref.mean(0).tolist(), "sd": ref.std(0).tolist(),
                      "wall_time": time.perf_counter() - t0},  # fmt: skip
        "fits": [],
    }
    for seed in seeds:
        for variant in ("nsf5", "nsf3"):
            c0, w0 = time.process_time(), time.perf_counter()
            post = SPPE(model, seed=seed, flow=FLOWS[variant]).fit(obs)
            d = post.sample(1000, seed=seed + 1)
            row = {
                "seed": seed, "variant": variant, "cpu": time.process_time() - c0,
                "wall": time.perf_counter() - w0, "epochs": [r.epochs for r in post.rounds],
                "stopped": post.settings.get("stopped"), "c2st": float(c2st(d, ref, seed=seed)),
                "mean_error_in_sd": ((d.mean(0) - ref.mean(0)) / ref.std(0)).tolist(),
                "sd_ratio": (d.std(0) / ref.std(0)).tolist(),
                "warnings": [w["category"] for w in post.settings.get("diagnostics", [])],
            }  # fmt: skip
            out["fits"].append(row)
            print(f"SIR seed {seed} {variant} cpu {row['cpu']:.1f} s rounds {len(row['epochs'])} "
                  f"epochs {row['epochs']} C2ST {row['c2st']:.3f} sd ratio "
                  f"{np.round(row['sd_ratio'], 2).tolist()}", flush=True)  # fmt: skip
    return out


def main() -> None:
    import argparse
    from pathlib import Path

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sequential", action="store_true", help="one fit at a time in this process")
    p.add_argument("--sir", action="store_true", help="NSF-5 vs NSF-3 on the SIR release")
    args = p.parse_args()
    problems = ["poisson-clamped-sum", "two-clamped-means"]
    jobs = list(itertools.product(problems, [0, 1, 2, 3], ["npe", *FLOWS]))
    if args.sir or args.sequential:
        import platform

        import torch

        key = "sir" if args.sir else "sequential"
        part: dict[str, Any] = sir() if args.sir else {"fits": [job(j) for j in jobs if j[2] != "maf5"]}
        part.update(machine=platform.platform(), torch=torch.__version__, torch_threads=1,
                    cpu_count=os.cpu_count(), load_average=list(os.getloadavg()))  # fmt: skip
        path = Path(__file__).parent / "results" / "neural_flow_depth.json"
        old = json.loads(path.read_text()) if path.exists() else {}
        old[key] = part
        path.write_text(json.dumps(old, indent=2))
        print(f"wrote {path} [{key}]")
        return
    with get_context("spawn").Pool(16) as pool:
        res = pool.map(job, jobs, chunksize=1)
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "exp.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    for r in res:
        print(r["problem"][:8], r["seed"], r["variant"], f"{r['cpu']:.1f}s", r["rounds"], r["epochs"],
              f"{r['c2st']:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
