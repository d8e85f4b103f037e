"""Simulation-based calibration of the noise-aware private GLM, with DPVI and the non-private posterior.

For each family (logistic, Poisson with a log-exposure offset, linear with unknown noise sd), each
ε in {0.5, 1, 2} and each replicate: the covariate model's parameters and θ are drawn from the
prior, n = 2000 records with D = 3 features (and the offset) are drawn from the model (covariates
N(μ, Σ) clipped to their bounds [-1, 1], which the prior makes rare), the owner releases the
statistic (exact discrete Gaussian, fresh noise), and three posteriors are computed:

* the noise-aware GLM (``dpinfer.private_glm``, default settings), its 90% central intervals;
* DPVI (``dpinfer.release.dpvi.DPVI``, its defaults at the same (ε, δ)) on the same records: an
  intercept column; for Poisson the scaled offset as a fourth feature (DPVI has no offset); for the
  linear family its known-noise model with the true σ (an oracle advantage);
* the non-private posterior for the width that privacy costs: its Laplace approximation (Newton on
  the exact log posterior; coefficient prior sd for every coordinate; the linear family's at the true
  σ), checked against the exact importance-sampling reference (``tests/glm_reference.py``) on every
  10th logistic replicate (``exact_is_width``).

Coverage is the fraction of replicates whose 90% interval holds the true θ, per coordinate; its
Monte Carlo standard error is √(0.09 / R). Writes ``calibration.json`` and ``calibration.png`` here.

Run: ``nice .venv/bin/python examples/private_glm/calibration.py [--reps R]``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

from dpinfer.inference.glm import GLMPosteriorOptions, GLMPrior  # noqa: E402
from dpinfer.models.data_spec import DataSpec  # noqa: E402
from dpinfer.pipelines.glm import private_glm  # noqa: E402
from dpinfer.privacy import PrivacyRNG  # noqa: E402
from dpinfer.privacy.context import ReleaseContext  # noqa: E402
from dpinfer.release.dpvi import (  # noqa: E402
    DPVI,
    GaussianLinearRegression,
    LogisticRegression,
    PoissonRegression,
)
from glm_reference import reference_posterior  # noqa: E402

FAMILIES = ("logistic", "poisson", "linear")
EPSILONS = (0.5, 1.0, 2.0)
DELTA = 1e-6
N, D = 2000, 3
LEVEL = 0.9
OFFSET_BOUNDS = (math.log(0.5), math.log(2.0))
Y_MAX = 50
COV = dict(cov_mean_sd=0.25, cov_scale_log_mean=math.log(0.25), cov_scale_log_sd=0.3, cov_offdiag_sd=0.1)
PRIORS = {
    "logistic": GLMPrior(coef_sd=2.0, intercept_sd=1.0, **COV),
    "poisson": GLMPrior(coef_sd=1.0, intercept_sd=0.75, **COV),
    "linear": GLMPrior(coef_sd=0.5, intercept_sd=0.2, noise_log_mean=math.log(0.2), noise_log_sd=0.3, **COV),
}


def simulate(family: str, rng: np.random.Generator) -> dict:
    pr = PRIORS[family]
    q = D + (family == "poisson")
    mu = rng.normal(0, pr.cov_mean_sd, q)
    L = np.diag(np.exp(rng.normal(pr.cov_scale_log_mean, pr.cov_scale_log_sd, q)))
    L[np.tril_indices(q, -1)] = rng.normal(0, pr.cov_offdiag_sd, q * (q - 1) // 2)
    u = np.clip(mu + rng.standard_normal((N, q)) @ L.T, -1, 1)
    X = u[:, :D]
    theta = np.concatenate([[rng.normal(0, pr.intercept_sd)], rng.normal(0, pr.coef_sd, D)])
    eta = theta[0] + X @ theta[1:]
    out = {"X": X, "theta": theta}
    if family == "logistic":
        out["y"] = (rng.random(N) < 1 / (1 + np.exp(-eta))).astype(float)
    elif family == "poisson":
        lo, hi = OFFSET_BOUNDS
        out["offset"] = (lo + hi) / 2 + (hi - lo) / 2 * u[:, D]
        out["y"] = np.minimum(rng.poisson(np.exp(eta + out["offset"])), Y_MAX).astype(float)
    else:
        log_s = rng.normal(pr.noise_log_mean, pr.noise_log_sd)
        out["theta"] = np.concatenate([theta, [log_s]])
        out["y"] = np.clip(eta + math.exp(log_s) * rng.standard_normal(N), -1, 1)
    return out


def glm_fit(family: str, data: dict, eps: float, seed: int):
    kw: dict = dict(family=family, epsilon=eps, delta=DELTA, seed=seed,
                    posterior=GLMPosteriorOptions(prior=PRIORS[family], warn=False))
    spec: dict = dict(bounds=(-1, 1))
    if family == "poisson":
        spec.update(offset=data["offset"])
        spec.update(y_bounds=Y_MAX, offset_bounds=OFFSET_BOUNDS)
    if family == "linear":
        spec.update(y_bounds=(-1, 1))
    return private_glm(data["X"], data["y"], data=DataSpec(**spec), **kw)


def dpvi_fit(family: str, data: dict, eps: float, seed: int, rng_priv):
    X1 = np.concatenate([np.ones((N, 1)), data["X"]], axis=1)
    pr = PRIORS[family]
    if family == "logistic":
        model = LogisticRegression(D + 1, prior_scale=pr.coef_sd, squash=0.0)
    elif family == "poisson":
        lo, hi = OFFSET_BOUNDS
        X1 = np.concatenate([X1, (2 * (data["offset"] - lo) / (hi - lo) - 1)[:, None]], axis=1)
        model = PoissonRegression(D + 2, prior_scale=pr.coef_sd)
    else:
        model = GaussianLinearRegression(D + 1, noise_scale=float(np.exp(data["theta"][-1])),
                                         prior_scale=pr.coef_sd)
    fit = DPVI(model).fit(X1, data["y"], epsilon=eps, delta=DELTA, seed=seed,
                          context=ReleaseContext(privacy_rng=rng_priv), data=DataSpec(intercept=False))
    return fit


def nonprivate_sd(family: str, data: dict) -> np.ndarray:
    """Posterior sd of the non-private posterior by its Laplace approximation (Newton's method on the
    exact log posterior, coefficient prior sd for every coordinate; linear: σ at its true value)."""
    X1 = np.concatenate([np.ones((N, 1)), data["X"]], axis=1)
    y, tau = data["y"], PRIORS[family].coef_sd
    P = np.eye(D + 1) / tau**2
    if family == "linear":
        s2 = math.exp(2 * data["theta"][-1])
        return np.sqrt(np.diag(np.linalg.inv(X1.T @ X1 / s2 + P)))
    off = data.get("offset", np.zeros(N))
    b = np.zeros(D + 1)
    for _ in range(50):
        eta = X1 @ b + off
        if family == "logistic":
            m = 1 / (1 + np.exp(-eta))
            w = m * (1 - m)
        else:
            m = w = np.exp(eta)
        H = X1.T @ (w[:, None] * X1) + P
        step = np.linalg.solve(H, X1.T @ (y - m) - P @ b)
        b = b + step
        if np.abs(step).max() < 1e-10:
            break
    return np.sqrt(np.diag(np.linalg.inv(H)))


def dpvi_interval(fit) -> np.ndarray:
    """DPVI's default 90% intervals as (dim, 2) (its ``interval`` returns a (lower, upper) pair)."""
    res = fit.interval(LEVEL)
    return np.stack(res, axis=1) if isinstance(res, tuple) else np.asarray(res)


def covered(ci: np.ndarray, truth: np.ndarray) -> list[bool]:
    return [bool(lo <= t <= hi) for (lo, hi), t in zip(ci, truth, strict=True)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=80)
    ap.add_argument("--dpvi-every", type=int, default=2, help="fit DPVI on every k-th replicate")
    ap.add_argument("--merge", nargs="*", help="merge these per-family JSON files into --out and plot")
    ap.add_argument("--families", default="logistic,poisson,linear")
    ap.add_argument("--no-dpvi", action="store_true")
    ap.add_argument("--out", default=str(HERE / "calibration.json"))
    args = ap.parse_args()
    if args.merge:
        merged: dict = {}
        for f in args.merge:
            part = json.loads(Path(f).read_text())
            cells = merged.get("cells", []) + part["cells"]
            merged = {**part, "cells": cells}
        merged["cells"].sort(key=lambda c: (FAMILIES.index(c["family"]), c["epsilon"]))
        merged["cells"] = [{**c, **summarise(c["rows"])} for c in merged["cells"]]  # this version's summary
        merged["reps_per_family"] = {c["family"]: len(c["rows"]) for c in merged["cells"]}
        Path(args.out).write_text(json.dumps(merged, indent=1))
        plot(merged, Path(args.out).with_suffix(".png"))
        print(table(merged))  # noqa: T201
        return
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rng_priv = PrivacyRNG.insecure_deterministic(2026)  # a simulation: reproducible noise
    results = {"n": N, "D": D, "level": LEVEL, "delta": DELTA, "reps": args.reps,
               "dpvi_every": args.dpvi_every, "cells": []}
    t_start = time.time()
    for family in args.families.split(","):
        rows: dict[float, list] = {eps: [] for eps in EPSILONS}
        for r in range(args.reps):  # every ε at each replicate: an interrupted run stays balanced
            for eps in EPSILONS:
                rng = np.random.default_rng([FAMILIES.index(family), int(eps * 10), r])
                data = simulate(family, rng)
                t0 = time.time()
                fit = glm_fit(family, data, eps, seed=r)
                t_glm = time.time() - t0
                ci = fit.interval(LEVEL)
                row = {"truth": data["theta"].tolist(), "glm_cov": covered(ci, data["theta"]),
                       "glm_width": (ci[:, 1] - ci[:, 0]).tolist(), "glm_time": t_glm,
                       "khat": fit.diagnostics.get("pareto_khat")}
                k = D + 1  # the coefficients DPVI and the non-private posterior share with the GLM
                if not args.no_dpvi and r % args.dpvi_every == 0:
                    t0 = time.time()
                    try:
                        dv = dpvi_fit(family, data, eps, r, rng_priv)
                        dci = dpvi_interval(dv)[:k]
                        row.update(dpvi_cov=covered(dci, data["theta"][:k]),
                                   dpvi_width=(dci[:, 1] - dci[:, 0]).tolist())
                    except Exception as exc:  # noqa: BLE001 - a failed fit is counted as a failure
                        row.update(dpvi_error=f"{type(exc).__name__}: {exc}")
                    row["dpvi_time"] = time.time() - t0
                row["exact_width"] = (2 * 1.6449 * nonprivate_sd(family, data))[:k].tolist()
                if family == "logistic" and r % 10 == 0:  # the Laplace widths against exact IS
                    X1 = np.concatenate([np.ones((N, 1)), data["X"]], axis=1)
                    ref = reference_posterior("logistic", X1, data["y"], prior_sd=PRIORS[family].coef_sd,
                                              draws=20_000, seed=r)
                    row["exact_is_width"] = (2 * 1.6449 * np.asarray(ref["sd"])).tolist()
                rows[eps].append(row)
                print(f"{family} eps={eps} rep {r}: glm {t_glm:.1f}s khat {row['khat']:.2f} "  # noqa: T201
                      f"cov {row['glm_cov']} dpvi {row.get('dpvi_cov')}", flush=True)
            results["cells"] = [{"family": family, "epsilon": eps, "rows": rows[eps], **summarise(rows[eps])}
                                for eps in EPSILONS]
            results["reps"] = r + 1
            results["wall_s"] = time.time() - t_start
            Path(args.out).write_text(json.dumps(results, indent=1))
    plot(results, Path(args.out).with_suffix(".png"))


def summarise(rows: list[dict]) -> dict:
    out: dict = {}
    R = len(rows)
    out["mc_se"] = math.sqrt(LEVEL * (1 - LEVEL) / R)
    out["glm_coverage"] = np.mean([r["glm_cov"] for r in rows], axis=0).tolist()
    per_rep = np.array([np.mean(r["glm_cov"]) for r in rows])  # coordinates of one replicate are correlated
    out["glm_pooled"] = float(per_rep.mean())
    out["glm_pooled_se"] = float(per_rep.std(ddof=1) / math.sqrt(R)) if R > 1 else float("nan")
    out["glm_mean_width"] = np.mean([r["glm_width"] for r in rows], axis=0).tolist()
    out["glm_mean_time_s"] = float(np.mean([r["glm_time"] for r in rows]))
    ok = [r for r in rows if "dpvi_cov" in r]
    if ok:
        out["dpvi_coverage"] = np.mean([r["dpvi_cov"] for r in ok], axis=0).tolist()
        dper = np.array([np.mean(r["dpvi_cov"]) for r in ok])
        out["dpvi_pooled"] = float(dper.mean())
        out["dpvi_pooled_se"] = float(dper.std(ddof=1) / math.sqrt(len(ok))) if len(ok) > 1 else float("nan")
        out["dpvi_mean_width"] = np.mean([r["dpvi_width"] for r in ok], axis=0).tolist()
        out["dpvi_failures"] = sum("dpvi_error" in r for r in rows)
        out["dpvi_reps"] = len(ok)
        out["dpvi_mc_se"] = math.sqrt(LEVEL * (1 - LEVEL) / len(ok))
        out["dpvi_mean_time_s"] = float(np.mean([r["dpvi_time"] for r in rows if "dpvi_time" in r]))
    out["nonprivate_mean_width"] = np.mean([r["exact_width"] for r in rows], axis=0).tolist()
    isw = [(r["exact_is_width"], r["exact_width"]) for r in rows if "exact_is_width" in r]
    if isw:
        ratios = [np.divide(b, a[: len(b)]) for a, b in isw]
        out["laplace_over_exact_width"] = np.mean(ratios, axis=0).tolist()
    return out


def table(results: dict) -> str:
    """The README's table: coverage (mean over coordinates, min-max) and mean 90% width over the
    intercept and the D coefficients, per family and ε."""
    head = ("| family | ε | reps (DPVI) | noise-aware coverage: pooled ± se (per-coordinate min–max) | "
            "DPVI coverage | "
            "width: noise-aware / DPVI / non-private | noise-aware ÷ non-private width | "
            "s per fit: GLM / DPVI |")
    lines = [head, "|" + "---|" * 8]
    for c in results["cells"]:
        k = results["D"] + 1
        g = np.asarray(c["glm_coverage"])
        dv = np.asarray(c.get("dpvi_coverage", [np.nan]))
        wg = float(np.mean(c["glm_mean_width"][:k]))
        wd = float(np.mean(c.get("dpvi_mean_width", [np.nan])))
        wn = float(np.mean(c["nonprivate_mean_width"]))
        lines.append(
            f"| {c['family']} | {c['epsilon']:g} | {len(c['rows'])} ({c.get('dpvi_reps', 0)}) | "
            f"{c['glm_pooled']:.2f} ± {c['glm_pooled_se']:.2f} ({g.min():.2f}–{g.max():.2f}) | "
            f"{c.get('dpvi_pooled', float('nan')):.2f} ± {c.get('dpvi_pooled_se', float('nan')):.2f} "
            f"({dv.min():.2f}–{dv.max():.2f}) | "
            f"{wg:.2f} / {wd:.2f} / {wn:.2f} | {wg / wn:.1f}× | "
            f"{c['glm_mean_time_s']:.1f} / {c.get('dpvi_mean_time_s', float('nan')):.1f} |"
        )
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fams = sorted({c["family"] for c in results["cells"]}, key=["logistic", "poisson", "linear"].index)
    fig, axes = plt.subplots(1, len(fams), figsize=(4.5 * len(fams), 3.8), squeeze=False)
    for ax, fam in zip(axes[0], fams, strict=True):
        cells = [c for c in results["cells"] if c["family"] == fam]
        x = np.arange(len(cells))
        for off, key, lab in ((-0.15, "glm_coverage", "noise-aware GLM"), (0.15, "dpvi_coverage", "DPVI")):
            vals = [c.get(key) for c in cells]
            if any(v is None for v in vals):
                continue
            lo = [min(v) for v in vals]
            hi = [max(v) for v in vals]
            mid = [float(np.mean(v)) for v in vals]
            ax.errorbar(x + off, mid, yerr=[np.subtract(mid, lo), np.subtract(hi, mid)], fmt="o", capsize=4,
                        label=f"{lab} (dot: mean over coefficients, bar: min-max)")
        se = cells[0]["mc_se"]
        ax.axhspan(0.85, 0.95, color="0.9", label="85-95% target")
        ax.axhline(0.9, color="k", lw=0.8)
        ax.axhspan(0.9 - 2 * se, 0.9 + 2 * se, color="C2", alpha=0.15,
                   label=f"90% ± 2 MC se ({len(cells[0]['rows'])} reps)")
        ax.set_xticks(x, [f"ε = {c['epsilon']:g}" for c in cells])
        ax.set_ylim(0, 1.02)
        ax.set_title(f"{fam} (n = {results['n']}, D = {results['D']})")
        ax.set_ylabel("coverage of 90% central intervals")
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
