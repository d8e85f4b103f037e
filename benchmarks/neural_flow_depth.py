"""SPPE's flow depth against sbi's NPE at the user's budget (issue 27, item 3): an experiment.

On the two problems of ``tests/user_problems.py`` (exact references), seeds 0-3, 3000 simulations:
sbi's NPE (its defaults, one round) and ``SPPE(model, simulations=3000)`` with an NSF of 5
transforms (the default), an NSF of 3 and a MAF of 5. CPU time (process time) of each fit and its
2000 draws, rounds, epochs, C2ST of 2000 draws against 2000 exact draws. All 32 fits run at once
in a pool of 16 single-threaded processes (one per core of the machine it was written for), so
the CPU times are comparable within the run, not with a quiet machine's.

Usage: ``python benchmarks/neural_flow_depth.py`` (writes ``$OUT/exp.json`` or /tmp/exp.json);
the run on the lent GPU machine's 16-core host is ``results/neural_flow_depth.json``.
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


def main() -> None:
    problems = ["poisson-clamped-sum", "two-clamped-means"]
    jobs = list(itertools.product(problems, [0, 1, 2, 3], ["npe", *FLOWS]))
    with get_context("spawn").Pool(16) as pool:
        res = pool.map(job, jobs, chunksize=1)
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "exp.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    for r in res:
        print(r["problem"][:8], r["seed"], r["variant"], f"{r['cpu']:.1f}s", r["rounds"], r["epochs"],
              f"{r['c2st']:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
