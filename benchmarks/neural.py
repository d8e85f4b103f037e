"""Simulations and wall time to reach C2ST <= 0.6: SPPE, SPLE, SMC-ABC and sbi's NPE.

One run per method (Xiong et al. 2025 set-ups, reduced so that the whole benchmark runs in
minutes on a 2-core machine):

* Gaussian mean (n = 50, clamp [-2, 2], ε = 0.5, θ ~ N(0, 1)), observed s_dp = 0.6; reference:
  the exact private posterior (quadrature).
* SIR at ε = 10 (``--sir``; population reduced to K = 10^4 by default, see ``--population``),
  θ* = (-0.5, -3); reference: the exact private posterior by mechanism-density importance
  sampling (:func:`dpinfer.inference.mechanism_importance_sampling`: 20 000 θ-draws × 200 confidential
  simulations, about 8 minutes; or ``--sir-reference`` with a saved result of
  ``examples/private_data/sir_reference.py``). Two independent runs of it agree at C2ST 0.488.

Each sequential method is stopped after the first round (population for SMC-ABC) whose posterior
reaches C2ST <= 0.6 against 1000 reference draws (1000 posterior draws; metric time excluded).
Simulations counted: confidential simulations (an RQMC simulation with M privatised copies counts
once: the copies only cost mechanism evaluations). Wall time: simulation + training (+ MCMC).
sbi's NPE (``bench`` extra) runs sequential NPE-C (APT) with the mechanism inside the simulator
(one noise draw per simulation) and an NSF of the same size. All torch code uses one thread.

Targets (issue 6): SPPE needs <= 1/10 of SMC-ABC's simulations, and no more simulations or wall
time than sbi's NPE at equal accuracy.

SMC-ABC on SIR only approaches the exact posterior as its tolerance falls below the spread of the
privacy noise, so it may not reach the target within ``--sir-max-populations``; the JSON then
records its budget and final C2ST (the ratio to SPPE is then a lower bound).

Usage: ``python benchmarks/neural.py [--sir] [--max-rounds 6]``; writes benchmarks/results/neural.json.

``--vs-sbi`` instead runs the wall-time and accuracy comparison with sbi's NPE / NLE of issue 14
(:mod:`neural_vs_sbi`: Gaussian mean, n = 100, ε = 1, 3 × 1000 and 1 × 3000 simulations, exact
reference) and writes benchmarks/results/neural_vs_sbi.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dpinfer.diagnostics import c2st
from dpinfer.inference import ImportanceResult, mechanism_importance_sampling
from dpinfer.inference.neural import SPLE, SPPE, NeuralRunOptions
from dpinfer.inference.smc.schedule import QuantileSchedule
from dpinfer.inference.smc.smc_abc import smc_abc
from dpinfer.models import SIR, GaussianMean

TARGET = 0.6


class _Reached(Exception):
    pass


def _sequential(name: str, klass: Any, model: Any, obs: Any, ref: np.ndarray, kw: dict[str, Any]) -> dict:
    trace: list[dict[str, Any]] = []
    elapsed = [0.0]

    def cb(info: Any, post: Any) -> None:
        elapsed[0] += info.simulation_time + info.training_time
        draws = post.sample(1000, seed=info.round)
        score = c2st(draws, ref)
        trace.append(
            {
                "round": info.round,
                "simulations": info.n_simulations_total,
                "wall": elapsed[0],
                "c2st": score,
                "epochs": info.epochs,
            }
        )
        print(
            f"  {name} round {info.round}: {info.n_simulations_total} sims, {elapsed[0]:.1f} s, "
            f"C2ST {score:.3f}",
            flush=True,
        )
        if score <= TARGET:
            raise _Reached

    try:
        klass(model, run=NeuralRunOptions(callback=cb), **kw).fit(obs)
    except _Reached:
        pass
    return _summary(name, trace)


def _summary(name: str, trace: list[dict[str, Any]]) -> dict[str, Any]:
    hit = next((t for t in trace if t["c2st"] <= TARGET), None)
    return {
        "method": name,
        "reached": hit is not None,
        "simulations": None if hit is None else hit["simulations"],
        "wall_time": None if hit is None else hit["wall"],
        "final_c2st": trace[-1]["c2st"] if trace else None,
        "trace": trace,
    }


def run_smc(model: Any, obs: Any, ref: np.ndarray, particles: int, max_pop: int, seed: int) -> dict:
    t0 = time.perf_counter()
    res = smc_abc(
        model,
        obs,
        n_particles=particles,
        schedule=QuantileSchedule(alpha=0.5, max_populations=max_pop),
        backend="serial",
        seed=seed,
        batch_size=1000,
    )
    total = time.perf_counter() - t0
    trace, sims, wall = [], 0, 0.0
    rng = np.random.default_rng(seed)
    for p, (parts, w) in zip(res.populations, res.history, strict=True):
        sims += p.n_simulations
        wall += p.wall_time
        draws = parts[rng.choice(w.size, 1000, p=w)]
        score = c2st(draws, ref)
        trace.append(
            {"round": p.t, "simulations": sims, "wall": wall, "c2st": score, "tolerance": p.tolerance}
        )
        print(
            f"  SMC-ABC population {p.t}: {sims} sims, {wall:.1f} s, tol {p.tolerance:.3g}, C2ST {score:.3f}",
            flush=True,
        )
    out = _summary("SMC-ABC", trace)
    out["total_time"] = total
    return out


def run_sbi_npe(
    model: Any, obs: Any, ref: np.ndarray, n: int, rounds: int, seed: int, transforms: int
) -> dict:
    try:
        from sbi.inference import NPE
        from sbi.neural_nets import posterior_nn
    except ImportError:
        return {"method": "sbi NPE", "skipped": "sbi not installed (pip install -c constraints.txt sbi)"}
    torch.manual_seed(seed)
    prior_mean = torch.as_tensor(model.prior.mean, dtype=torch.float32)
    prior_cov = torch.as_tensor(model.prior.cov, dtype=torch.float32)
    prior = torch.distributions.MultivariateNormal(prior_mean, prior_cov)
    rng = np.random.default_rng(seed)
    inference = NPE(
        prior=prior,
        density_estimator=posterior_nn("nsf", hidden_features=50, num_transforms=transforms),
        show_progress_bars=False,
    )
    x_o = torch.as_tensor(np.asarray(obs, dtype=np.float32))[None]
    proposal: Any = prior
    trace: list[dict[str, Any]] = []
    sims, wall = 0, 0.0
    for r in range(rounds):
        t0 = time.perf_counter()
        theta = proposal.sample((n,)).reshape(n, -1)
        x = model.simulate(theta.double().numpy(), rng)  # mechanism inside the simulator
        t1 = time.perf_counter()
        inference.append_simulations(theta, torch.as_tensor(x, dtype=torch.float32), proposal=proposal).train(
            training_batch_size=100,
            learning_rate=5e-4,
            stop_after_epochs=20,
            validation_fraction=0.05,
            show_train_summary=False,
        )
        posterior = inference.build_posterior().set_default_x(x_o)
        t2 = time.perf_counter()
        sims += n
        wall += t2 - t0
        draws = posterior.sample((1000,), show_progress_bars=False).double().numpy()
        score = c2st(draws, ref)
        trace.append({"round": r, "simulations": sims, "wall": wall, "c2st": score, "sim_time": t1 - t0})
        print(f"  sbi NPE round {r}: {sims} sims, {wall:.1f} s, C2ST {score:.3f}", flush=True)
        if score <= TARGET:
            break
        proposal = posterior
    return _summary("sbi NPE", trace)


def benchmark(
    name: str, model: Any, obs: Any, ref: np.ndarray, args: argparse.Namespace, n: int, max_pop: int
) -> dict:
    print(f"{name}:", flush=True)
    flow = {"kind": "nsf", "transforms": args.transforms, "hidden": 50, "blocks": 2, "bins": 10}
    common = {
        "flow": flow,
        "rounds": args.max_rounds,
        "simulations_per_round": n,
        "rqmc_points": args.rqmc_points,
        "seed": args.seed,
        "training": {"max_epochs": args.max_epochs},
    }
    results = [
        _sequential("SPPE", SPPE, model, obs, ref, {**common, "atoms": 10}),
        _sequential("SPLE", SPLE, model, obs, ref, common),
        run_smc(model, obs, ref, args.particles, max_pop, args.seed),
        run_sbi_npe(model, obs, ref, n, args.max_rounds, args.seed, args.transforms),
    ]
    by = {r["method"]: r for r in results}
    sppe = by["SPPE"]
    ratios: dict[str, Any] = {}
    if sppe.get("reached"):
        for other in ("SMC-ABC", "sbi NPE", "SPLE"):
            o = by.get(other, {})
            if o.get("reached"):
                ratios[f"{other} / SPPE simulations"] = o["simulations"] / sppe["simulations"]
                ratios[f"{other} / SPPE wall time"] = o["wall_time"] / sppe["wall_time"]
            elif o.get("trace"):  # did not reach the target: its whole budget is a lower bound
                last = o["trace"][-1]
                ratios[f"{other} / SPPE simulations (lower bound, not reached)"] = (
                    last["simulations"] / sppe["simulations"]
                )
    print(f"\n{name}: simulations and wall time to C2ST <= {TARGET}")
    print(f"{'method':>10s} {'reached':>8s} {'simulations':>12s} {'wall (s)':>9s} {'final C2ST':>10s}")
    for r in results:
        if "skipped" in r:
            print(f"{r['method']:>10s}  skipped: {r['skipped']}")
            continue
        sims = "-" if r["simulations"] is None else str(r["simulations"])
        wall = "-" if r["wall_time"] is None else f"{r['wall_time']:.1f}"
        print(f"{r['method']:>10s} {str(r['reached']):>8s} {sims:>12s} {wall:>9s} {r['final_c2st']:>10.3f}")
    for k, v in ratios.items():
        print(f"  {k}: {v:.2f}")
    return {"results": results, "ratios": ratios}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sir", action="store_true", help="also run SIR at epsilon 10 (slow)")
    p.add_argument("--population", type=int, default=10_000, help="SIR population K (paper: 10^6)")
    p.add_argument("--max-rounds", type=int, default=6)
    p.add_argument("--simulations", type=int, default=200, help="simulations per round, Gaussian mean")
    p.add_argument("--sir-simulations", type=int, default=500, help="simulations per round, SIR")
    p.add_argument("--sir-max-populations", type=int, default=14, help="SMC-ABC populations, SIR")
    p.add_argument(
        "--sir-reference",
        default=None,
        help="an ImportanceResult .npz for the same release (examples/private_data/sir_reference.py)",
    )
    p.add_argument("--rqmc-points", type=int, default=4)
    p.add_argument("--transforms", type=int, default=5)
    p.add_argument("--max-epochs", type=int, default=300)
    p.add_argument("--particles", type=int, default=1000)
    p.add_argument("--max-populations", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "neural.json"))
    p.add_argument("--vs-sbi", action="store_true", help="SPPE/SPLE vs sbi NPE/NLE wall time (issue 14)")
    args, rest = p.parse_known_args()
    if args.vs_sbi:
        from neural_vs_sbi import main as vs_sbi

        vs_sbi(rest)
        return
    if rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    torch.set_num_threads(1)

    out: dict[str, Any] = {
        "machine": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "settings": vars(args),
        "target_c2st": TARGET,
    }
    gm = GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5)
    obs = [0.6]
    ref = gm.exact_posterior(obs).sample(1000, seed=123)
    out["gaussian_mean"] = benchmark(
        "Gaussian mean (eps 0.5)", gm, obs, ref, args, args.simulations, args.max_populations
    )
    if args.sir:
        sir = SIR(population=args.population, epsilon=10.0)
        conf = sir.simulate_confidential(np.array([[-0.5, -3.0]]), np.random.default_rng(2025))[0]
        obs_sir = sir.mechanism.G(
            conf, np.random.default_rng(2026).random(sir.noise_dim)
        )  # synthetic release
        if args.sir_reference:
            reference = ImportanceResult.load(args.sir_reference)
            if not np.allclose(reference.observed, obs_sir):
                raise SystemExit(f"{args.sir_reference} was computed for another observed release.")
            ref_wall = None
        else:
            print("SIR reference: mechanism-density importance sampling ...", flush=True)
            t0 = time.perf_counter()
            reference = mechanism_importance_sampling(
                sir, obs_sir, n_theta=20_000, n_inner=200, pilot_theta=10_000, pilot_inner=20, seed=11
            )
            ref_wall = time.perf_counter() - t0
        print(reference.summary(), flush=True)
        ref_sir = reference.sample(1000, seed=1)
        out["sir_reference"] = {
            "method": "mechanism-density importance sampling (exact in the limit)",
            "simulations": reference.n_simulations,
            "wall_time": ref_wall,
            "ess": reference.ess,
            "pareto_k": reference.khat,
            "mean": reference.mean().tolist(),
            "sd": reference.sd().tolist(),
            "observed": np.asarray(obs_sir).tolist(),
            "population": args.population,
        }
        out["sir"] = benchmark(
            f"SIR K={args.population} (eps 10)",
            sir,
            obs_sir,
            ref_sir,
            args,
            args.sir_simulations,
            args.sir_max_populations,
        )
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
