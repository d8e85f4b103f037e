"""Default ``rounds="auto"`` against the paper's 10 rounds x 1000 (issue 27): accuracy and wall time.

On the two problems of ``tests/user_problems.py`` that are not shipped models and have exact
references (a Poisson clamped sum under Laplace noise; two clamped Gaussian means released
together), each method runs twice with one seed: with its defaults (``rounds="auto"``: rounds of
1000 until a round moves the posterior by at most 0.1 posterior sd, within the default budget of
5000 simulations) and with ``rounds=10, simulations_per_round=1000`` (the paper). Accuracy: C2ST
of 2000 posterior draws against 2000 exact draws, and the mean error and sd ratio per parameter.
Wall time: from the first simulation to the 2000 draws. One torch thread.

``--problems sir`` adds a harder problem: the synthetic SIR release of
``examples/private_data/sir_reference.py`` (K = 10^4, ε = 10), its reference 1000 draws of the
mechanism-density importance sampler (10 000 θ × 100, seed 11; exact up to Monte Carlo error),
C2ST of 1000 against 1000 draws.

Usage: ``python benchmarks/neural_rounds.py [--methods sppe,sple] [--problems user,sir] [--seed 0]``;
updates ``results/neural_rounds.json``: a row replaces the row of the same problem, method and
setting and records the machine it ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dpinfer.diagnostics.metrics import c2st
from dpinfer.inference.neural import SPLE, SPPE

SETTINGS = {"default (auto)": {}, "paper (10 x 1000)": {"rounds": 10, "simulations_per_round": 1000}}


def run(klass: Any, model: Any, obs: list[float], ref: np.ndarray, seed: int, **kw: Any) -> dict[str, Any]:
    t0 = time.perf_counter()
    post = klass(model, seed=seed, **kw).fit(obs)
    d = post.sample(ref.shape[0], seed=seed + 1).reshape(ref.shape[0], -1)
    wall = time.perf_counter() - t0
    return {
        "wall_time": wall,
        "rounds": len(post.rounds),
        "n_simulations": post.n_simulations,
        "stopped": post.settings.get("stopped"),
        "epochs": [r.epochs for r in post.rounds],
        "shift_sd": [r.extra.get("shift_sd") for r in post.rounds],
        "c2st": float(c2st(d, ref, seed=seed)),
        "mean_error_in_sd": ((d.mean(0) - ref.mean(0)) / ref.std(0)).tolist(),
        "sd_ratio": (d.std(0) / ref.std(0)).tolist(),
        "warnings": [w["category"] for w in post.settings.get("diagnostics", [])],
    }


def _sir_problem(draws: int) -> tuple[str, Any, Any, np.ndarray]:
    """(name, model, observed, reference draws) of the SIR release (module docstring)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "private_data"))
    from sir_reference import benchmark_reference, synthetic_release

    model, obs = synthetic_release(10_000)
    ref = benchmark_reference(model, obs).sample(min(draws, 1000), seed=5)
    return "sir-K10000-eps10", model, obs, ref


def main(argv: list[str] | None = None) -> None:
    from neural_vs_sbi import _user_problems

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--methods", default="sppe", help="comma-separated: sppe, sple")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--draws", type=int, default=2000)
    p.add_argument("--problems", default="user", help="comma-separated: user (the two), sir")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "neural_rounds.json"))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    table: list[dict[str, Any]] = []
    kinds = args.problems.split(",")
    problems = []
    if "user" in kinds:
        problems = [(n, m, o, e(args.draws, args.seed + 100)) for n, m, o, e in _user_problems()]
    if "sir" in kinds:
        problems.append(_sir_problem(args.draws))
    for name, model, obs, ref in problems:
        SPPE(model, rounds=1, simulations_per_round=40, training={"max_epochs": 1}, seed=0).fit(obs)
        for method in args.methods.split(","):
            klass = {"sppe": SPPE, "sple": SPLE}[method]
            for label, kw in SETTINGS.items():
                r = run(klass, model, obs, ref, args.seed, **kw)
                r.update(problem=name, method=method, setting=label, machine=platform.platform(),
                         load_average=list(os.getloadavg()))  # fmt: skip
                table.append(r)
                print(
                    f"{name:20s} {method} {label:18s} rounds {r['rounds']:2d} ({r['stopped']}) "
                    f"wall {r['wall_time']:7.1f} s  C2ST {r['c2st']:.3f}  "
                    f"mean err {np.round(r['mean_error_in_sd'], 3)} sd  "
                    f"sd ratio {np.round(r['sd_ratio'], 3)}",
                    flush=True,
                )
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = json.loads(path.read_text()) if path.exists() else {}
    key = {(r["problem"], r["method"], r["setting"]) for r in table}
    kept = [r for r in out.get("table", []) if (r["problem"], r["method"], r["setting"]) not in key]
    for r in kept:  # rows from an earlier run keep the machine it recorded
        r.setdefault("machine", out.get("machine"))
    out.update(table=kept + table, seed=args.seed, draws=args.draws, torch=torch.__version__,
               torch_threads=1, device="cpu")  # fmt: skip
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
