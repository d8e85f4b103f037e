"""SPPE on SIR: the fast training preset (one privatised copy per step, patience 10) against the
fast preset before it (all M copies per step, patience 5), side by side, against an exact reference.

Problem: the synthetic SIR release of ``examples/private_data/sir_reference.py`` (K = 10^4,
ε = 10, θ* = (log β, log γ) = (-0.5, -3)); SPPE with 2 rounds of 1000 simulations, M = 8, the
default NSF. Reference: mechanism-density importance sampling (exact up to Monte Carlo error;
10 000 θ-draws × 100 inner simulations, seed 11), or a saved ImportanceResult (``--reference``).
Accuracy: C2ST between 1000 SPPE draws and 1000 reference draws (0.5 = indistinguishable).
CPU time (process time) is reported beside wall time because the machine is shared.

Usage: ``python benchmarks/neural_sir_training.py [--reference ref.npz]``; writes
``results/neural_sir_training.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import torch

from dpinfer.diagnostics import c2st
from dpinfer.inference.exact.importance_result import ImportanceResult
from dpinfer.inference.neural import SPPE

sys.path.insert(0, str(Path(__file__).parents[1] / "examples" / "private_data"))
from sir_reference import benchmark_reference, synthetic_release  # noqa: E402

SETTINGS = {
    "fast (one copy, patience 10)": None,
    "before (all copies, patience 5)": {"copies_per_step": None, "patience": 5},
}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reference", default=None, help="a saved ImportanceResult (.npz) for this release")
    p.add_argument("--seeds", default="0,1")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    model, obs = synthetic_release(10_000)
    if args.reference:
        ref_res = ImportanceResult.load(args.reference)
    else:
        ref_res = benchmark_reference(model, obs)
    ref = ref_res.sample(1000, seed=5)
    rows: list[dict[str, Any]] = []
    for seed in (int(s) for s in args.seeds.split(",")):
        for label, training in SETTINGS.items():
            c, t = time.process_time(), time.perf_counter()
            post = SPPE(
                model, rounds=2, simulations_per_round=1000, seed=seed, training=training, proposal="apt"
            ).fit(obs)
            d = post.sample(1000, seed=1)
            row = {
                "seed": seed, "label": label, "cpu_time": time.process_time() - c,
                "wall_time": time.perf_counter() - t, "epochs": [r.epochs for r in post.rounds],
                "best_validation_loss": [r.best_validation_loss for r in post.rounds],
                "mean": d.mean(0).tolist(), "sd": d.std(0).tolist(), "c2st": float(c2st(d, ref)),
            }
            rows.append(row)
            print(f"seed {seed} {label:32s} cpu {row['cpu_time']:6.1f} s  C2ST {row['c2st']:.3f}  "
                  f"epochs {row['epochs']}", flush=True)
    out = {
        "reference": {
            "ess": float(ref_res.ess), "mean": ref_res.mean().tolist(), "sd": ref_res.sd().tolist()
        },
        "rows": rows, "machine": platform.platform(), "torch": torch.__version__, "torch_threads": 1,
        "device": "cpu",
    }
    path = Path(__file__).parent / "results" / "neural_sir_training.json"
    path.write_text(json.dumps(out, indent=2, default=float))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
