"""ABCDP by one Gaussian release of the RFF mean embedding against Laplace ABCDP, equal (ε, δ).

``abcdp(..., release="embedding", delta=1e-6)`` (``dpinfer.release.embedding``) releases
μ̃ = μ(Y*) + N(0, σ² I_D) once (L2 sensitivity 2/N, analytic Gaussian calibration), then ABC on
μ̃ with the mechanism simulated in the simulator is post-processing: any number c of samples
from the same T simulations at no further cost. Here, per private run, a fresh μ̃ and fresh
simulated noise, and the c simulations nearest to μ̃ are kept (ε_abc = the c-th smallest noisy
distance: a function of the release and public draws only). Laplace ABCDP (Algorithm 1,
b = (c+1)Δρ/ε, pure ε) runs on the same T simulations with the distance and ε_abc of
``compare.py``. The embedding uses paired RFF with D features (default 20) at the bandwidth of
the problem's distance; TB's 8 summaries are first divided by their prior-predictive sd (public).

Reported per problem: mean error (± s.e.) of the posterior mean over R runs at c in the grid,
and for each Laplace c the largest embedding c on the grid with error no larger (and the ratio).
Writes embedding_{problem}.csv and embedding.png to --out.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from compare import DELTA, covid_problem, engine, tb_problem, toy_problem  # noqa: E402

from dpinfer.distances import RFFMMD, median_heuristic  # noqa: E402
from dpinfer.privacy import PrivacyRNG, PrivacyWarning, composed_gaussian_multiplier  # noqa: E402
from dpinfer.release import ABCDPOptions, ArrayDraws, abcdp
from dpinfer.release.embedding import embed_batch, embedding_sensitivity


def embedding_setup(p, n_features):
    """(scaled observed, scaled sims, RFFMMD) for the problem."""
    obs, sims = p["observed"], p["sims"]
    if obs.ndim == 1:
        obs = obs[:, None]
    if sims.ndim == 2:
        sims = sims[..., None]
    if p["name"].startswith("TB"):
        scale = np.nanstd(sims.reshape(-1, sims.shape[-1]), axis=0) + 1e-12
        obs, sims = obs / scale, sims / scale
        bw = median_heuristic(sims[:200], seed=0)
    else:
        bw = p["dist"].bandwidth
    return obs, sims, RFFMMD(bw, n_features, seed=0)


def run_problem(p, cs_lap, cs_emb, repeats, n_features):
    dist = p["dist"]
    prep = dist.prepare(p["observed"])
    delta_rho = float(dist.sensitivity(len(p["observed"])))
    rho = np.concatenate([dist.batch(prep, p["sims"][i:i + 256]) for i in range(0, len(p["sims"]), 256)])
    T = rho.size
    rows = []
    for c in cs_lap:
        errs = []
        for _ in range(repeats):
            idx = np.flatnonzero(engine("laplace", c, p["eps"], delta_rho, p["eps_abc"], T).process(rho))
            errs.append(p["error"](p["thetas"][idx].mean(0)) if idx.size else np.nan)
        rows.append(row(p, "laplace", c, errs))
    obs, sims, rff = embedding_setup(p, n_features)
    with warnings.catch_warnings():  # wiring check of the public entry point (no ledger)
        warnings.simplefilter("ignore", PrivacyWarning)
        res = abcdp(
            obs, ArrayDraws(p["thetas"], sims, 256), rff, c=1, epsilon_total=p["eps"], epsilon_abc=1e9,
            delta=DELTA, options=ABCDPOptions(release="embedding"),
        )
    assert res.n_accepted == 1 and res.privacy.epsilon <= p["eps"] + 1e-9
    pr = rff.prepare(obs)
    emb = np.concatenate([embed_batch(rff, pr.W, sims[i:i + 1024], pr.d) for i in range(0, T, 1024)])
    sigma = composed_gaussian_multiplier(p["eps"], DELTA, 1, "pld") * embedding_sensitivity(pr.n)
    gen, rng = PrivacyRNG(), np.random.default_rng(0)
    errs = {c: [] for c in cs_emb}
    for _ in range(repeats):
        released = pr.mu + gen.normal(sigma, pr.mu.size)
        order = np.argsort(np.linalg.norm(emb + sigma * rng.standard_normal(emb.shape) - released, axis=1))
        for c in cs_emb:
            errs[c].append(p["error"](p["thetas"][order[:c]].mean(0)))
    rows += [row(p, f"embedding D={n_features}", c, errs[c], sigma) for c in cs_emb]
    return rows


def row(p, kind, c, errs, sigma=float("nan")):
    errs = np.asarray(errs, dtype=np.float64)
    ok = np.isfinite(errs)
    return dict(problem=p["name"], method=kind, c=c, eps=p["eps"], delta=DELTA, T=len(p["thetas"]),
                sigma=sigma, mean_error=float(np.nanmean(errs)) if ok.any() else float("nan"),
                se_error=float(np.nanstd(errs) / np.sqrt(max(ok.sum(), 1))), frac_complete=float(ok.mean()))


def summarise(rows, name):
    lap = [r for r in rows if r["method"] == "laplace"]
    emb = [r for r in rows if r["method"] != "laplace"]
    lines = [f"{name}: Laplace c: error | embedding c: error | embedding c at <= Laplace error"]
    for r in lap:
        ok = [e["c"] for e in emb if e["mean_error"] <= r["mean_error"]]
        ratio = f"{max(ok)} ({max(ok) / r['c']:.3g}x)" if ok else "none"
        lines.append(f"  {r['c']:5d}: {r['mean_error']:.4g} ± {r['se_error']:.2g} | {ratio}")
    lines += [f"  embedding c={e['c']}: {e['mean_error']:.4g} ± {e['se_error']:.2g}" for e in emb]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--problems", default="toy,covid,tb")
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--eps", type=float, default=None, help="override each problem's ε")
    ap.add_argument("--replot", action="store_true", help="only redraw embedding.png from the CSVs in --out")
    ap.add_argument("--out", default=str(Path(__file__).parent / "out"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    makers = {"toy": (toy_problem, 10_000), "covid": (covid_problem, 50_000), "tb": (tb_problem, 1000)}
    all_rows = []
    if args.replot:
        for f in sorted(out.glob("embedding_*.csv")):
            all_rows += [{k: (v if k in ("problem", "method") else float(v)) for k, v in r.items()}
                         for r in csv.DictReader(f.open())]
        plot(all_rows, out / "embedding.png")
        return
    for key in args.problems.split(","):
        make, draws = makers[key]
        t0 = time.perf_counter()
        p = make(draws)
        if args.eps is not None:
            p["eps"] = args.eps
        cs_emb = [c for c in (1, 3, 10, 30, 100, 300, 1000, 3000) if c <= draws // 10]
        rows = run_problem(p, [1, 10, 100], cs_emb, args.repeats, args.features)
        all_rows += rows
        print(summarise(rows, p["name"]), f"\n  ({time.perf_counter() - t0:.0f} s)", flush=True)
        with open(out / f"embedding_{key}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    plot(all_rows, out / "embedding.png")


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["problem"] for r in rows))
    fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for kind in dict.fromkeys(r["method"] for r in rows if r["problem"] == name):
            sel = [r for r in rows if r["problem"] == name and r["method"] == kind]
            ax.errorbar([r["c"] for r in sel], [r["mean_error"] for r in sel], [r["se_error"] for r in sel],
                        fmt="o-" if kind == "laplace" else "s--", label=kind, capsize=2)
        ax.set_xscale("log")
        ax.set_xlabel("c (released samples)")
        ax.set_ylabel("posterior-mean error")
        ax.set_title(f"{name}, ε = {sel[0]['eps']:g}, δ = {DELTA:g}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
