"""Per-round profile of SPPE / SPLE on the issue-14 Gaussian-mean release: epochs, times, accuracy.

θ ~ N(0, 1), n = 100 records N(θ, 1) clamped to [-2, 2], mean released by Laplace at ε = 1,
s_dp = 0.5; exact posterior by quadrature. Prints, for every round, the epochs to the early stop,
the simulation and training time, and the posterior mean error and sd ratio (4000 draws) and the
interquartile-range ratio (tail-insensitive) against the exact posterior. One torch thread.

Usage: ``python benchmarks/neural_rounds.py sppe --rounds 3 [--training paper] [--rqmc-points 8]``
(to profile the code before issue 14, run it with ``PYTHONPATH`` pointing at that source tree and
no ``--training``).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import torch

from dpinfer.inference.neural import SPLE, SPPE
from dpinfer.models import GaussianMean


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("method", choices=("sppe", "sple"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--simulations", type=int, default=1000)
    p.add_argument("--rqmc-points", type=int, default=8)
    p.add_argument("--training", default=None)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(1)
    model = GaussianMean(n=100, clamp=(-2.0, 2.0), epsilon=1.0)
    obs = [0.5]
    exact = model.exact_posterior(obs)
    ref = exact.sample(20000, seed=1)[:, 0]
    ref_iqr = np.subtract(*np.quantile(ref, [0.75, 0.25]))

    def report(info: Any, post: Any) -> None:
        d = post.sample(4000, seed=7)[:, 0]
        iqr = np.subtract(*np.quantile(d, [0.75, 0.25]))
        print(
            f"round {info.round}: {info.epochs} epochs, simulation {info.simulation_time:.2f} s, "
            f"training {info.training_time:.2f} s, mean error {d.mean() - exact.mean:+.4f}, "
            f"sd ratio {d.std() / exact.sd:.3f}, IQR ratio {iqr / ref_iqr:.3f}",
            flush=True,
        )

    kw = {} if args.training is None else {"training": args.training}
    klass = SPPE if args.method == "sppe" else SPLE
    t0 = time.perf_counter()
    klass(model, rounds=args.rounds, simulations_per_round=args.simulations, rqmc_points=args.rqmc_points,
          seed=args.seed, callback=report, **kw).fit(obs)
    print(f"total {time.perf_counter() - t0:.1f} s (including the per-round evaluation draws)")


if __name__ == "__main__":
    main()
