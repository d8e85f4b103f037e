"""Private SMC-ABC against ABCDP at the same total privacy (Park et al. 2021, §7).

Private SMC-ABC (``dpinfer.release.private_smc.private_smc_abc``): K populations, each one Laplace
sparse vector releasing c particles from a kernel-mixture proposal built on the previous release;
the K events compose under the PLD accountant to (ε, δ = 1e-6). ABCDP: one sparse vector over
prior draws at the final threshold, pure ε. Reported: error of the (weighted) posterior mean,
simulations used, ESS.

Gaussian-weights private SMC (``gaussian_weights_smc_abc``): K populations of M proposals whose
distances are released through the Gaussian mechanism (L2 sensitivity √M·Δρ), K-fold composition
at (ε, δ = 1e-6); toy M = 500, K = 3; TB M = 100, K = 2.

Toy: mixture of uniforms, N = 5000 points (the paper's set-up: RFF-MMD D = 100, bandwidth 0.6),
ε in {1, 10}; ABCDP c = 100, ε_abc = 0.05, T = 10 000; SMC schedule 0.2, 0.1, 0.05 with c = 100
and at most 10 000 draws per population. TB: n = 100 data sets (Δρ = 2), ε = 10; ABCDP c = 20,
ε_abc = 100, T = 1000; SMC schedule 150, 100 with c = 20 and at most 500 draws per population.
Writes compare.csv to --out.
"""

from __future__ import annotations

import argparse
import csv
import time
import warnings
from pathlib import Path

import numpy as np

from dpinfer.privacy import PrivacyWarning
from dpinfer.release import SimulatedDraws, abcdp
from dpinfer.release.private_smc import private_smc_abc
from dpinfer.release.private_smc_gauss import gaussian_weights_smc_abc


def toy():
    from dpinfer.distances import RFFMMD
    from dpinfer.models.shipped.mixture_uniform import MixtureOfUniforms

    model = MixtureOfUniforms(n_points=5000)
    return dict(name="toy", model=model, observed=model.observed(seed=1), dist=RFFMMD(0.6, 100, seed=0),
                truth=model.theta_true, eps_list=(1.0, 10.0), c_abcdp=100, eps_abc=0.05, T=10_000,
                schedule=[0.2, 0.1, 0.05], c_smc=100, max_draws=10_000, batch=256, gauss_m=500, gauss_k=3)


def tb():
    from dpinfer.models.shipped.tuberculosis import Tuberculosis

    model = Tuberculosis(n_datasets=100, parallel=True)
    return dict(name="tb", model=model, observed=model.observed(seed=10_000), dist=model.distance(200.0),
                truth=model.theta_true, eps_list=(10.0,), c_abcdp=20, eps_abc=100.0, T=1000,
                schedule=[150.0, 100.0], c_smc=20, max_draws=500, batch=32, gauss_m=100, gauss_k=2)


def run(p, repeats, methods):
    rows = []
    m = p["model"]
    for eps in p["eps_list"]:
        for rep in range(repeats):
            if "gauss-smc" in methods:
                t0 = time.perf_counter()
                g = gaussian_weights_smc_abc(
                    p["observed"], m, p["dist"], n_particles=p["gauss_m"], n_populations=p["gauss_k"],
                    epsilon=eps, delta=1e-6, seed=300 + rep,
                )
                rows.append(dict(problem=p["name"], method="gauss-smc", epsilon=eps, repeat=rep,
                                 error=float(np.mean(np.abs(g.mean() - p["truth"]))),
                                 simulations=g.n_simulations, accepted=p["gauss_m"], ess=float(g.ess),
                                 seconds=time.perf_counter() - t0))
                print(rows[-1], flush=True)
            if methods == ["gauss-smc"]:
                continue
            t0 = time.perf_counter()
            draws = SimulatedDraws(m.prior_sample, m.simulate, p["T"], seed=100 + rep, batch_size=p["batch"])
            res = abcdp(
                p["observed"], draws, p["dist"], c=p["c_abcdp"], epsilon_total=eps, epsilon_abc=p["eps_abc"],
            )
            rows.append(dict(problem=p["name"], method="abcdp", epsilon=eps, repeat=rep,
                             error=float(np.mean(np.abs(res.posterior_mean - p["truth"]))),
                             simulations=res.n_draws, accepted=res.n_accepted, ess=float(res.n_accepted),
                             seconds=time.perf_counter() - t0))
            t0 = time.perf_counter()
            smc = private_smc_abc(
                p["observed"], m, p["dist"], epsilon_abc_schedule=p["schedule"], c=p["c_smc"], epsilon=eps,
                delta=1e-6, max_draws=p["max_draws"], batch_size=p["batch"], seed=200 + rep,
            )
            rows.append(dict(problem=p["name"], method="private-smc", epsilon=eps, repeat=rep,
                             error=float(np.mean(np.abs(smc.mean() - p["truth"]))),
                             simulations=smc.n_simulations, accepted=smc.populations[-1]["n_accepted"],
                             ess=float(smc.ess), seconds=time.perf_counter() - t0))
            print(rows[-2], rows[-1], sep="\n", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--problems", default="toy,tb")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--methods", default="abcdp,private-smc,gauss-smc",
                    help="gauss-smc alone, or all three (abcdp and private-smc run together)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "out"))
    ap.add_argument("--replot", action="store_true", help="only redraw compare.png from the CSVs in --out")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    makers = {"toy": toy, "tb": tb}
    for key in [] if args.replot else args.problems.split(","):
        with warnings.catch_warnings():  # an example: nothing is charged to a ledger
            warnings.simplefilter("ignore", PrivacyWarning)
            rows = run(makers[key](), args.repeats, args.methods.split(","))
        suffix = "_gauss" if args.methods == "gauss-smc" else ""
        with open(out / f"compare_{key}{suffix}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        for eps in sorted({r["epsilon"] for r in rows}):
            for meth in ("abcdp", "private-smc", "gauss-smc"):
                sel = [r for r in rows if r["epsilon"] == eps and r["method"] == meth]
                if not sel:
                    continue
                e = np.array([r["error"] for r in sel])
                s = np.array([r["simulations"] for r in sel])
                se = e.std(ddof=1) / np.sqrt(e.size)
                ess_m = np.mean([r["ess"] for r in sel])
                print(f"{key} eps={eps:g} {meth:12s} error {e.mean():.4f} ± {se:.4f}  "
                      f"simulations {s.mean():.0f}  ESS {ess_m:.0f}")
    plot(out)


def plot(out: Path) -> None:
    """Error against simulations, one point per run, from every compare_*.csv in ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = sorted(out.glob("compare_*.csv"))
    fig, axes = plt.subplots(1, len(files), figsize=(4.8 * len(files), 3.6), squeeze=False)
    for ax, f in zip(axes[0], files, strict=True):
        rows = list(csv.DictReader(f.open()))
        groups = sorted({(r["method"], r["epsilon"]) for r in rows})
        for (meth, eps), marker in zip(groups, "osdv^<>", strict=False):
            sel = [r for r in rows if r["method"] == meth and r["epsilon"] == eps and r["error"] != "nan"]
            ax.plot([float(r["simulations"]) for r in sel], [float(r["error"]) for r in sel], marker,
                    label=f"{meth}, ε={float(eps):g}", alpha=0.7)
        ax.set_xscale("log")
        ax.set_xlabel("simulations")
        ax.set_ylabel("posterior-mean error")
        ax.set_title(f.stem.replace("compare_", ""))
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "compare.png", dpi=120)


if __name__ == "__main__":
    main()
