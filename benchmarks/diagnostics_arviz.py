"""Hand-written sampler diagnostics against ArviZ's (issue 39 item 8): the before/after of
:mod:`dpinfer.diagnostics.sampling`.

The "before" functions below are the implementations dpinfer shipped until issue 39 (classic split
R-hat of ``inference/neural/mcmc.py`` and ``inference/glm.py``, Geyer initial-monotone ESS,
maximum-likelihood Pareto k̂ of ``diagnostics/checks.py``), kept here only as the baseline; the
"after" ones are what the library now calls (ArviZ's rank-normalised split R-hat, bulk/tail ESS,
PSIS k̂).

1. R-hat: 200 runs of 4 chains x 1000 independent N(0, 1) draws, one chain N(0, 3²) (a chain that
   explores a wider region: same mean), and 200 control runs of 4 identical-law chains; how many
   runs each R-hat flags above 1.01.
2. Pareto k̂: log weights of 200 (and 1000) independent generalised-Pareto weights of known shape
   k in {0.2, 0.5, 0.7, 0.9}, 300 replicates each: mean and sd of k̂, and the seconds per call.
3. ESS: 200 runs of 4 AR(1) chains (ρ = 0.9, 1000 draws each; true ESS 4000·(1-ρ)/(1+ρ) = 210.5):
   mean and sd of the bulk-ESS estimates.

Writes ``benchmarks/results/diagnostics_arviz.json``. Run: ``python benchmarks/diagnostics_arviz.py``
(about a minute on one core).
"""

from __future__ import annotations

import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dpinfer.diagnostics import sampling  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "diagnostics_arviz.json"


# -- the hand-written diagnostics dpinfer used before (baseline only) ---------------------------
def before_split_rhat(chains: np.ndarray) -> np.ndarray:
    """Classic split R-hat (BDA3 §11.4) of chains (C, N, d)."""
    C, N, d = chains.shape
    h = N // 2
    parts = np.concatenate([chains[:, :h], chains[:, h:2 * h]], axis=0)
    means = parts.mean(1)
    W = parts.var(1, ddof=1).mean(0)
    B = h * means.var(0, ddof=1)
    var = (h - 1) / h * W + B / h
    return np.sqrt(var / np.maximum(W, 1e-300))


def before_ess(chains: np.ndarray) -> np.ndarray:
    """Multi-chain ESS (BDA3 §11.5, Geyer's initial monotone sequence) of chains (C, N, d)."""
    x = np.swapaxes(chains, 0, 1)  # (n, C, d)
    n, C, d = x.shape
    centred = x - x.mean(axis=0)
    nfft = 1 << int(2 * n - 1).bit_length()
    f = np.fft.rfft(centred, nfft, axis=0)
    acov = np.fft.irfft(f * np.conj(f), nfft, axis=0)[:n] / n
    W = x.var(axis=0, ddof=1).mean(axis=0)
    B_over_n = x.mean(axis=0).var(axis=0, ddof=1) if C > 1 else np.zeros(d)
    var_plus = (n - 1) / n * W + B_over_n
    out = np.empty(d)
    for j in range(d):
        rho = 1.0 - (W[j] - acov[:, :, j].mean(axis=1) * n / (n - 1)) / var_plus[j]
        rho[0] = 1.0
        total, prev = 0.0, math.inf
        for k in range(0, n - 1, 2):
            pair = rho[k] + rho[k + 1]
            if pair <= 0:
                break
            pair = min(pair, prev)
            total += pair
            prev = pair
        tau = max(-1.0 + 2.0 * total, 1.0 / math.log10(max(C * n, 10)))
        out[j] = C * n / tau
    return out


def before_khat(log_weights: np.ndarray) -> float:
    """Maximum-likelihood generalised-Pareto shape of the min(n/5, 3√n) largest weights."""
    lw = np.sort(log_weights[np.isfinite(log_weights)])
    n = lw.size
    m = int(min(0.2 * n, 3.0 * math.sqrt(n)))
    if m < 5 or n <= m:
        return float("nan")
    w = np.exp(lw - lw[-1])
    exceed = w[-m:] - w[-m - 1]
    if np.all(exceed <= 0):
        return 0.0
    k, _, _ = stats.genpareto.fit(exceed, floc=0.0)
    return float(k)


# -- the cases -----------------------------------------------------------------------------------
def rhat_case(runs: int = 200, n: int = 1000, wide: float = 3.0) -> dict:
    rng = np.random.default_rng(1)
    out = {}
    for label, scale in (("one chain 3x wider", wide), ("control: identical chains", 1.0)):
        flags = {"before_split_rhat": 0, "after_arviz_rank_rhat": 0}
        values: dict[str, list[float]] = {k: [] for k in flags}
        for _ in range(runs):
            x = rng.standard_normal((4, n, 1))
            x[0] *= scale
            pairs = (("before_split_rhat", before_split_rhat), ("after_arviz_rank_rhat", sampling.rhat))
            for key, fn in pairs:
                r = float(fn(x)[0])
                values[key].append(r)
                flags[key] += bool(r > 1.01)
        out[label] = {
            "runs": runs,
            "flagged_above_1.01": flags,
            "median_rhat": {k: float(np.median(v)) for k, v in values.items()},
        }
    return {"setting": f"4 chains x {n} independent N(0,1) draws; one chain N(0, {wide}^2)", **out}


def khat_case(reps: int = 300) -> dict:
    rng = np.random.default_rng(2)
    rows = []
    for n in (200, 1000):
        for k in (0.2, 0.5, 0.7, 0.9):
            before, after, t_before, t_after = [], [], 0.0, 0.0
            for _ in range(reps):
                lw = np.log(stats.genpareto.rvs(k, size=n, random_state=rng) + 1.0)
                t0 = time.perf_counter()
                before.append(before_khat(lw))
                t1 = time.perf_counter()
                after.append(sampling.pareto_khat(lw))
                t2 = time.perf_counter()
                t_before += t1 - t0
                t_after += t2 - t1
            b, a = np.asarray(before), np.asarray(after)
            rows.append({
                "draws": n, "true_k": k,
                "before_mle": {"mean": float(np.nanmean(b)), "sd": float(np.nanstd(b, ddof=1)),
                               "rmse": float(np.sqrt(np.nanmean((b - k) ** 2))),
                               "seconds_per_call": t_before / reps},
                "after_arviz_psis": {"mean": float(np.nanmean(a)), "sd": float(np.nanstd(a, ddof=1)),
                                     "rmse": float(np.sqrt(np.nanmean((a - k) ** 2))),
                                     "seconds_per_call": t_after / reps},
                "slowdown_of_before": t_before / max(t_after, 1e-12),
            })
    return {"setting": f"log of 1 + GPD(k) weights, {reps} replicates per cell", "rows": rows}


def ess_case(runs: int = 200, n: int = 1000, rho: float = 0.9) -> dict:
    rng = np.random.default_rng(3)
    true = 4 * n * (1 - rho) / (1 + rho)
    before, bulk, tail = [], [], []
    for _ in range(runs):
        e = rng.standard_normal((4, n))
        x = np.empty((4, n))
        x[:, 0] = e[:, 0] / math.sqrt(1 - rho**2)
        for t in range(1, n):
            x[:, t] = rho * x[:, t - 1] + e[:, t]
        before.append(float(before_ess(x[:, :, None])[0]))
        bulk.append(float(sampling.ess_bulk(x)[0]))
        tail.append(float(sampling.ess_tail(x)[0]))
    return {
        "setting": f"4 AR(1) chains, rho={rho}, {n} draws each; true ESS of the mean {true:.1f}",
        "true_ess": true,
        "before_geyer": {"mean": float(np.mean(before)), "sd": float(np.std(before, ddof=1))},
        "after_arviz_bulk": {"mean": float(np.mean(bulk)), "sd": float(np.std(bulk, ddof=1))},
        "after_arviz_tail": {"mean": float(np.mean(tail)), "sd": float(np.std(tail, ddof=1))},
    }


def main() -> None:
    import arviz

    t0 = time.perf_counter()
    result = {
        "benchmark": "diagnostics_arviz (issue 39 item 8)",
        "arviz": arviz.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "rhat": rhat_case(),
        "pareto_khat": khat_case(),
        "ess": ess_case(),
    }
    result["wall_seconds"] = time.perf_counter() - t0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
