"""Gaussian-noise ABCDP (Rényi DP) against pure-ε ABCDP at the same (ε, δ = 1e-6).

For each problem one public stream of T prior draws is simulated and its distances ρ_t to the
confidential data computed once; then, for each c in a grid, R independent private runs of each
sparse vector (Laplace: Algorithm 1, b = (c+1)Δρ/ε; Gaussian: σ1, σ2 from
``calibrate_gaussian_svt(ε, δ, c, k=T)``, one threshold for both) release c accepted θ, and the
error of their mean is recorded. The runs call the same engines as ``dpinfer.release.abcdp`` on the
same distances (one abcdp call per problem checks the wiring). Reported per problem:

* mean error (± standard error over the R runs) against c, both mechanisms;
* "c at equal error": for each Laplace c, the largest Gaussian c on the grid whose mean error is
  no larger, and the ratio;
* error at equal c.

Problems: the toy mixture of uniforms with N = 100 observed points (RFF-MMD, Δρ = 2/N, ε = 10,
ε_abc = 0.1), COVID-19 NL (N = 18, exact MMD, ε = 13, ε_abc = 0.05, error = RMSE of the
posterior-mean curve), tuberculosis (n = 100 data sets, Δρ = 2, ε = 1, ε_abc = 150, error = mean
|posterior mean − θ*|). Writes compare.csv and compare.png to --out.
"""

from __future__ import annotations

import argparse
import csv
import time
import warnings
from pathlib import Path

import numpy as np

from dpinfer.diagnostics import svt_noise_scale
from dpinfer.privacy import PrivacyRNG, PrivacyWarning, calibrate_gaussian_svt
from dpinfer.privacy.mechanisms import SparseVector
from dpinfer.privacy.mechanisms.svt import GaussianSparseVector
from dpinfer.release import ABCDPOptions, ArrayDraws, SimulatedDraws, abcdp

DELTA = 1e-6


def toy_problem(draws: int):
    from dpinfer.distances import RFFMMD
    from dpinfer.models.shipped.mixture_uniform import MixtureOfUniforms

    model = MixtureOfUniforms(n_points=100)
    observed = model.observed(seed=1)
    dist = RFFMMD(0.6, 100, seed=0)
    thetas, sims = SimulatedDraws(model.prior_sample, model.simulate, draws, seed=2,
                                  batch_size=512).materialize()
    truth = model.theta_true

    def error(theta_mean):
        return float(np.mean(np.abs(theta_mean - truth)))

    return dict(name="toy (N=100)", observed=observed, dist=dist, thetas=thetas, sims=sims,
                error=error, eps=10.0, eps_abc=0.1, error_label="mean |E[θ] − θ*|")


def covid_problem(draws: int):
    from dpinfer.datasets.abcdp_data import load_covid_nl
    from dpinfer.distances import ExactMMD, median_heuristic
    from dpinfer.models.shipped.covid import CovidPolynomial

    _, observed = load_covid_nl()
    model = CovidPolynomial()
    thetas, sims = SimulatedDraws(model.prior_sample, model.simulate, draws, seed=1,
                                  batch_size=4096).materialize()
    dist = ExactMMD(median_heuristic(sims[:500], seed=1))

    def error(theta_mean):
        return float(np.sqrt(np.mean((model.curve(theta_mean)[0] - observed) ** 2)))

    return dict(name="COVID (N=18)", observed=observed, dist=dist, thetas=thetas, sims=sims,
                error=error, eps=13.0, eps_abc=0.05, error_label="RMSE of mean curve (cases)")


def tb_problem(draws: int):
    from dpinfer.models.shipped.tuberculosis import Tuberculosis

    model = Tuberculosis(n_datasets=100, parallel=True)
    observed = model.observed(seed=10_000)
    dist = model.distance(200.0)
    thetas, sims = SimulatedDraws(model.prior_sample, model.simulate, draws, seed=0,
                                  batch_size=32).materialize()
    truth = model.theta_true

    def error(theta_mean):
        return float(np.mean(np.abs(theta_mean - truth)))

    return dict(name="TB (n=100)", observed=observed, dist=dist, thetas=thetas, sims=sims,
                error=error, eps=1.0, eps_abc=150.0, error_label="mean |E[θ] − θ*|")


def engine(kind: str, c: int, eps: float, delta_rho: float, eps_abc: float, k: int):
    if kind == "laplace":
        return SparseVector(c, svt_noise_scale(c, eps, delta_rho), eps_abc, False, PrivacyRNG())
    ev = calibrate_gaussian_svt(eps, DELTA, c, k)
    return GaussianSparseVector.from_event(ev, delta_rho, eps_abc, PrivacyRNG())  # at most k queries


def run_problem(p, cs, repeats):
    dist = p["dist"]
    prep = dist.prepare(p["observed"])
    delta_rho = float(dist.sensitivity(len(p["observed"])))
    rho = np.concatenate([dist.batch(prep, p["sims"][i:i + 256]) for i in range(0, len(p["sims"]), 256)])
    # wiring check: the public entry point releases c draws of this stream under the same event
    with warnings.catch_warnings():  # an example: nothing is charged to a ledger
        warnings.simplefilter("ignore", PrivacyWarning)
        res = abcdp(
            p["observed"], ArrayDraws(p["thetas"], p["sims"], 256), dist, c=cs[0], epsilon_total=p["eps"],
            epsilon_abc=p["eps_abc"], delta=DELTA, options=ABCDPOptions(noise="gaussian"),
        )
    assert res.n_accepted == cs[0] and res.privacy.epsilon <= p["eps"] + 1e-9
    rows = []
    T = rho.size
    for kind in ("laplace", "gaussian"):
        for c in cs:
            errs, used = [], []
            for _ in range(repeats):
                eng = engine(kind, c, p["eps"], delta_rho, p["eps_abc"], T)
                ans = eng.process(rho)
                idx = np.flatnonzero(ans)
                errs.append(p["error"](p["thetas"][idx].mean(0)) if idx.size else np.nan)
                used.append(eng.n_queries)
            errs = np.asarray(errs)
            rows.append(dict(
                problem=p["name"], noise=kind, c=c, eps=p["eps"], delta=DELTA if kind == "gaussian" else 0,
                T=T, delta_rho=delta_rho, noise_scale=float(getattr(eng, "sigma_query", 2 * eng.b)),
                mean_error=float(np.nanmean(errs)),
                se_error=float(np.nanstd(errs) / np.sqrt(np.isfinite(errs).sum())),
                frac_complete=float(np.mean(np.isfinite(errs))), mean_draws=float(np.mean(used))))
    return rows


def summarise(rows, name):
    lap = {r["c"]: r for r in rows if r["noise"] == "laplace"}
    gau = {r["c"]: r for r in rows if r["noise"] == "gaussian"}
    lines = [f"{name}: c | Laplace error | Gaussian error | Gaussian c at <= Laplace error (ratio)"]
    for c, r in sorted(lap.items()):
        ok = [cg for cg, g in gau.items() if g["mean_error"] <= r["mean_error"]]
        best = max(ok) if ok else None
        ratio = f"{best} ({best / c:.2g}x)" if best else "none"
        lines.append(f"  {c:5d} | {r['mean_error']:.4g} ± {r['se_error']:.2g} | "
                     f"{gau[c]['mean_error']:.4g} ± {gau[c]['se_error']:.2g} | {ratio}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--problems", default="toy,covid,tb")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--cs", default="1,2,5,10,20,50,100")
    ap.add_argument("--out", default=str(Path(__file__).parent / "out"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    makers = {"toy": (toy_problem, 10_000), "covid": (covid_problem, 50_000), "tb": (tb_problem, 1000)}
    cs = [int(x) for x in args.cs.split(",")]
    all_rows = []
    for key in args.problems.split(","):
        make, draws = makers[key]
        t0 = time.perf_counter()
        p = make(draws)
        rows = run_problem(p, [c for c in cs if c <= draws], args.repeats)
        all_rows += rows
        print(summarise(rows, p["name"]), f"\n  ({time.perf_counter() - t0:.0f} s)", flush=True)
        with open(out / f"compare_{key}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    plot(all_rows, out / "compare.png")


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["problem"] for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for kind, style in (("laplace", "o-"), ("gaussian", "s--")):
            sel = [r for r in rows if r["problem"] == name and r["noise"] == kind]
            ax.errorbar([r["c"] for r in sel], [r["mean_error"] for r in sel],
                        [r["se_error"] for r in sel], fmt=style, label=kind, capsize=2)
        ax.set_xscale("log")
        ax.set_xlabel("c (released samples)")
        ax.set_ylabel("posterior-mean error")
        ax.set_title(f"{name}, ε = {sel[0]['eps']:g}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
