"""``dpinfer sppe`` and ``dpinfer sple``: neural posteriors from privatised statistics.

Examples::

    dpinfer sppe --model sir --epsilon 10 --observed builtin --budget 5000 --out sppe.pt
    dpinfer sppe --model sir --epsilon 10 --observed builtin --rounds 10 --simulations 1000  # the paper
    dpinfer sple --model gaussian-mean --epsilon 1 --observed obs.json --rqmc-points 8 --json

``--observed`` is a JSON file holding a list of numbers or an object ``{"observed": [...]}``
(optionally with ``"epsilon"`` and ``"model_args"``), or ``builtin`` for the synthetic release
shipped with dpinfer at ``--epsilon`` (the same conventions as ``dpinfer smc-abc``). Progress is
printed per round on standard error. ``--rounds auto`` (default) stops when a round no longer moves
the posterior or the ``--budget`` of simulations is spent; the library's diagnostics (training cut
at the epoch cap, a last round that still moved the posterior, mass on a prior bound, an observed
release outside the simulated ones, SPLE's R-hat / ESS) are printed as warnings and listed under
``"warnings"`` in ``--json``.
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
    from ..inference.neural.run_options import NeuralRunOptions
    from ..inference.neural.sple import SPLE
    from ..inference.neural.sppe import SPPE

    start = time.monotonic()
    est: Any = None

    def report(info: Any, _post: Any) -> None:
        if not args.json:
            done = info.round + 1
            elapsed = time.monotonic() - start
            most = est.max_rounds
            eta = elapsed / done * (most - done)
            of = f"of {most}" if est.rounds != "auto" else f"of at most {most} (auto)"
            print(
                f"round {done} {of}: {info.n_simulations_total} simulations so far, elapsed "
                f"{elapsed:.1f} s, ETA {'<= ' if est.rounds == 'auto' else ''}{eta:.0f} s; "
                f"{info.epochs} epochs, "
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
        simulations=args.budget,
        stop_tolerance=args.stop_tolerance,
        rqmc_points=args.rqmc_points,
        qmc=not args.monte_carlo,
        training=_training(args),
        seed=args.seed,
        run=NeuralRunOptions(
            backend=args.backend, n_workers=args.n_workers, progress=not args.no_progress, callback=report
        ),
    )
    if args.command == "sppe":
        est = SPPE(model, atoms=args.atoms, proposal=args.proposal, **common)
    else:
        est = SPLE(model, mcmc_method=args.mcmc, chains=args.chains, warmup=args.warmup, **common)
    return est


def _rounds(value: str) -> int | str:
    """``--rounds``: ``auto`` or a positive integer."""
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or an integer, got {value!r}") from None


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
    why = {
        "converged": "the last round no longer moved the posterior",
        "budget": "the simulation budget was spent before a round stopped moving the posterior",
        "rounds": "the rounds asked for were run",
    }.get(str(summary.get("stopped")))
    if why:
        print(f"  stopped: {why}")
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
        "stopped": post.settings.get("stopped"),
        "warnings": post.settings.get("diagnostics", []),
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
    p.add_argument(
        "--rounds",
        type=_rounds,
        default="auto",
        help="rounds: auto (until a round no longer moves the posterior, within --budget) "
        "or a number (the paper: 10)",
    )
    p.add_argument(
        "--simulations",
        type=int,
        default=None,
        help="new simulations per round (None: 1000, at most half the budget under --rounds auto; "
        "the paper: 1000)",
    )
    p.add_argument(
        "--budget",
        type=int,
        default=None,
        help="simulation budget of all rounds together (None: 5000 under --rounds auto; with a "
        "number of rounds and no --simulations: split evenly over the rounds)",
    )
    p.add_argument(
        "--stop-tolerance",
        type=float,
        default=0.1,
        help="--rounds auto stops when a round moves the posterior mean and sd by at most this many "
        "posterior sds",
    )
    p.add_argument(
        "--rqmc-points", type=int, default=8, help="privatised copies per simulation, 2^m"
    )
    p.add_argument("--monte-carlo", action="store_true", help="i.i.d. noise instead of scrambled Sobol nets")
    p.add_argument("--flow", default="nsf", choices=("nsf", "maf"), help="density estimator")
    p.add_argument("--transforms", type=int, default=5, help="flow transforms (the paper: 8)")
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


#: the estimators' option names in their errors and warnings, as this command's flags (the API's
#: ``simulations`` is the budget, the command's ``--simulations`` the simulations per round)
HINTS = (
    ("simulations_per_round=", "--simulations "),
    ("simulations=", "--budget "),
    ("training={'max_epochs': ...}", "--max-epochs N"),
    ("max_epochs=", "--max-epochs "),
    ("rounds='auto'", "--rounds auto"),
    ("stop_tolerance=", "--stop-tolerance "),
    ("rqmc_points=", "--rqmc-points "),
)


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
    p.set_defaults(func=_run, command="sppe", cli_hints=HINTS)
    q = add_command(subparsers, "sple", help="SPLE neural likelihood + MCMC from privatised statistics")
    _add_common(q)
    q.add_argument("--mcmc", default="slice", choices=("slice", "adaptive-metropolis"), help="MCMC sampler")
    q.add_argument("--chains", type=int, default=20, help="MCMC chains")
    q.add_argument("--warmup", type=int, default=50, help="MCMC warm-up steps per chain")
    q.set_defaults(func=_run, command="sple", cli_hints=HINTS)


__all__ = ["register"]
