"""``infer`` and each analyst method on a hierarchical problem with an exact posterior (issue 39
item 6): beta-binomial group counts released with discrete Gaussian noise
(``tests/hierarchical_problem.py``: 12 groups of 30, σ = 2, μ ~ Beta(2, 2), κ ~ Gamma(2, 0.1)).

Each method runs as a user gets it (defaults, ``method=...`` through :func:`dpinfer.infer`, which
issues each method's findings), for seeds 1-3. Per run: the method ``infer`` chose (and what it
tried), C2ST against 2000 exact draws, the sd ratio of μ and κ, the mass beyond κ = 50 (exact:
0.067%), and the warnings (categories). Writes ``benchmarks/results/hierarchical_methods.json``.
For SPPE and SPLE the same fit is also sampled without its truncation to the simulated range
(``untruncated``: the tails as before issue 39). Run:
``python benchmarks/hierarchical_methods.py [seeds...] [methods...]`` (serial; minutes per seed).
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

import dpinfer  # noqa: E402
from dpinfer.diagnostics import c2st  # noqa: E402
from dpinfer.errors import InferenceWarning  # noqa: E402
from hierarchical_problem import OBSERVED, ExactPosterior, make_model  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "hierarchical_methods.json"
METHODS = ("auto", "importance", "exact", "smc-abc", "sppe", "sple")
KAPPA_TAIL = 50.0


def run(method: str, seed: int, exact_draws: np.ndarray) -> dict:
    model = make_model()
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        post = dpinfer.infer(model, OBSERVED, method=method, seed=seed, backend="serial", progress=False)
    wall = time.perf_counter() - t0
    draws = post.sample(2000, seed=seed)
    sd = draws.std(axis=0, ddof=1) / exact_draws.std(axis=0, ddof=1)
    extra = {}
    inner = post.result
    if getattr(inner, "settings", {}).get("simulated_range"):
        # the same fit without the truncation to the simulated range: the tails before item 6
        inner.settings.pop("simulated_range")
        inner._range_changed()
        raw = post.sample(2000, seed=seed)
        ratio = raw[:, 1].std(ddof=1) / exact_draws[:, 1].std(ddof=1)
        extra["untruncated"] = {"c2st": float(c2st(raw, exact_draws, seed=0)),
                                "mass_kappa_above_50": float(np.mean(raw[:, 1] > KAPPA_TAIL)),
                                "max_kappa": float(raw[:, 1].max()), "sd_ratio_kappa": float(ratio)}
    return {
        "method": method,
        "seed": seed,
        "chosen": post.method,
        "tried": post.details.get("tried"),
        "c2st": float(c2st(draws, exact_draws, seed=0)),
        "sd_ratio": {"mu": float(sd[0]), "kappa": float(sd[1])},
        "mass_kappa_above_50": float(np.mean(draws[:, 1] > KAPPA_TAIL)),
        "max_kappa": float(draws[:, 1].max()),
        "warned": sorted({w.category.__name__ for w in caught
                          if issubclass(w.category, InferenceWarning)}),
        "wall_seconds": wall,
        **extra,
    }


def main(seeds: list[int], methods: tuple[str, ...] = METHODS) -> None:
    exact = ExactPosterior()
    exact_draws = exact.sample(2000, seed=99)
    rows = []
    previous = json.loads(OUT.read_text())["rows"] if OUT.exists() else []
    for seed in seeds:
        for method in methods:
            row = run(method, seed, exact_draws)
            print(json.dumps(row), flush=True)
            rows.append(row)
    keep = [r for r in previous if not (r["seed"] in seeds and r["method"] in methods)]
    result = {
        "benchmark": "hierarchical_methods (issue 39 item 6)",
        "problem": "beta-binomial group counts (12 groups of 30) + discrete Gaussian noise sigma 2",
        "exact": {"mean": exact_draws.mean(axis=0).tolist(), "sd": exact_draws.std(axis=0, ddof=1).tolist(),
                  "mass_kappa_above_50": exact.tail_mass(KAPPA_TAIL)},
        "rows": sorted(keep + rows, key=lambda r: (r["seed"], METHODS.index(r["method"]))),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    chosen = tuple(a for a in args if a in METHODS) or METHODS
    main([int(a) for a in args if a.isdigit()] or [1, 2, 3], chosen)
