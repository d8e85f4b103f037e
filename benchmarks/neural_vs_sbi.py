"""SPPE / SPLE against sbi's NPE / NLE: wall time and accuracy on one Gaussian-mean release.

Problem (issue 14): θ ~ N(0, 1), n = 100 records x_i ~ N(θ, 1) clamped to [-2, 2], their mean
released by the Laplace mechanism at ε = 1 (sensitivity 4/n); observed release s_dp = 0.5.
Reference: the exact private posterior by quadrature (``GaussianMean.exact_posterior``).

Two protocols, each with the same number of confidential simulations for every method:

* ``sequential``: 3 rounds × 1000 simulations (round r > 0 simulates at the current posterior);
* ``one-round``: 3000 prior simulations (amortised).

dpinfer privatises each simulated confidential mean M = 8 times (nested RQMC, the paper's method;
the row "SPPE M=4" uses 4 copies; "SPPE all copies" trains on all M copies in every step with
patience 5, the fast preset before ``copies_per_step=1``, patience 10; "SPPE APT", sequential
protocol only, uses the paper's atomic APT instead of the default truncated proposals);
sbi gets the mechanism inside the simulator (one noise draw per simulation) and its defaults
(sbi 0.27: NPE and NLE default to a MAF density estimator, 5 transforms of 50 hidden units; NPE uses
the atomic loss in later rounds; NLE samples by slice-sampling MCMC). Wall time:
everything from the first simulation to 4000 posterior draws (so MCMC counts for SPLE and NLE).
Accuracy of those 4000 draws: posterior sd / exact sd and |mean - exact mean| / exact sd.
torch uses one thread; all methods run one after another in one process. CPU time (process time)
is recorded beside wall time because the benchmark machine is shared: its ratios are less
sensitive to other load.

Run from benchmarks/neural.py (``--vs-sbi``) or directly; writes ``results/neural_vs_sbi.json``.

``--user-problems`` (issue 27, item 3): the defaults at the user's budget. On two problems that are
not shipped models, with exact references (``tests/user_problems.py``: a Poisson clamped sum under
Laplace noise, exact by enumerating the clamped sum's pmf; two clamped Gaussian means released
together, exact by quadrature of each factor), ``SPPE(model, simulations=B)`` and
``SPLE(model, simulations=B)`` with every other option at its default (``rounds="auto"``) against
sbi's ``NPE`` / ``NLE`` with their defaults on the same ``B`` prior simulations (one round, sbi's
documented use). Accuracy: C2ST (:func:`dpinfer.diagnostics.metrics.c2st`) of 2000 posterior
draws against 2000 exact draws. Its results go under ``"user_problems"`` in the same JSON (the
other keys are kept; ``--seed S`` other than 0 writes ``"user_problems_seedS"``).

``--step-timing``: the cost of one default-flow (NSF, 5 transforms) training step and of one
MCMC-sized evaluation, with zuko's own ``flow(c).log_prob`` against
:meth:`~dpinfer.inference.neural.flows.ConditionalFlow.flow_log_prob` (the same density, fewer
tensor operations) and sbi's default MAF; median of repeated timings (CPU time, one thread), so
less sensitive to other load than a whole fit. Results under ``"step_timing"``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dpinfer.inference.neural import SPLE, SPPE
from dpinfer.models import GaussianMean

PROTOCOLS = {"sequential": (3, 1000), "one-round": (1, 3000)}
BEFORE = {"copies_per_step": None, "patience": 5}  # the fast preset before issue 14's second pass


def _accuracy(draws: np.ndarray, exact: Any) -> dict[str, float]:
    d = np.asarray(draws, dtype=np.float64).reshape(-1)
    return {
        "sd_ratio": float(d.std() / exact.sd),
        "mean_error_in_sd": float(abs(d.mean() - exact.mean) / exact.sd),
        "mean": float(d.mean()),
        "sd": float(d.std()),
    }


def run_dpinfer(
    klass: Any,
    model: Any,
    obs: list[float],
    rounds: int,
    n: int,
    seed: int,
    training: Any,
    m: int = 8,
    **kwargs: Any,
) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    est = klass(
        model, rounds=rounds, simulations_per_round=n, seed=seed, training=training, rqmc_points=m, **kwargs
    )
    post = est.fit(obs)
    draws = post.sample(4000, seed=seed + 1)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "wall_time": wall,
        "cpu_time": cpu,
        "draws": draws,
        "epochs": [r.epochs for r in post.rounds],
        "training_time": sum(r.training_time for r in post.rounds),
    }


def run_sbi(
    kind: str, model: Any, obs: list[float], rounds: int, n: int, seed: int, draws: int = 4000
) -> dict:
    from sbi.inference import NLE, NPE

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    mean, cov = (torch.as_tensor(a, dtype=torch.float32) for a in (model.prior.mean, model.prior.cov))
    prior = torch.distributions.MultivariateNormal(mean, cov)
    x_o = torch.as_tensor(np.asarray(obs, dtype=np.float32))[None]
    t0, c0 = time.perf_counter(), time.process_time()
    inference = (NPE if kind == "npe" else NLE)(prior=prior, show_progress_bars=False)
    proposal: Any = prior
    epochs = []
    for _ in range(rounds):
        theta = proposal.sample((n,), **({} if proposal is prior else {"show_progress_bars": False}))
        theta = theta.reshape(n, -1)
        x = torch.as_tensor(model.simulate(theta.double().numpy(), rng), dtype=torch.float32)
        if kind == "npe":
            inference.append_simulations(theta, x, proposal=proposal)
        else:
            inference.append_simulations(theta, x)
        with contextlib.redirect_stdout(io.StringIO()):  # sbi prints "converged after ..." itself
            inference.train(show_train_summary=False)
        epochs.append(int(inference._summary["epochs_trained"][-1]))
        proposal = inference.build_posterior().set_default_x(x_o)
    samples = proposal.sample((draws,), show_progress_bars=False).double().numpy()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall_time": wall, "cpu_time": cpu, "draws": samples, "epochs": epochs}


def compare(
    seed: int = 0, observed: float = 0.5, training: Any = None, protocols: tuple[str, ...] = ()
) -> dict:
    """Run every method under every protocol; print a table and return the results."""
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    model = GaussianMean(n=100, clamp=(-2.0, 2.0), epsilon=1.0)
    obs = [observed]
    # one-off imports (torch's optimiser wrappers load torch._dynamo on the first step) before timing
    SPPE(model, rounds=1, simulations_per_round=40, training={"max_epochs": 1}, seed=seed).fit(obs)
    exact = model.exact_posterior(obs)
    out: dict[str, Any] = {"exact": {"mean": exact.mean, "sd": exact.sd}, "protocols": {}}
    for name in protocols or tuple(PROTOCOLS):
        rounds, n = PROTOCOLS[name]
        # the fast preset before copies_per_step: all M copies in every step, patience 5
        all_copies = {"preset": training or "fast", "copies_per_step": None, "patience": 5}
        res: dict[str, Any] = {}
        try:
            import sbi  # noqa: F401

            have_sbi = True
        except ImportError:
            have_sbi = False
        runs: list[tuple[str, Any, tuple[Any, ...]]] = [
            ("SPPE", run_dpinfer, (SPPE, model, obs, rounds, n, seed, training)),
            ("SPLE", run_dpinfer, (SPLE, model, obs, rounds, n, seed, training)),
            ("SPPE M=4", run_dpinfer, (SPPE, model, obs, rounds, n, seed, training, 4)),
            ("SPPE all copies", run_dpinfer, (SPPE, model, obs, rounds, n, seed, all_copies)),
        ]
        if rounds > 1:  # the paper's atomic APT beside the default truncated proposals
            apt_args = (SPPE, model, obs, rounds, n, seed, training)
            runs.append(("SPPE APT", lambda *a: run_dpinfer(*a, proposal="apt"), apt_args))
        if have_sbi:
            runs += [
                ("sbi NPE", run_sbi, ("npe", model, obs, rounds, n, seed)),
                ("sbi NLE", run_sbi, ("nle", model, obs, rounds, n, seed)),
            ]
        for label, fn, fn_args in runs:
            r = fn(*fn_args)
            r.update(_accuracy(r.pop("draws"), exact))
            res[label] = r
            print(
                f"  [{name}] {label:15s} wall {r['wall_time']:7.2f} s  cpu {r['cpu_time']:6.2f} s  "
                f"sd ratio {r['sd_ratio']:.3f}  "
                f"|mean err| {r['mean_error_in_sd']:.3f} sd  epochs {r['epochs']}",
                flush=True,
            )
        ratios = {}
        pairs = (("SPPE", "sbi NPE"), ("SPLE", "sbi NLE"), ("SPPE M=4", "sbi NPE"),
                 ("SPPE all copies", "sbi NPE"), ("SPPE APT", "sbi NPE"))
        for ours, theirs in pairs:
            if theirs in res and ours in res:
                for kind in ("wall", "cpu"):
                    ratios[f"{ours} / {theirs} {kind} time"] = (
                        res[ours][f"{kind}_time"] / res[theirs][f"{kind}_time"]
                    )
        for k, v in ratios.items():
            print(f"  [{name}] {k}: {v:.2f}  (target <= 1.5)")
        out["protocols"][name] = {
            "rounds": rounds,
            "simulations_per_round": n,
            "results": res,
            "ratios": ratios,
        }
    return out


def seed_sweep(seeds: list[int], protocol: str = "one-round", observed: float = 0.5) -> dict:
    """SPPE (fast preset), SPPE on all copies per step (patience 5) and sbi NPE, one after another for each
    seed (one process, one thread): per-seed CPU-time ratios and accuracies."""
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    model = GaussianMean(n=100, clamp=(-2.0, 2.0), epsilon=1.0)
    obs = [observed]
    SPPE(model, rounds=1, simulations_per_round=40, training={"max_epochs": 1}, seed=0).fit(obs)
    run_sbi("npe", model, obs, 1, 100, 0)  # sbi's one-off imports before timing
    exact = model.exact_posterior(obs)
    rounds, n = PROTOCOLS[protocol]
    rows = []
    for seed in seeds:
        runs = [
            ("SPPE", run_dpinfer, (SPPE, model, obs, rounds, n, seed, None)),
            ("SPPE all copies", run_dpinfer, (SPPE, model, obs, rounds, n, seed, BEFORE)),
            ("sbi NPE", run_sbi, ("npe", model, obs, rounds, n, seed)),
        ]
        for label, fn, fn_args in runs:
            r = fn(*fn_args)
            r.update(_accuracy(r.pop("draws"), exact), label=label, seed=seed)
            rows.append(r)
            print(
                f"  [{protocol} seed {seed}] {label:15s} cpu {r['cpu_time']:6.2f} s  "
                f"sd ratio {r['sd_ratio']:.3f}  |mean err| {r['mean_error_in_sd']:.3f} sd",
                flush=True,
            )
    summary: dict[str, Any] = {}
    sbi_cpu = {r["seed"]: r["cpu_time"] for r in rows if r["label"] == "sbi NPE"}
    for label in ("SPPE", "SPPE all copies", "sbi NPE"):
        mine = [r for r in rows if r["label"] == label]
        ratios = [r["cpu_time"] / sbi_cpu[r["seed"]] for r in mine]
        summary[label] = {
            "cpu_time_median": float(np.median([r["cpu_time"] for r in mine])),
            "cpu_ratio_to_sbi_npe": ratios,
            "mean_abs_sd_ratio_minus_1": float(np.mean([abs(r["sd_ratio"] - 1) for r in mine])),
            "mean_abs_mean_error_in_sd": float(np.mean([r["mean_error_in_sd"] for r in mine])),
        }
        print(f"  {label:15s} {summary[label]}")
    return {"protocol": protocol, "seeds": seeds, "rows": rows, "summary": summary}


def _user_problems() -> list[tuple[str, Any, list[float], Any]]:
    """(name, model, observed, exact sampler ``f(n, seed) -> (n, dim)``) of tests/user_problems.py."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from user_problems import PoissonClampedSum, TwoClampedMeans

    pois = PoissonClampedSum()
    ep = pois.exact_posterior([110.0])
    two = TwoClampedMeans()
    et = two.exact_marginals([0.5, -0.8])

    def two_sample(n: int, seed: int) -> np.ndarray:
        return np.concatenate([e.sample(n, seed + j) for j, e in enumerate(et)], axis=1)

    return [
        ("poisson-clamped-sum", pois, [110.0], lambda n, seed: ep.sample(n, seed)),
        ("two-clamped-means", two, [0.5, -0.8], two_sample),
    ]


def user_problems(budget: int = 3000, seed: int = 0, draws: int = 2000) -> dict[str, Any]:
    """Defaults at the user's budget: SPPE / SPLE (``simulations=budget``) against sbi NPE / NLE
    (one round of ``budget`` prior simulations); wall and CPU time and C2ST to the exact posterior."""
    from dpinfer.diagnostics.metrics import c2st

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    out: dict[str, Any] = {"budget": budget, "seed": seed, "draws": draws, "problems": {}}
    for name, model, obs, exact in _user_problems():
        # one-off imports before timing
        SPPE(model, rounds=1, simulations_per_round=40, training={"max_epochs": 1}, seed=seed).fit(obs)
        run_sbi("npe", model, obs, 1, 100, seed)
        ref = exact(draws, seed + 100)
        res: dict[str, Any] = {}
        for label in ("SPPE", "sbi NPE", "SPLE", "sbi NLE"):
            if label.startswith("sbi"):
                r = run_sbi(label[4:].lower(), model, obs, 1, budget, seed, draws)
            else:
                r = _dpinfer_default(SPPE if label == "SPPE" else SPLE, model, obs, budget, seed, draws)
            d = np.asarray(r.pop("draws"), dtype=np.float64).reshape(draws, -1)
            r["c2st"] = float(c2st(d, ref, seed=seed))
            r["mean_error_in_sd"] = ((d.mean(0) - ref.mean(0)) / ref.std(0)).tolist()
            r["sd_ratio"] = (d.std(0) / ref.std(0)).tolist()
            res[label] = r
            print(
                f"  [{name}] {label:8s} wall {r['wall_time']:7.2f} s  cpu {r['cpu_time']:6.2f} s  "
                f"C2ST {r['c2st']:.3f}  epochs {r['epochs']}  {r.get('stopped', '')}",
                flush=True,
            )
        ratios = {
            f"{a} / {b} {k} time": res[a][f"{k}_time"] / res[b][f"{k}_time"]
            for a, b in (("SPPE", "sbi NPE"), ("SPLE", "sbi NLE"))
            for k in ("wall", "cpu")
        }
        for k, v in ratios.items():
            print(f"  [{name}] {k}: {v:.2f}  (target <= 1.5)", flush=True)
        out["problems"][name] = {"results": res, "ratios": ratios}
    return out


def _median_ms(fns: dict[str, Any], n: int, repeats: int) -> dict[str, float]:
    """Median over ``repeats`` of the mean CPU milliseconds of ``n`` calls of each function; the
    functions take turns within each repeat, so a change of machine load hits them alike."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        for _ in range(3):
            fn()
    for _ in range(repeats):
        for k, fn in fns.items():
            c0 = time.process_time()
            for _ in range(n):
                fn()
            times[k].append((time.process_time() - c0) / n * 1e3)
    return {k: float(np.median(v)) for k, v in times.items()}


def _time_flow(dims: tuple[int, int], repeats: int, steps: int) -> dict[str, float]:
    from dpinfer.inference.neural.flows import ConditionalFlow, FlowConfig
    from dpinfer.inference.neural.training import TrainingConfig, _adam

    torch.manual_seed(0)
    flow = ConditionalFlow(FlowConfig(), *dims)
    th, x = torch.randn(200, dims[0]), torch.randn(200, dims[1])
    params = list(flow.parameters())
    opt = _adam(params, TrainingConfig())
    evaluators = {"zuko": lambda a, c: flow.flow(c).log_prob(a), "dpinfer": flow.flow_log_prob}
    fns: dict[str, Any] = {}
    for label, lp in evaluators.items():

        def step(lp: Any = lp) -> None:
            opt.zero_grad(set_to_none=True)
            (-lp(th, x).mean()).backward()
            torch.nn.utils.clip_grad_norm_(params, 5.0, foreach=True)
            opt.step()

        def evaluate(lp: Any = lp) -> None:
            with torch.inference_mode():
                lp(th[:100], x[:100])

        fns[f"{label} step ms"] = step
        fns[f"{label} eval ms"] = evaluate
    try:
        from sbi.neural_nets import posterior_nn
    except ImportError:  # pragma: no cover - sbi is optional
        return _median_ms(fns, steps, repeats)
    net = posterior_nn("maf")(th, x)
    sbi_params = list(net.parameters())
    sbi_opt = torch.optim.Adam(sbi_params, lr=5e-4)

    def sbi_step() -> None:
        sbi_opt.zero_grad(set_to_none=True)
        net.loss(th, x).mean().backward()
        torch.nn.utils.clip_grad_norm_(sbi_params, 5.0)
        sbi_opt.step()

    def sbi_evaluate() -> None:
        with torch.inference_mode():
            net.log_prob(th[None, :100], x[:100])

    fns["sbi maf step ms"] = sbi_step
    fns["sbi maf eval ms"] = sbi_evaluate
    return _median_ms(fns, steps, repeats)


def step_timing(repeats: int = 9, steps: int = 30) -> dict[str, Any]:
    """Median CPU milliseconds of one training step (forward, backward, clipping, Adam) on a
    minibatch of 200 and of one no-grad evaluation of 100 points, for the default NSF evaluated by
    zuko and by ``flow_log_prob``, on (features, context) = (1, 1) and (2, 2), and for sbi's
    default MAF (``posterior_nn("maf")``, the same minibatch)."""
    torch.set_num_threads(1)
    out: dict[str, Any] = {"batch": 200, "eval_points": 100, "repeats": repeats, "steps": steps}
    for dims in ((1, 1), (2, 2)):
        row = _time_flow(dims, repeats, steps)
        out[f"features={dims[0]}, context={dims[1]}"] = row
        print(f"  step timing {dims}: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()), flush=True)
    return out


def _dpinfer_default(klass: Any, model: Any, obs: list[float], budget: int, seed: int, draws: int) -> dict:
    """``klass(model, simulations=budget, seed=seed)``: every other option at its default."""
    t0, c0 = time.perf_counter(), time.process_time()
    post = klass(model, simulations=budget, seed=seed).fit(obs)
    d = post.sample(draws, seed=seed + 1)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "wall_time": wall,
        "cpu_time": cpu,
        "draws": d,
        "epochs": [r.epochs for r in post.rounds],
        "n_simulations": post.n_simulations,
        "stopped": post.settings.get("stopped"),
        "warnings": [w["category"] for w in post.settings.get("diagnostics", [])],
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--training", default=None, help="dpinfer training preset (default: fast)")
    p.add_argument("--protocol", action="append", choices=sorted(PROTOCOLS), default=None)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "neural_vs_sbi.json"))
    p.add_argument(
        "--seeds", default=None,
        help="comma-separated seeds: SPPE / SPPE all copies / sbi NPE per seed on the one-round protocol "
        "(writes results/neural_vs_sbi_seeds.json instead)",
    )
    p.add_argument(
        "--user-problems", action="store_true",
        help="issue 27: the defaults (rounds='auto') at --budget simulations on two problems of "
        "tests/user_problems.py against sbi's defaults, C2ST to the exact posterior",
    )
    p.add_argument("--budget", type=int, default=3000, help="simulations (--user-problems)")
    p.add_argument(
        "--step-timing", action="store_true",
        help="time one training step / one evaluation of the default flow (zuko vs dpinfer's "
        "evaluation, and sbi's default MAF); writes the 'step_timing' key",
    )
    args = p.parse_args(argv)
    if args.step_timing:
        st = step_timing()
        st.update(machine=platform.platform(), torch=torch.__version__, torch_threads=1,
                  load_average=list(os.getloadavg()))  # fmt: skip
        path = Path(args.out)
        old = json.loads(path.read_text()) if path.exists() else {}
        old["step_timing"] = st
        path.write_text(json.dumps(old, indent=2))
        print(f"wrote {path}")
        return
    if args.user_problems:
        load_before = os.getloadavg()
        up = user_problems(args.budget, args.seed)
        import sbi

        up.update(machine=platform.platform(), torch=torch.__version__, sbi=sbi.__version__,
                  torch_threads=1, device="cpu", cpu_count=os.cpu_count(),
                  load_average_before_after=[list(load_before), list(os.getloadavg())])  # fmt: skip
        path = Path(args.out)
        old = json.loads(path.read_text()) if path.exists() else {}
        # seed 0 is the benchmark; other seeds go beside it, so one file shows the seed spread
        old["user_problems" if args.seed == 0 else f"user_problems_seed{args.seed}"] = up
        path.write_text(json.dumps(old, indent=2))
        print(f"wrote {path}")
        return
    if args.seeds:
        sweep = seed_sweep([int(s) for s in args.seeds.split(",")])
        sweep.update(machine=platform.platform(), torch=torch.__version__, torch_threads=1, device="cpu")
        out = Path(__file__).parent / "results" / "neural_vs_sbi_seeds.json"
        out.write_text(json.dumps(sweep, indent=2))
        print(f"wrote {out}")
        return
    res = compare(args.seed, training=args.training, protocols=tuple(args.protocol or ()))
    res.update(
        {
            "machine": platform.platform(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "torch_threads": 1,
            "device": "cpu",
            "settings": vars(args),
        }
    )
    try:
        import sbi

        res["sbi"] = sbi.__version__
    except ImportError:
        res["sbi"] = None
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(res, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
