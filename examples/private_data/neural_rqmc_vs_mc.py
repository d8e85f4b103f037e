"""RQMC vs Monte Carlo: RMSE of the nested loss estimate as M grows (Xiong et al. 2025, App. E, Fig. 7).

For a *fixed* network (a likelihood flow trained for one short SPLE round, then frozen) and fixed
simulations ``(θ_i, s_i)``, i = 1..N, the nested PLE loss (eq. 5, 10-11)

    L̂_M = -(1/N) Σ_i (1/M) Σ_m log q(G(s_i, u_{i,m}) | θ_i)

is computed with M = 1, 2, 4, ..., 2^k privatised copies per simulation, either from independently
scrambled Sobol nets (RQMC) or i.i.d. uniforms (MC), ``--reps`` times each. The RMSE against a
high-precision value (RQMC with the largest M x 8, averaged over replicates) is reported with the
fitted log-log slope: MC should give -1/2; RQMC is steeper for smooth integrands (the Laplace and
binomial inverse CDFs are only piecewise smooth, so the gain is smaller than the ideal -1).

Models: the Gaussian mean (1-d Laplace release, ε = 0.5), linear regression (9-d Laplace release,
ε = 1) and SIR at ε = 10 (10-d binomial release; population reduced to 10^4 by default).

    python examples/private_data/neural_rqmc_vs_mc.py --out examples/private_data/out
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np
import torch

from dpinfer.inference.neural import SPLE
from dpinfer.inference.neural.rqmc import point_sets
from dpinfer.models import SIR, GaussianMean, LinearRegression


def fixed_network(model, seed):
    """A likelihood flow trained for one short round (then frozen)."""
    est = SPLE(
        model,
        flow={"transforms": 3, "hidden": 32, "blocks": 1, "bins": 8},
        rounds=1,
        simulations_per_round=300,
        rqmc_points=1,
        training={"max_epochs": 30, "patience": 5},
        seed=seed,
        warmup=10,
        posterior_draws=20,
    )
    return est.fit(model.simulate(model.prior.sample(1, np.random.default_rng(seed)), seed)[0]).flow


def loss_estimates(model, flow, theta, s, M, reps, qmc, seed):
    out = np.empty(reps)
    th = torch.as_tensor(theta, dtype=torch.float32)
    for r in range(reps):
        u = point_sets(s.shape[0], M, model.noise_dim, np.random.default_rng([seed, M, r, int(qmc)]), qmc)
        x = torch.as_tensor(model.mechanism.G(s[:, None, :], u), dtype=torch.float32)
        with torch.no_grad():
            lq = flow.log_prob(x, th[:, None, :].expand(-1, M, -1))
        out[r] = -float(lq.mean())
    return out


def run(name, model, args):
    t0 = time.perf_counter()
    flow = fixed_network(model, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    theta = model.prior.sample(args.n, rng)
    s = model.simulate_confidential(theta, rng)
    Ms = [2**k for k in range(args.max_log2 + 1)]
    ref = loss_estimates(
        model, flow, theta, s, Ms[-1] * 8, max(4, args.reps // 4), True, args.seed + 7
    ).mean()
    rows = []
    for qmc in (False, True):
        for M in Ms:
            est = loss_estimates(model, flow, theta, s, M, args.reps, qmc, args.seed)
            rmse = float(np.sqrt(np.mean((est - ref) ** 2)))
            rows.append(
                {
                    "model": name,
                    "estimator": "RQMC" if qmc else "MC",
                    "M": M,
                    "rmse": rmse,
                    "mean": float(est.mean()),
                    "reference": float(ref),
                }
            )
    for label in ("MC", "RQMC"):
        r = [x for x in rows if x["estimator"] == label]
        slope = np.polyfit(np.log([x["M"] for x in r]), np.log([x["rmse"] for x in r]), 1)[0]
        for x in r:
            x["slope"] = float(slope)
        print(
            f"{name:>16s} {label:>5s}: RMSE "
            + " ".join(f"{x['rmse']:.2e}" for x in r)
            + f"  slope {slope:.2f}"
        )
    print(f"  ({time.perf_counter() - t0:.1f} s)")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="examples/private_data/out")
    p.add_argument("--n", type=int, default=20, help="fixed simulations N")
    p.add_argument("--reps", type=int, default=40, help="replicates per M")
    p.add_argument("--max-log2", type=int, default=7, help="largest M = 2^max_log2")
    p.add_argument("--population", type=int, default=10_000, help="SIR population (paper 10^6)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    models = [
        ("gaussian-mean", GaussianMean(n=50, epsilon=0.5)),
        ("linear-regression", LinearRegression(epsilon=1.0)),
        ("sir", SIR(population=args.population, epsilon=10.0)),
    ]
    rows = []
    for name, model in models:
        rows += run(name, model, args)
    with open(out / "neural_rqmc_vs_mc.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        return
    fig, axes = plt.subplots(1, len(models), figsize=(4 * len(models), 3.3))
    for ax, (name, _) in zip(axes, models, strict=True):
        for label, style in (("MC", "o--"), ("RQMC", "s-")):
            r = [x for x in rows if x["model"] == name and x["estimator"] == label]
            ax.loglog(
                [x["M"] for x in r],
                [x["rmse"] for x in r],
                style,
                base=2,
                label=f"{label} (slope {r[0]['slope']:.2f})",
            )
        ax.set_title(name)
        ax.set_xlabel("M (privatised copies per simulation)")
        ax.legend()
    axes[0].set_ylabel("RMSE of the nested loss")
    fig.tight_layout()
    fig.savefig(out / "neural_rqmc_vs_mc.png", dpi=100)
    print(f"wrote {out / 'neural_rqmc_vs_mc.csv'} and .png")


if __name__ == "__main__":
    main()
