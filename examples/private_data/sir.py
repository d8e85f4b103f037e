"""SIR epidemic from a privatised infection curve at ε ∈ {10, 1, 0.1} with SMC-ABC (Xiong et al. 2025, §4.1).

The observed statistics are dpinfer's synthetic releases (one exact Gillespie epidemic with
K = 10^6 at θ = (log β, log γ) = (-0.5, -3), R0 = 12.18, released by the Prop. 4 binomial
mechanism with N = 1000), or the authors' values with ``--paper-observed PATH`` (not shipped).
Writes ``sir_posterior.csv`` (posterior mean and 95% interval of log β, log γ and R0 = β/γ per ε)
and ``sir_posterior.png``.

Defaults are small (100 particles, the authors' tolerance schedule 1.0·0.7^k down to 0.2; the
paper uses 2000 particles). At K = 10^6 one simulation is about 2·10^6 Gillespie events; with
200 particles a run took about 4-5 minutes per ε on a loaded 2-core machine.

    python examples/private_data/sir.py --out out/private_data
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from pathlib import Path

import numpy as np

from dpinfer.datasets.private_data import load_sir_synthetic
from dpinfer.inference.smc.smc_abc import smc_abc
from dpinfer.models import SIR
from dpinfer.results.weighted import weighted_quantile

EPSILONS = (10.0, 1.0, 0.1)


def read_paper_observed(path: str) -> dict[float, np.ndarray]:
    out: dict[float, np.ndarray] = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["experiment"] == "sir" and row["setting"] == "synthetic":
                out.setdefault(float(row["epsilon"]), np.zeros(10))[int(row["stat_index"])] = float(
                    row["value"]
                )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/private_data")
    ap.add_argument("--paper-observed", help="CSV of the authors' observed statistics (not shipped)")
    ap.add_argument("--particles", type=int, default=100)
    ap.add_argument("--population", type=int, default=1_000_000)
    ap.add_argument("--backend", default="serial", help="serial uses numba threads over each batch")
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument(
        "--simulator",
        default="exact",
        choices=("exact", "hybrid"),
        help="hybrid = exact + tau-leaping (approximate, ~35x faster; see sir_fast_simulator.py)",
    )
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.paper_observed:
        observed, source = read_paper_observed(args.paper_observed), "Xiong et al. observed statistics"
        truth = (-0.5, -3.0)
    else:
        d = load_sir_synthetic()
        observed, source, truth = d.released, "dpinfer synthetic release", d.truth

    rows, results = [], {}
    for eps in EPSILONS:
        model = SIR(population=args.population, epsilon=eps, simulator=args.simulator)
        t0 = time.perf_counter()
        res = smc_abc(
            model,
            observed[eps],
            n_particles=args.particles,
            schedule="paper",
            backend=args.backend,
            seed=args.seed,
            batch_size=args.batch_size,
        )
        wall = time.perf_counter() - t0
        r0 = np.exp(res.particles[:, 0] - res.particles[:, 1])
        ci = res.interval()
        r0_ci = weighted_quantile(r0, res.weights, [0.025, 0.975])
        results[eps] = res
        note = (
            f"{res.n_simulations} simulations, {len(res.populations)} populations, ESS {res.ess:.0f}, "
            f"{wall:.0f} s"
        )
        for i, name in enumerate(model.param_names):
            rows.append([eps, name, res.mean()[i], ci[i, 0], ci[i, 1], truth[i], note])
        rows.append(
            [eps, "R0", float(res.weights @ r0), r0_ci[0], r0_ci[1], math.exp(truth[0] - truth[1]), ""]
        )
        print(
            f"eps={eps:g}: log_beta {res.mean()[0]:.3f} ({ci[0, 0]:.3f}, {ci[0, 1]:.3f}), log_gamma "
            f"{res.mean()[1]:.3f} ({ci[1, 0]:.3f}, {ci[1, 1]:.3f}), R0 {float(res.weights @ r0):.2f} "
            f"({r0_ci[0]:.2f}, {r0_ci[1]:.2f}); {note}"
        )
    path = out / "sir_posterior.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["epsilon", "param", "mean", "lo95", "hi95", "truth", "note"])
        for r in rows:
            w.writerow([f"{v:.4g}" if isinstance(v, float) else v for v in r])
    _plot(results, truth, out / "sir_posterior.png", source)
    print(f"observed statistics: {source}\nwrote {path} and {out / 'sir_posterior.png'}")


def _plot(results: dict, truth: tuple, path: Path, source: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for k, (eps, res) in enumerate(results.items()):
        axes[0].scatter(
            res.particles[:, 0],
            res.particles[:, 1],
            s=4 + 400 * res.weights,
            alpha=0.4,
            color=f"C{k}",
            label=f"eps={eps:g}",
        )
        r0 = np.exp(res.particles[:, 0] - res.particles[:, 1])
        axes[1].hist(r0, weights=res.weights, bins=40, alpha=0.5, color=f"C{k}", label=f"eps={eps:g}")
    axes[0].plot(*truth, "k*", ms=12, label="truth")
    axes[0].set_xlabel("log beta")
    axes[0].set_ylabel("log gamma")
    axes[0].legend()
    axes[1].axvline(math.exp(truth[0] - truth[1]), color="k")
    axes[1].set_xlabel("R0 = beta/gamma")
    axes[1].legend()
    fig.suptitle(f"SIR, SMC-ABC posterior ({source})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
