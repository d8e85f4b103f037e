"""The ``dpinfer`` command line.

Core commands (``budget``, ``demo``) live here. Each family adds its own subcommands from its
own module: every module of :data:`COMMAND_MODULES` that is present in the installed package
defines ``register(subparsers)``, which adds parsers whose ``func`` attribute runs the command.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from collections.abc import Sequence

from ._version import __version__
from .privacy import Ledger, PrivacyError
from .privacy.events import describe, event_from_dict

# Modules contributing subcommands, each with ``register(subparsers) -> None``. A family whose
# module is not part of this build is skipped; an error inside a present module propagates.
COMMAND_MODULES: list[str] = [
    "dpinfer.abc.cli",  # simulate, abcdp
    "dpinfer.vi.cli",  # dpvi
    "dpinfer.abc.cli_smc",  # smc-abc
    "dpinfer.abc.cli_exact",  # exact-posterior
    "dpinfer.neural.cli",  # sppe, sple
]


def _budget_init(args: argparse.Namespace) -> int:
    ledger = Ledger(args.ledger)
    b = ledger.register(args.dataset, args.epsilon, args.delta, args.accountant, args.neighbouring)
    print(
        f"registered {b.dataset!r} in {ledger.path}: epsilon={b.epsilon:g}, delta={b.delta:g}, "
        f"accountant={b.accountant}, {b.neighbouring}"
    )
    return 0


def _budget_show(args: argparse.Namespace) -> int:
    ledger = Ledger(args.ledger)
    names = [args.dataset] if args.dataset else ledger.datasets()
    rows = []
    for name in names:
        b = ledger.budget(name)
        spent = ledger.spent(name)
        rows.append(
            {
                "dataset": name,
                "epsilon_budget": b.epsilon,
                "delta": b.delta,
                "accountant": b.accountant,
                "neighbouring": b.neighbouring,
                "epsilon_spent": spent,
                "epsilon_remaining": max(b.epsilon - spent, 0.0),
                "charges": len(ledger.history(name)),
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no data sets registered in {ledger.path}")
        return 0
    print(
        f"{'dataset':20s} {'budget':>10s} {'delta':>9s} {'spent':>10s} {'remaining':>10s} "
        f"{'charges':>7s}  accountant"
    )
    for r in rows:
        print(
            f"{r['dataset']:20s} {r['epsilon_budget']:10.4g} {r['delta']:9.2g} "
            f"{r['epsilon_spent']:10.4g} {r['epsilon_remaining']:10.4g} {r['charges']:7d}  "
            f"{r['accountant']} ({r['neighbouring']})"
        )
    return 0


def _budget_history(args: argparse.Namespace) -> int:
    ledger = Ledger(args.ledger)
    hist = ledger.history(args.dataset)
    if args.json:
        print(json.dumps(hist, indent=2))
        return 0
    if not hist:
        print(f"no charges on {args.dataset!r}")
    for h in hist:
        print(
            f"#{h['id']:<4d} {h['created']}  {h['status']:8s} eps_after={h['epsilon_spent_after']:.4g}"
            f"  {h['label'] or '-'}  {describe(event_from_dict(h['event']))}"
        )
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(args.out, seed=args.seed, quick=args.quick)
    return 0


def module_present(name: str) -> bool:
    """Whether the module ``name`` is part of this build (without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (core commands plus every registered family)."""
    parser = argparse.ArgumentParser(
        prog="dpinfer", description="Bayesian inference under differential privacy."
    )
    parser.add_argument("--version", action="version", version=f"dpinfer {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="end-to-end tour of every capability (writes to --out)")
    demo.add_argument("--out", default="out", help="output directory (default: out)")
    demo.add_argument("--seed", type=int, default=2026, help="simulation seed (not privacy noise)")
    demo.add_argument("--quick", action="store_true", help="smaller runs, for smoke tests")
    demo.set_defaults(func=_demo)

    budget = sub.add_parser("budget", help="privacy-budget ledger: init, show, history")
    bsub = budget.add_subparsers(dest="budget_command", metavar="ACTION", required=True)
    init = bsub.add_parser("init", help="register a data set with its total budget")
    init.add_argument("--ledger", required=True, help="ledger file (SQLite)")
    init.add_argument("--dataset", required=True)
    init.add_argument("--epsilon", type=float, required=True)
    init.add_argument("--delta", type=float, default=0.0)
    init.add_argument("--accountant", default="pure", help="pure | advanced | rdp | pld")
    init.add_argument("--neighbouring", default="replace-one", choices=("replace-one", "add-remove"))
    init.set_defaults(func=_budget_init)
    show = bsub.add_parser("show", help="budget, spent and remaining per data set")
    show.add_argument("--ledger", required=True)
    show.add_argument("--dataset")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_budget_show)
    hist = bsub.add_parser("history", help="every charge of a data set")
    hist.add_argument("--ledger", required=True)
    hist.add_argument("--dataset", required=True)
    hist.add_argument("--json", action="store_true")
    hist.set_defaults(func=_budget_history)

    for name in COMMAND_MODULES:
        if module_present(name):
            importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpinfer`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (PrivacyError, ValueError, FileNotFoundError) as exc:
        print(f"dpinfer: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
