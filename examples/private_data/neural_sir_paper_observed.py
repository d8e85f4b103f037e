"""SPPE and SPLE on the authors' observed SIR releases, with per-round wall times (Xiong et al. 2025,
Fig. 1-B / Table 1 at ε = 10, Fig. 8 at ε = 1 and 0.1, Fig. 2-A on the real outbreaks).

The observed private statistics are read from the authors' values (``xiong_observed_private_stats.csv``,
long format): ``--epsilon`` picks the synthetic release (K = 10^6, N = 1000, θ* = (-0.5, -3)), and
``--outbreak NAME`` (e.g. ``flu``, ``guinea``, ``liberia``, ``sierra``, ``covid``) picks a real
outbreak instead (:meth:`dpinfer.models.SIR.real_outbreak`: K = 10^5, N = 100, prior N((-2, -3), I)).

After every round the script records the simulation and training time, the epochs, the process CPU
time (the honest cost on a shared machine, where wall time depends on the load), and the
posterior mean, sd and 95% interval of (log β, log γ) and R0 = β/γ from 1000 draws, appending one
row to ``neural_sir_paper_observed.csv`` (so an interrupted run keeps its finished rounds). At the
end of a run with both methods it records the C2ST between the final SPPE and SPLE posteriors. There
is no exact reference at K = 10^6 here: the mechanism-density importance sampler of
``sir_reference.py`` needs about 4 million simulations (hours with the exact simulator at this K).

Defaults are the paper's 10 rounds of 1000 simulations with the exact Gillespie simulator, M = 4
and a 5-transform spline flow; ``--simulator hybrid`` uses the exact-then-tau-leaping simulator of
``sir_fast_simulator.py`` (an approximation, validated there by C2ST against the exact one).
``--methods SPPE-T`` runs SPPE with truncated proposals (dpinfer's default, TSNPE); ``SPPE`` is
the paper's atomic APT (``proposal="apt"``).

    python examples/private_data/neural_sir_paper_observed.py --epsilon 10 --out examples/private_data/out
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np
import torch

from dpinfer.diagnostics import c2st
from dpinfer.inference.neural import SPLE, SPPE, NeuralRunOptions
from dpinfer.models import SIR

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
FIELDS = [
    "setting", "method", "round", "simulations", "epochs", "simulation_s", "training_s", "wall_s", "cpu_s",
    "log_beta_mean", "log_beta_sd", "log_beta_lo", "log_beta_hi", "log_gamma_mean", "log_gamma_sd",
    "log_gamma_lo", "log_gamma_hi", "r0_median", "r0_lo", "r0_hi",
]  # fmt: skip


def read_sir_observed(path: Path, epsilon: float | None, outbreak: str | None) -> tuple[str, np.ndarray]:
    """The authors' observed SIR release: synthetic at ``epsilon``, or the real ``outbreak``."""
    vals: dict[int, float] = {}
    setting = ""
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if outbreak is None and row["experiment"] == "sir" and float(row["epsilon"]) == epsilon:
                setting = f"synthetic eps={epsilon:g}"
            elif outbreak is not None and row["experiment"] == "sir_real" and outbreak in row["setting"]:
                setting = row["setting"]
            else:
                continue
            vals[int(row["stat_index"])] = float(row["value"])
    if not vals:
        raise SystemExit(f"no SIR release for epsilon={epsilon} / outbreak={outbreak!r} in {path}")
    return setting, np.array([vals[i] for i in sorted(vals)])


def summary(draws: np.ndarray) -> dict[str, float]:
    out: dict[str, float] = {}
    for i, n in enumerate(("log_beta", "log_gamma")):
        lo, hi = np.quantile(draws[:, i], [0.025, 0.975])
        out.update(
            {f"{n}_mean": draws[:, i].mean(), f"{n}_sd": draws[:, i].std(), f"{n}_lo": lo, f"{n}_hi": hi}
        )
    r0 = np.exp(draws[:, 0] - draws[:, 1])
    out["r0_median"], out["r0_lo"], out["r0_hi"] = np.quantile(r0, [0.5, 0.025, 0.975])
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="examples/private_data/out")
    p.add_argument("--observed", default=str(DATA / "xiong_observed_private_stats.csv"))
    p.add_argument("--epsilon", type=float, default=10.0)
    p.add_argument("--outbreak", default=None, help="real outbreak (substring of the CSV setting)")
    p.add_argument("--population", type=int, default=None, help="K (default 10^6 synthetic, 10^5 real)")
    p.add_argument("--simulator", default="exact", choices=["exact", "hybrid"])
    p.add_argument("--methods", default="SPPE,SPLE", help="any of SPPE, SPPE-T (truncated proposals), SPLE")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--simulations", type=int, default=1000)
    p.add_argument("--rqmc-points", type=int, default=4)
    p.add_argument("--transforms", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--no-dequantize",
        dest="dequantize",
        action="store_false",
        help="train on the raw binomial lattice values (the paper's code) instead of dequantized ones",
    )
    args = p.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    setting, obs = read_sir_observed(Path(args.observed), args.epsilon, args.outbreak)
    if args.outbreak is None:
        model = SIR(population=args.population or 1_000_000, epsilon=args.epsilon, simulator=args.simulator)
    else:
        model = SIR.real_outbreak(population=args.population or 100_000, simulator=args.simulator)
    raw = "" if args.dequantize else ", raw lattice"
    setting = f"{setting}, K={model.population}, {args.simulator}{raw}"
    print(f"{setting}: observed {obs.tolist()}", flush=True)
    out_csv = out / "neural_sir_paper_observed.csv"
    new = not out_csv.exists()
    fh = open(out_csv, "a", newline="")  # noqa: SIM115 - appended to after every round
    w = csv.DictWriter(fh, fieldnames=FIELDS)
    if new:
        w.writeheader()
    flow = {"kind": "nsf", "transforms": args.transforms, "hidden": 50, "blocks": 2, "bins": 10}
    finals = {}
    methods = (
        ("SPPE", SPPE, {"atoms": 10, "proposal": "apt"}),  # the paper's Algorithm 1
        ("SPPE-T", SPPE, {"atoms": 10, "proposal": "truncated"}),
        ("SPLE", SPLE, {}),
    )
    for name, cls, kw in methods:
        if name not in args.methods.split(","):
            continue
        start, cpu0 = time.perf_counter(), time.process_time()

        def callback(info, post, name=name, start=start, cpu0=cpu0):
            row = {
                "setting": setting,
                "method": name,
                "round": info.round,
                "simulations": info.n_simulations_total,
                "epochs": info.epochs,
                "simulation_s": info.simulation_time,
                "training_s": info.training_time,
                "wall_s": time.perf_counter() - start,
                "cpu_s": time.process_time() - cpu0,
                **summary(post.sample(1000, seed=info.round)),
            }
            w.writerow(row)
            fh.flush()
            est = ", ".join(
                f"{k} {row[k + '_mean']:.3f} ({row[k + '_lo']:.3f}, {row[k + '_hi']:.3f})"
                for k in ("log_beta", "log_gamma")
            )
            print(
                f"{name} round {info.round}: {row['simulations']} sims, {info.epochs} epochs, "
                f"sim {info.simulation_time:.0f} s, train {info.training_time:.0f} s, "
                f"wall {row['wall_s']:.0f} s, CPU {row['cpu_s']:.0f} s; {est}, "
                f"R0 {row['r0_median']:.2f} ({row['r0_lo']:.2f}, {row['r0_hi']:.2f})",
                flush=True,
            )

        post = cls(
            model,
            flow=flow,
            rounds=args.rounds,
            simulations_per_round=args.simulations,
            rqmc_points=args.rqmc_points,
            run=NeuralRunOptions(callback=callback),
            seed=args.seed,
            dequantize="auto" if args.dequantize else False,
            **kw,
        ).fit(obs)
        finals[name] = post.sample(2000, seed=args.seed)
        print(f"{name}: {args.rounds} rounds in {time.perf_counter() - start:.0f} s", flush=True)
    fh.close()
    names = list(finals)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            print(f"C2ST final {a} vs {b}: {c2st(finals[a], finals[b]):.3f}", flush=True)


if __name__ == "__main__":
    main()
