"""SBC of the private GLM on the covariates data owners have (issue 39, item 1).

Per replicate of a cell (design, family, n, ε): θ from the prior the posterior uses, covariates from
the *design* (not from any covariate model of the library), the response from the GLM, the owner's
release (``release_glm_statistics``, exact discrete Gaussian, the insecure deterministic PrivacyRNG
of the tests: reproducible noise), and on that one release the posterior with

* ``covariates="moment-matched"`` (the default: Beta margins, Gaussian copula, fitted to the released
  moments; :mod:`dpinfer.inference.glm_covariates`), with warnings on, as a user gets it;
* ``covariates="gaussian"`` (the Gaussian covariate model of Kulkarni et al. 2021, as on main),
  for the before/after on the same releases;
* the non-private posterior's width (Laplace approximation: Newton on the exact log posterior of the
  same records, the same prior), for "width vs non-private".

Designs (features before scaling; bounds are the design's public bounds):
  binary       D = 3 independent indicators, P(1) ~ U(0.15, 0.85) each;
  onehot       a 4-level category (3 indicators, level 0 the reference, probabilities ~ Dirichlet(2))
               and one uniform feature;
  uniform      D = 3 independent uniform on the bounds;
  skewed       D = 3, Beta(0.8, 5)-distributed on the bounds (piled at the lower bound);
  correlated   D = 3 Gaussian copula with correlation 0.85, uniform margins;
  mixed10      D = 10: 4 binary, a 3-level category (2 indicators), 2 uniform, 2 skewed;
  cont10       D = 10 continuous: 5 uniform, 5 Beta(0.8, 5)-skewed, independent;
  uniform-…-poisson  Poisson counts (y_max 200) with D = 3 uniform features, intercept ~ N(0, 2²):
               counts up to about e⁵, the release's noise dominates.

Coverage: fraction of the true coordinates inside the 90% central interval (intercept and slopes,
scaled units) pooled over the coordinates of a replicate; ± is the standard error over replicates
(sd of per-replicate coverage / √R). Rank p-value: χ² test (10 bins) of the pooled fractional ranks
of the truth among the posterior draws. Warned: fraction of replicates where the default call warned
(any InferenceWarning). Width: mean 90% width / non-private 90% width.

Run: ``nice -n 10 .venv/bin/python examples/private_glm/sbc_designs.py --reps 40 --cells binary-20000-1``
(cells: ``DESIGN-N-EPS[-FAMILY]``; default: all); writes ``sbc_designs.json`` (merged by cell) and
prints the table. ``sbc_designs_before.json`` keeps the rows of cells that were rerun after issue 39's
last round with ``--models moment-matched``, as they were before (both models); the table takes such
a cell's gaussian columns from there, marked †.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
import torch
from scipy import stats

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

from dpinfer.errors import InferenceWarning  # noqa: E402
from dpinfer.inference.glm import GLMPrior, GLMSamplerOptions, glm_posterior  # noqa: E402
from dpinfer.models.data_spec import DataSpec  # noqa: E402
from dpinfer.privacy.context import ReleaseContext  # noqa: E402
from dpinfer.release.glm import release_glm_statistics  # noqa: E402
from seeded_privacy_rng import prng  # noqa: E402

LEVEL = 0.9
DELTA = 1e-6
PRIOR = {"logistic": GLMPrior(coef_sd=1.5, intercept_sd=1.0),
         "poisson": GLMPrior(coef_sd=0.5, intercept_sd=2.0)}
CELLS = ["binary-500-1", "binary-2000-1", "binary-20000-1", "binary-100000-10", "onehot-5000-1",
         "uniform-2000-0.2", "skewed-5000-2", "correlated-5000-1", "mixed10-5000-10", "mixed10-20000-1",
         "uniform-2000-1-poisson"]
Y_MAX = 200


def design(name: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Covariates on [0, 1] (every design's public bounds)."""
    if name == "binary":
        return (rng.random((n, 3)) < rng.uniform(0.15, 0.85, 3)).astype(float)
    if name == "onehot":
        lev = rng.choice(4, size=n, p=rng.dirichlet([2, 2, 2, 2]))
        return np.column_stack([(lev == k).astype(float) for k in (1, 2, 3)] + [rng.random(n)])
    if name == "uniform":
        return rng.random((n, 3))
    if name == "skewed":
        return rng.beta(0.8, 5.0, size=(n, 3))
    if name == "correlated":
        R = np.full((3, 3), 0.85) + 0.15 * np.eye(3)
        return stats.norm.cdf(rng.standard_normal((n, 3)) @ np.linalg.cholesky(R).T)
    if name == "mixed10":
        b = (rng.random((n, 4)) < rng.uniform(0.15, 0.85, 4)).astype(float)
        lev = rng.choice(3, size=n, p=rng.dirichlet([2, 2, 2]))
        cat = np.column_stack([(lev == 1), (lev == 2)]).astype(float)
        return np.column_stack([b, cat, rng.random((n, 2)), rng.beta(0.8, 5.0, size=(n, 2))])
    if name == "cont10":
        return np.column_stack([rng.random((n, 5)), rng.beta(0.8, 5.0, size=(n, 5))])
    raise ValueError(name)


def nonprivate_sd(family: str, Xs: np.ndarray, y: np.ndarray, prior: GLMPrior) -> np.ndarray:
    X1 = np.column_stack([np.ones(len(y)), Xs])
    P = np.diag([1 / prior.intercept_sd**2] + [1 / prior.coef_sd**2] * Xs.shape[1])
    b = np.zeros(X1.shape[1])
    if family == "poisson":  # start at the mean count: Newton from 0 overshoots on large counts
        b[0] = math.log(max(y.mean(), 0.5))
    for _ in range(200):
        eta = X1 @ b
        if family == "logistic":
            m = 1 / (1 + np.exp(-eta))
            w = m * (1 - m)
        else:
            m = w = np.exp(eta)
        H = X1.T @ (w[:, None] * X1) + P
        step = np.linalg.solve(H, X1.T @ (y - m) - P @ b)
        step *= min(1.0, 1.0 / max(np.abs(step).max(), 1e-300))  # damped: at most 1 per coordinate
        b = b + step
        if np.abs(step).max() < 1e-10:
            break
    return np.sqrt(np.diag(np.linalg.inv(H)))


def replicate(cell: str, r: int, opts: GLMSamplerOptions,
              models: tuple[str, ...] = ("moment-matched", "gaussian")) -> dict:
    parts = cell.split("-")
    name, n, eps = parts[0], int(parts[1]), float(parts[2])
    family = parts[3] if len(parts) > 3 else "logistic"
    pr = PRIOR[family]
    rng = np.random.default_rng([zlib.crc32(cell.encode()), r])
    X = design(name, n, rng)
    D = X.shape[1]
    theta = np.concatenate([[rng.normal(0, pr.intercept_sd)], rng.normal(0, pr.coef_sd, D)])
    Xs = 2 * X - 1
    eta = theta[0] + Xs @ theta[1:]
    if family == "logistic":
        y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
        kw: dict = {}
    else:
        y = np.minimum(rng.poisson(np.exp(eta)), Y_MAX).astype(float)
        kw = {"y_bounds": Y_MAX}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release_glm_statistics(X, y, family=family, epsilon=eps, delta=DELTA,
                                     context=ReleaseContext(privacy_rng=prng(r)),
                                     data=DataSpec(bounds=(0, 1), **kw))
    truth = theta
    out: dict = {"r": r, "truth": truth.tolist()}
    for cm in models:
        t0 = time.time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            post = glm_posterior(rel, prior=pr, sampler=opts, seed=r, covariates=cm,
                                 warn=(cm == "moment-matched"))
        flat = post.flat
        ci = np.quantile(flat, [0.05, 0.95], axis=0).T
        out[cm] = {
            "covered": ((ci[:, 0] <= truth) & (truth <= ci[:, 1])).tolist(),
            "rank": (flat < truth).mean(0).tolist(),
            "width": (ci[:, 1] - ci[:, 0]).tolist(),
            "warned": [str(w.category.__name__) for w in caught if issubclass(w.category, InferenceWarning)],
            "time": time.time() - t0,
            "method": post.diagnostics.get("method"),
        }
    sd_np = nonprivate_sd(family, Xs, y, pr)
    out["np_width"] = (2 * stats.norm.ppf(0.95) * sd_np).tolist()
    return out


def summarise(rows: list[dict], cm: str) -> dict:
    cov = np.array([np.mean(r[cm]["covered"]) for r in rows])
    ranks = np.concatenate([r[cm]["rank"] for r in rows])
    hist = np.histogram(ranks, bins=10, range=(0, 1))[0]
    p = float(stats.chisquare(hist).pvalue)
    width = np.mean([np.mean(np.array(r[cm]["width"]) / np.array(r["np_width"])) for r in rows])
    se = float(cov.std(ddof=1) / math.sqrt(len(rows)))
    return {"reps": len(rows), "coverage": float(cov.mean()), "se": se,
            "rank_p": p, "warned": float(np.mean([bool(r[cm]["warned"]) for r in rows])),
            "width_ratio": float(width), "time": float(np.mean([r[cm]["time"] for r in rows]))}


def table(results: dict, before: dict | None = None) -> str:
    """The table of ``results``; a cell run with ``--models moment-matched`` takes its gaussian
    columns from the same cell's rows in ``before`` (an earlier run, see ``--before``), marked †
    and with their own replicate count in the reps column (mm / g†), else shows "–"."""
    lines = ["| design | family | n | ε | reps | coverage ± se: moment-matched (default) | gaussian (main) | "
             "rank p (mm / g) | warned (mm) | width ÷ non-private (mm / g) | s per fit (mm / g) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for cell, rows in results.items():
        parts = cell.split("-")
        fam = parts[3] if len(parts) > 3 else "logistic"
        a = summarise(rows, "moment-matched")
        reps, mark = f"{a['reps']}", ""
        grows = rows if all("gaussian" in r for r in rows) else None
        if grows is None and before and before.get(cell) and all("gaussian" in r for r in before[cell]):
            grows, mark = before[cell], "†"
            reps = f"{a['reps']} / {len(grows)}†"
        if grows is not None:
            b = summarise(grows, "gaussian")
            gc, gp = f"{b['coverage']:.2f} ± {b['se']:.2f}{mark}", f"{b['rank_p']:.2g}{mark}"
            gw, gt = f"{b['width_ratio']:.1f}{mark}", f"{b['time']:.1f}{mark}"
        else:  # run with --models moment-matched
            gc = gp = gw = gt = "–"
        lines.append(
            f"| {parts[0]} | {fam} | {parts[1]} | {parts[2]} | {reps} | "
            f"{a['coverage']:.2f} ± {a['se']:.2f} | {gc} | "
            f"{a['rank_p']:.2g} / {gp} | {a['warned']:.2f} | "
            f"{a['width_ratio']:.1f} / {gw} | {a['time']:.1f} / {gt} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--cells", default=None, help="cells to run (with --table: to print); default all")
    ap.add_argument("--out", default=str(HERE / "sbc_designs.json"))
    ap.add_argument("--before", default=str(HERE / "sbc_designs_before.json"),
                    help="earlier rows (before issue 39's last round) whose gaussian columns the table "
                         "shows, marked †, for cells rerun with --models moment-matched")
    ap.add_argument("--proposals", type=int, default=2000)
    ap.add_argument("--table", action="store_true", help="only print the table of --out")
    ap.add_argument("--models", default="moment-matched,gaussian",
                    help="covariate models fitted per replicate (comma-separated)")
    args = ap.parse_args()
    path = Path(args.out)
    results = json.loads(path.read_text()) if path.exists() else {}
    before_path = Path(args.before)
    before = json.loads(before_path.read_text()) if before_path.exists() else {}
    if args.table:
        keep = args.cells.split(",") if args.cells else list(results)
        print(table({c: results[c] for c in keep if c in results}, before))  # noqa: T201
        return
    torch.set_num_threads(1)
    opts = GLMSamplerOptions(proposals=args.proposals, adapt=1, draws=2000)
    for cell in (args.cells or ",".join(CELLS)).split(","):
        rows = results.get(cell, [])
        done = {row["r"] for row in rows}
        for r in range(args.reps):
            if r in done:
                continue
            rows.append(replicate(cell, r, opts, tuple(args.models.split(","))))
            results[cell] = rows
            path.write_text(json.dumps(results))
        print(table({cell: rows}, before).splitlines()[-1], flush=True)  # noqa: T201
    print(table(results, before))  # noqa: T201


if __name__ == "__main__":
    main()
