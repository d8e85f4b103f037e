"""``dpinfer exact-posterior``: the exact private-data posterior by mechanism-density importance sampling.

Examples::

    dpinfer exact-posterior --model sir --epsilon 10 --observed builtin --model-args '{"population": 10000}'
    dpinfer exact-posterior --model naive-bayes --epsilon 1 --observed builtin --theta 50000 --json

``--model``, ``--observed``, ``--epsilon`` and ``--model-args`` follow ``dpinfer smc-abc``. Only
models whose release mechanism has a density are accepted (all built-in models).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any


def _run(args: argparse.Namespace) -> int:
    from .cli_smc import load_release, print_weighted_result
    from .mechanism_is import mechanism_importance_sampling

    model, observed, epsilon = load_release(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = mechanism_importance_sampling(
            model,
            observed,
            n_theta=args.theta,
            n_inner=args.inner,
            pilot_theta=args.pilot_theta,
            pilot_inner=args.pilot_inner,
            backend=args.backend,
            n_workers=args.workers,
            seed=args.seed,
        )
    for w in caught:
        print(f"dpinfer: warning: {w.message}", file=sys.stderr)
    summary: dict[str, Any] = {
        "model": args.model,
        "epsilon": epsilon,
        "param_names": list(res.param_names),
        "mean": res.mean().tolist(),
        "interval95": res.interval().tolist(),
        "n_simulations": res.n_simulations,
        "ess": res.ess,
        "pareto_k": res.khat,
        "log_evidence": res.log_evidence,
        "privacy_of_release": model.privacy_report().to_dict(),
    }
    print_weighted_result(args, res, summary, r0_center="median")
    return 0 if res.khat <= 0.7 else 3


def register(subparsers: Any) -> None:
    """Add ``exact-posterior`` to the ``dpinfer`` command line."""
    from .cli_smc import MODELS

    p = subparsers.add_parser(
        "exact-posterior",
        help="exact private-data posterior by importance sampling with the mechanism's density",
    )
    p.add_argument("--model", required=True, choices=MODELS)
    p.add_argument("--observed", required=True, help="JSON file of the observed release, or 'builtin'")
    p.add_argument("--epsilon", type=float, help="privacy level of the observed release")
    p.add_argument("--model-args", default="", help="JSON object of model keyword arguments")
    p.add_argument("--theta", type=int, default=20_000, help="parameter draws of the main stage")
    p.add_argument("--inner", type=int, default=100, help="confidential simulations per parameter draw")
    p.add_argument("--pilot-theta", type=int, default=10_000, help="parameter draws per pilot stage")
    p.add_argument("--pilot-inner", type=int, default=20, help="simulations per draw in the pilot")
    p.add_argument("--backend", default="serial", help="serial | processes | dask | tcp://scheduler:8786")
    p.add_argument("--workers", type=int, help="worker processes (default: all cores)")
    p.add_argument("--seed", type=int, default=0, help="simulation seed (never privacy noise)")
    p.add_argument("--out", help="save the weighted draws (.npz)")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    p.set_defaults(func=_run)


__all__ = ["register"]
