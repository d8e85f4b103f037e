"""Per-round metrics of SPPE and SPLE (Xiong et al. 2025, Figs. 9, 13-14) and flow depth (Fig. 15).

After every round the posterior is compared with a likelihood-based reference: C2ST (1000 draws
against 1000 reference draws; 0.5 = indistinguishable), the two-sample KS statistic of each
marginal (:func:`dpinfer.inference.exact.ks.weighted_ks_marginals`; the paper's Figs. 3 and 12),
the error of the posterior mean in reference sds and the relative error of the posterior sd (both
averaged over the parameters). The compute time is the rounds' simulation + training time
(``RoundInfo``), without the metrics.

* Linear regression, ε = 1 (dpinfer's shipped release, replace-one sensitivity 15/n), reference
  DA-MCMC (4000 draws): SPPE and SPLE with 5 and with 8 spline transforms (the paper's Fig. 15
  uses 8, `flow="paper"`; dpinfer's default and the earlier reproductions use 5).
* Naive Bayes, ε = 1 (shipped release), reference the exact mechanism-density importance sampler:
  SPPE and SPLE with 8 transforms.

Budget per fit (small, for a shared 2-core machine): 4 rounds of 500 simulations, M = 4 RQMC
copies, at most 200 epochs per round, seed 0; one run each. A second reference run (another seed)
against the first gives the metrics' Monte Carlo floor (rows with round 0). Writes
``results/neural_rounds_depth.csv`` (one row per round, appended as each fit ends).

    python examples/private_data/neural_rounds_depth.py
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np
import torch

from dpinfer.datasets.private_data import load_linreg, load_naive_bayes_synthetic
from dpinfer.diagnostics import c2st
from dpinfer.inference import mechanism_importance_sampling
from dpinfer.inference.exact.baselines import da_mcmc_linreg
from dpinfer.inference.exact.ks import ks_critical, weighted_ks_marginals
from dpinfer.inference.neural import SPLE, SPPE, NeuralRunOptions
from dpinfer.models import LinearRegression, NaiveBayes

HERE = Path(__file__).parent
FIELDS = [
    "problem", "method", "transforms", "round", "simulations", "compute_s", "epochs", "c2st",
    "ks_max", "ks_mean", "ks_critical_5pct", "mean_err_sd", "sd_rel_err",
]


def metrics(draws: np.ndarray, ref: np.ndarray) -> dict[str, float]:
    ks = weighted_ks_marginals(draws, ref)
    m, s = ref.mean(0), ref.std(0)
    return {
        "c2st": round(float(c2st(draws, ref)), 3),
        "ks_max": round(float(ks.max()), 3),
        "ks_mean": round(float(ks.mean()), 3),
        "ks_critical_5pct": round(float(ks_critical(len(draws), len(ref))), 3),
        "mean_err_sd": round(float(np.mean(np.abs(draws.mean(0) - m) / s)), 3),
        "sd_rel_err": round(float(np.mean(np.abs(draws.std(0) / s - 1.0))), 3),
    }


def write(rows, out_csv):
    new = not out_csv.exists()
    with open(out_csv, "a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        if new:
            w.writeheader()
        w.writerows(rows)


def floor(problem, name, draws, ref, out_csv):
    """The Monte Carlo floor of the metrics: a second reference run (another seed) against the first."""
    row = {"problem": problem, "method": name, "transforms": 0, "round": 0, "simulations": 0,
           "compute_s": 0.0, "epochs": 0, **metrics(draws, ref)}
    print(row, flush=True)
    write([row], out_csv)


def run(problem, model, obs, ref, method, transforms, args, out_csv):
    rows: list[dict] = []
    compute = [0.0]

    def callback(info, posterior):
        compute[0] += info.simulation_time + info.training_time
        draws = posterior.sample(1000, seed=args.seed + 100 + info.round)
        row = {"problem": problem, "method": method, "transforms": transforms, "round": info.round + 1,
               "simulations": info.n_simulations_total, "compute_s": round(compute[0], 1),
               "epochs": info.epochs, **metrics(draws, ref)}
        print(row, flush=True)
        rows.append(row)

    cls, kw = (SPPE, {}) if method == "SPPE" else (SPLE, {})
    cls(model, flow={"transforms": transforms}, rounds=args.rounds, simulations_per_round=args.simulations,
        rqmc_points=args.rqmc_points, training={"max_epochs": args.max_epochs}, seed=args.seed,
        run=NeuralRunOptions(callback=callback), **kw).fit(obs)
    write(rows, out_csv)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--simulations", type=int, default=500)
    ap.add_argument("--rqmc-points", type=int, default=4)
    ap.add_argument("--max-epochs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--problems", default="linreg,naive-bayes")
    ap.add_argument("--methods", default="SPPE,SPLE", help='comma-separated; "none" for the floor only')
    ap.add_argument("--no-floor", dest="floor", action="store_false",
                    help="skip the second reference run (the metrics' Monte Carlo floor)")
    ap.add_argument("--transforms", default="5,8", help="linear-regression depths to compare")
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    out_csv = out / "neural_rounds_depth.csv"
    rng = np.random.default_rng(0)
    problems = args.problems.split(",")
    if "linreg" in problems:
        data = load_linreg()
        model = LinearRegression(epsilon=1.0, sensitivity="replace-one", x_mean=(0.90014, -1.17335))
        obs = data.observed(1.0)
        t0 = time.perf_counter()
        da = da_mcmc_linreg(model, obs, n_samples=4000, burn_in=2000, thin=5, seed=args.seed)
        print(f"DA-MCMC: {time.perf_counter() - t0:.0f} s, min ESS {da.ess().min():.0f}", flush=True)
        ref = da.samples[rng.choice(len(da.samples), 1000, replace=False)]
        if args.floor:
            da2 = da_mcmc_linreg(model, obs, n_samples=4000, burn_in=2000, thin=5, seed=args.seed + 1)
            floor("linreg", "DA-MCMC, 2nd seed (floor)",
                  da2.samples[rng.choice(len(da2.samples), 1000, replace=False)], ref, out_csv)
        for transforms in (int(t) for t in args.transforms.split(",")):
            for method in [m for m in args.methods.split(",") if m in ("SPPE", "SPLE")]:
                run("linreg", model, obs, ref, method, transforms, args, out_csv)
    if "naive-bayes" in problems:
        nb = NaiveBayes(epsilon=1.0)
        obs = load_naive_bayes_synthetic().observed(1.0)
        r = mechanism_importance_sampling(nb, obs, n_theta=50_000, n_inner=20, pilot_theta=10_000,
                                          pilot_inner=10, seed=args.seed)
        print(f"exact IS: ESS {r.ess:.0f}, Pareto k {r.khat:.2f}", flush=True)
        ref = r.sample(1000, seed=args.seed)
        if args.floor:
            r2 = mechanism_importance_sampling(nb, obs, n_theta=50_000, n_inner=20, pilot_theta=10_000,
                                               pilot_inner=10, seed=args.seed + 1)
            floor("naive-bayes", "exact IS, 2nd seed (floor)", r2.sample(1000, seed=args.seed + 1), ref,
                  out_csv)
        for method in [m for m in args.methods.split(",") if m in ("SPPE", "SPLE")]:
            run("naive-bayes", nb, obs, ref, method, 8, args, out_csv)


if __name__ == "__main__":
    main()
