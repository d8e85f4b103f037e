"""Linear regression from privatised sufficient statistics, ε ∈ {10, 1, 0.1} (Xiong et al. 2025, Tables 2-4).

For each ε: DA-MCMC (Ju et al. 2022, the likelihood-based reference), SMC-ABC, the naive plug-in
posterior and the confidential posterior; posterior means and 95% credible intervals are written
to ``linreg_intervals.csv`` beside the paper's published values, and plotted to
``linreg_intervals.png``.

By default the observed statistics are dpinfer's own synthetic releases (shipped data, replace-one
sensitivity 15/n). To reproduce the paper's inputs exactly, pass the CSV of the authors' observed
statistics (``xiong_observed_private_stats.csv``, not shipped: it carries no licence) with
``--paper-observed PATH``; the sensitivity is then the papers' 13/n.

    python examples/private_data/linreg.py --out out/private_data
    python examples/private_data/linreg.py --paper-observed ../shared/data/xiong_observed_private_stats.csv
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np

from dpinfer.datasets.private_data import load_linreg
from dpinfer.inference.exact.baselines import da_mcmc_linreg
from dpinfer.inference.smc.schedule import QuantileSchedule
from dpinfer.inference.smc.smc_abc import smc_abc
from dpinfer.models import LinearRegression

EPSILONS = (10.0, 1.0, 0.1)
NAMES = ("beta0", "beta1", "beta2")

# Xiong et al. (2025), Tables 2-4: mean (2.5 %, 97.5 %) per coefficient; None = "-" in the paper.
PAPER = {
    10.0: {
        "confidential": [(-2.15, -2.68, -1.61), (-2.79, -3.08, -2.50), (-0.83, -1.08, -0.58)],
        "naive": [(-4.63, -5.04, -4.22), (-6.23, -6.57, -5.90), (-5.10, -5.40, -4.79)],
        "DA-MCMC": [(-0.62, -2.50, 0.99), (-2.72, -3.74, -0.96), (0.54, -1.06, 2.46)],
        "SMC-ABC": [(-0.59, -2.28, 0.93), (-2.44, -3.67, -0.38), (0.85, -0.88, 2.77)],
    },
    1.0: {
        "confidential": [(-2.15, -2.68, -1.61), (-2.79, -3.08, -2.50), (-0.83, -1.08, -0.58)],
        "naive": None,
        "DA-MCMC": [(-1.00, -2.75, 0.85), (-0.96, -2.66, 0.89), (1.23, -0.76, 2.88)],
        "SMC-ABC": [(-0.80, -2.74, 1.17), (-0.83, -2.64, 1.23), (0.90, -1.00, 2.58)],
    },
    0.1: {
        "confidential": [(-2.15, -2.68, -1.61), (-2.79, -3.08, -2.50), (-0.83, -1.08, -0.58)],
        "naive": None,
        "DA-MCMC": [(-0.12, -1.98, 1.77), (-0.13, -2.13, 1.88), (0.13, -1.91, 2.12)],
        "SMC-ABC": [(-0.09, -1.97, 1.93), (-0.10, -2.09, 1.95), (0.11, -1.90, 2.22)],
    },
}


def read_paper_observed(path: str) -> tuple[np.ndarray, dict[float, np.ndarray]]:
    """Confidential and private linear-regression statistics from the authors' values (long CSV)."""
    conf = np.zeros(9)
    priv: dict[float, np.ndarray] = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["experiment"] != "linear_regression":
                continue
            i, v = int(row["stat_index"]), float(row["value"])
            if row["epsilon"] == "inf":
                conf[i] = v
            else:
                priv.setdefault(float(row["epsilon"]), np.zeros(9))[i] = v
    return conf, priv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/private_data")
    ap.add_argument("--paper-observed", help="CSV of the authors' observed statistics (not shipped)")
    ap.add_argument("--particles", type=int, default=1000)
    ap.add_argument("--max-simulations", type=int, default=1_000_000, help="SMC-ABC budget per epsilon")
    ap.add_argument("--mcmc-samples", type=int, default=4000)
    ap.add_argument("--backend", default="processes")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    if args.paper_observed:
        conf_s, observed = read_paper_observed(args.paper_observed)
        sensitivity, x_mean, source = "paper", (0.9, -1.17), "Xiong et al. observed statistics (13/n)"
    else:
        d = load_linreg()
        conf_s, observed = d.confidential, d.released
        sensitivity, x_mean, source = "replace-one", (0.90014, -1.17335), "dpinfer synthetic release (15/n)"

    rows = []
    for eps in EPSILONS:
        model = LinearRegression(epsilon=eps, sensitivity=sensitivity, x_mean=x_mean)
        s_dp = observed[eps]
        t0 = time.perf_counter()
        da = da_mcmc_linreg(model, s_dp, n_samples=args.mcmc_samples, burn_in=2000, thin=10, seed=args.seed)
        t_da = time.perf_counter() - t0
        t0 = time.perf_counter()
        smc = smc_abc(
            model,
            s_dp,
            n_particles=args.particles,
            schedule=QuantileSchedule(alpha=0.5, max_populations=25),
            backend=args.backend,
            seed=args.seed,
            batch_size=5000,
            max_simulations=args.max_simulations,
        )
        t_smc = time.perf_counter() - t0
        naive = model.naive_posterior(s_dp)
        conf = model.conjugate_posterior(conf_s)
        results = {
            "confidential": (conf.mean, conf.interval(), "exact (conjugate)"),
            "naive": (naive.mean, naive.interval(), "" if naive.valid else naive.reason),
            "DA-MCMC": (
                da.mean(),
                da.interval(),
                f"{args.mcmc_samples} draws, min ESS {da.ess().min():.0f}, {t_da:.1f} s",
            ),
            "SMC-ABC": (
                smc.mean(),
                smc.interval(),
                f"{smc.n_simulations} sims, tol {smc.tolerance:.3f}, ESS {smc.ess:.0f}, {t_smc:.1f} s"
                + ("" if smc.complete else " (budget reached)"),
            ),
        }
        for method, (mean, ci, note) in results.items():
            paper = PAPER[eps][method]
            for i, name in enumerate(NAMES):
                p = paper[i] if paper is not None else (np.nan, np.nan, np.nan)
                rows.append([eps, method, name, mean[i], ci[i][0], ci[i][1], *p, note if i == 0 else ""])
        print(
            f"eps={eps:g}: "
            + "; ".join(
                f"{m}: " + ", ".join(f"{r[0][i]:.2f} ({r[1][i][0]:.2f}, {r[1][i][1]:.2f})" for i in range(3))
                for m, r in results.items()
            )
        )

    path = out / "linreg_intervals.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "epsilon",
                "method",
                "param",
                "mean",
                "lo95",
                "hi95",
                "paper_mean",
                "paper_lo95",
                "paper_hi95",
                "note",
            ]
        )
        for r in rows:
            w.writerow([f"{v:.4g}" if isinstance(v, float) else v for v in r])
    _plot(rows, out / "linreg_intervals.png", source)
    print(f"observed statistics: {source}\nwrote {path} and {out / 'linreg_intervals.png'}")


def _plot(rows: list[list], path: Path, source: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = ["confidential", "naive", "DA-MCMC", "SMC-ABC"]
    fig, axes = plt.subplots(len(EPSILONS), 3, figsize=(12, 8), sharex="col")
    for a, eps in enumerate(EPSILONS):
        for b, name in enumerate(NAMES):
            ax = axes[a, b]
            for j, m in enumerate(methods):
                r = next(r for r in rows if r[0] == eps and r[1] == m and r[2] == name)
                for off, (mean, lo, hi), style in ((-0.15, r[3:6], "o"), (0.15, r[6:9], "s")):
                    if np.isfinite(mean):
                        ax.errorbar(
                            mean,
                            j + off,
                            xerr=[[mean - lo], [hi - mean]],
                            fmt=style,
                            capsize=2,
                            color="C0" if style == "o" else "C1",
                        )
            ax.set_yticks(range(len(methods)))
            ax.set_yticklabels(methods if b == 0 else [])
            ax.set_title(f"{name}, eps={eps:g}")
    fig.suptitle(f"95% intervals: ours (circles, {source}) vs paper Tables 2-4 (squares)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
