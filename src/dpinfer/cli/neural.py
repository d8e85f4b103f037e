"""``dpinfer sppe`` and ``dpinfer sple``: neural posteriors from privatised statistics.

Examples::

    dpinfer sppe --model sir --epsilon 10 --observed builtin --rounds 10 --out sppe.pt
    dpinfer sple --model gaussian-mean --epsilon 1 --observed obs.json --rqmc-points 8 --json

``--observed`` is a JSON file holding a list of numbers or an object ``{"observed": [...]}``
(optionally with ``"epsilon"`` and ``"model_args"``), or ``builtin`` for the synthetic release
shipped with dpinfer at ``--epsilon`` (the same conventions as ``dpinfer smc-abc``). Progress is
printed per round on standard error.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Any

import numpy as np

from .common import (
    add_backend_options,
    add_command,
    add_output_options,
    add_release_options,
    add_run_options,
    release_from_args,
)


def _estimator(args: argparse.Namespace, model: Any) -> Any:
    """The SPPE or SPLE estimator of the command's options."""
    from ..inference.neural.sple import SPLE
    from ..inference.neural.sppe import SPPE

    start = time.monotonic()

    def report(info: Any, _post: Any) -> None:
        if not args.json:
            done = info.round + 1
            elapsed = time.monotonic() - start
            eta = elapsed / done * (args.rounds - done)
            print(
                f"round {done} of {args.rounds}: {info.n_simulations_total} simulations so far, elapsed "
                f"{elapsed:.1f} s, ETA {eta:.0f} s; {info.epochs} epochs, "
                f"validation loss {info.best_validation_loss:.4g}, simulation {info.simulation_time:.1f} s, "
                f"training {info.training_time:.1f} s"
                + (
                    f"; the posterior moved {info.extra['shift_sd']:.2f} sd, its sd changed by a factor "
                    f"{math.exp(info.extra['sd_change']):.2f}"
                    if "shift_sd" in info.extra
                    else ""
                ),
                file=sys.stderr,
                flush=True,
            )

    common = dict(
        flow={
            "kind": args.flow,
            "transforms": args.transforms,
            "hidden": args.hidden,
            "bins": args.bins,
            "tail_bound": args.tail_bound,
        },
        rounds=args.rounds,
        simulations_per_round=args.simulations,
        rqmc_points=args.rqmc_points,
        qmc=not args.monte_carlo,
        training=_training(args),
        seed=args.seed,
        backend=args.backend,
        n_workers=args.n_workers,
        progress=not args.no_progress,
        callback=report,
    )
    if args.command == "sppe":
        return SPPE(model, atoms=args.atoms, proposal=args.proposal, **common)
    return SPLE(model, mcmc_method=args.mcmc, chains=args.chains, warmup=args.warmup, **common)


def _training(args: argparse.Namespace) -> dict[str, Any]:
    """The training preset with the options given on the command line."""
    given = {"max_epochs": args.max_epochs, "patience": args.patience}
    return {"preset": args.training, **{k: v for k, v in given.items() if v is not None}}


def _print(args: argparse.Namespace, post: Any, summary: dict[str, Any]) -> None:
    """``--json``: the summary; else the posterior's text summary, R0 and R-hat."""
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(post.summary(args.draws, args.seed))
    if "R0_median" in summary:
        a, b = summary["R0_interval95"]
        print(f"  {'R0':>12s}: {summary['R0_median']: .4f}  95% CI ({a: .4f}, {b: .4f})")
    if args.command == "sple":
        print(f"  R-hat: {', '.join(f'{v:.3f}' for v in summary['rhat'])}")
    if args.out:
        print(f"saved to {summary['saved_to']}")


def _run(args: argparse.Namespace) -> int:
    model, observed, epsilon = release_from_args(args)
    post = _estimator(args, model).fit(observed, runs=args.runs, resume=args.resume)
    draws = post.sample(args.draws, seed=args.seed)
    lo, hi = np.quantile(draws, [0.025, 0.975], axis=0)
    summary: dict[str, Any] = {
        "method": args.command,
        "model": args.model,
        "epsilon": float(epsilon),
        "param_names": list(post.param_names),
        "mean": draws.mean(axis=0).tolist(),
        "interval95": np.stack([lo, hi], axis=1).tolist(),
        "n_simulations": post.n_simulations,
        "rounds": [
            {
                "round": r.round,
                "simulations": r.n_simulations_total,
                "epochs": r.epochs,
                "validation_loss": r.best_validation_loss,
            }
            for r in post.rounds
        ],
        "privacy_of_release": post.privacy.to_dict() if post.privacy is not None else None,
        "run_id": post.settings.get("run_id"),
    }
    if args.command == "sple":
        summary["rhat"] = post.mcmc.get("rhat")
    if args.model.startswith("sir"):
        r0 = np.exp(draws[:, 0] - draws[:, 1])
        summary["R0_median"] = float(np.median(r0))
        summary["R0_interval95"] = np.quantile(r0, [0.025, 0.975]).tolist()
    if args.out:
        summary["saved_to"] = str(post.save(args.out))
    _print(args, post, summary)
    return 0


def _add_common(p: argparse.ArgumentParser) -> None:
    add_release_options(p)
    p.add_argument("--rounds", type=int, default=10, help="rounds")
    p.add_argument("--simulations", type=int, default=1000, help="new simulations per round")
    p.add_argument(
        "--rqmc-points", type=int, default=8, help="privatised copies per simulation, 2^m"
    )
    p.add_argument("--monte-carlo", action="store_true", help="i.i.d. noise instead of scrambled Sobol nets")
    p.add_argument("--flow", default="nsf", choices=("nsf", "maf"), help="density estimator")
    p.add_argument("--transforms", type=int, default=8, help="flow transforms")
    p.add_argument("--hidden", type=int, default=50, help="hidden units")
    p.add_argument("--bins", type=int, default=10, help="spline bins")
    p.add_argument("--tail-bound", type=float, default=5.0, help="spline tail bound")
    p.add_argument(
        "--training",
        default="fast",
        choices=("fast", "paper"),
        help="training preset: fast (batch 200, lr 1e-3, patience 10, one of the M copies per step) "
        "or paper (batch 100, lr 5e-4, patience 20, all M copies)",
    )
    p.add_argument("--max-epochs", type=int, default=None, help="epoch cap per round (default: preset's)")
    p.add_argument("--patience", type=int, default=None, help="early-stopping patience (default: preset's)")
    add_backend_options(
        p, "serial", "worker processes for the simulations", "simulation/training seed (never privacy noise)"
    )
    p.add_argument("--draws", type=int, default=4000, help="posterior draws for the summary")
    p.add_argument("--out", help="save the posterior (.pt; None: not saved)")
    add_run_options(p, "round")
    add_output_options(p, progress="no progress bar (shown on a terminal: round, simulations, elapsed, ETA)")


def register(subparsers: Any) -> None:
    """Add ``sppe`` and ``sple`` to the ``dpinfer`` command line."""
    p = add_command(
        subparsers,
        "sppe", help="SPPE neural posterior from privatised statistics (Xiong et al. 2025)"
    )
    _add_common(p)
    p.add_argument("--atoms", type=int, default=10, help="APT atoms")
    p.add_argument(
        "--proposal",
        choices=["truncated", "apt"],
        default="truncated",
        help="later rounds: truncated (default: the prior restricted to the posterior's 1-1e-4 region, "
        "plain NPE loss, no leakage over many rounds) or apt (the paper's atomic loss on posterior "
        "proposals)",
    )
    p.set_defaults(func=_run, command="sppe")
    q = add_command(subparsers, "sple", help="SPLE neural likelihood + MCMC from privatised statistics")
    _add_common(q)
    q.add_argument("--mcmc", default="slice", choices=("slice", "adaptive-metropolis"), help="MCMC sampler")
    q.add_argument("--chains", type=int, default=100, help="MCMC chains")
    q.add_argument("--warmup", type=int, default=50, help="MCMC warm-up steps per chain")
    q.set_defaults(func=_run, command="sple")


__all__ = ["register"]
