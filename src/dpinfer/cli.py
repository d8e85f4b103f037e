"""The ``dpinfer`` command line.

Core commands (``budget``, ``demo``) live here. Each family adds its own subcommands from its
own module: every module of :data:`COMMAND_MODULES` that is present in the installed package
defines ``register(subparsers)``, which adds parsers whose ``func`` attribute runs the command.

Commands that release a private result from confidential data (``dpvi``, ``abcdp``) need either
``--ledger PATH`` (the release is charged to a registered budget first) or an explicit
``--no-ledger`` (released unaccounted, with a one-line notice); :func:`add_ledger_options` and
:func:`open_release_ledger` implement that for every such command. Refusals (:class:`Refusal`, a
missing or foreign ledger file) exit with status 2 and one line on standard error, before anything
is read, charged or released; other errors exit with status 1.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from ._version import __version__
from .errors import DPInferError, PrivacyWarning
from .privacy import Ledger
from .privacy.events import describe, event_from_dict
from .privacy.ledger import LedgerFileError, LedgerNotFoundError, file_fingerprint

# Modules contributing subcommands, each with ``register(subparsers) -> None``. A family whose
# module is not part of this build is skipped; an error inside a present module propagates.
COMMAND_MODULES: list[str] = [
    "dpinfer.abc.cli",  # simulate, abcdp
    "dpinfer.vi.cli",  # dpvi
    "dpinfer.abc.cli_smc",  # smc-abc
    "dpinfer.abc.cli_exact",  # exact-posterior
    "dpinfer.neural.cli",  # sppe, sple
]


class Refusal(Exception):
    """A command refused before anything was read, charged or released (exit status 2)."""


def _one_line(message: object) -> str:
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


def add_ledger_options(parser: argparse.ArgumentParser) -> None:
    """``--ledger`` and ``--no-ledger`` for a command that releases from confidential data."""
    parser.add_argument(
        "--ledger",
        default=None,
        help="privacy ledger (SQLite, made by `dpinfer budget init`) charged before the release",
    )
    parser.add_argument(
        "--no-ledger",
        action="store_true",
        help="release WITHOUT charging any ledger: nothing bounds the total spend on these data",
    )


def open_release_ledger(
    args: argparse.Namespace, data_file: str | Path, default_dataset: str | None = None
) -> tuple[Ledger | None, str | None]:
    """The ledger and data-set name a release is charged to, or ``(None, None)`` with --no-ledger.

    Refuses (:class:`Refusal`) unless exactly one of ``--ledger`` / ``--no-ledger`` is given, and
    ``--dataset`` without ``--ledger``. If the data set was registered with a fingerprint
    (``dpinfer budget init --data FILE``), ``data_file`` must have exactly those bytes.
    """
    dataset = getattr(args, "dataset", None)
    if args.ledger and args.no_ledger:
        raise Refusal("--ledger and --no-ledger contradict each other; pass one of them.")
    if not args.ledger:
        if dataset:
            raise Refusal(
                f"--dataset {dataset} names a budget in a ledger, but no --ledger was given: pass "
                "--ledger PATH to charge it (nothing was charged or released)."
            )
        if not args.no_ledger:
            raise Refusal(
                "this command releases a private result: pass --ledger PATH --dataset NAME (register "
                "the budget with `dpinfer budget init`) or, to release unaccounted, --no-ledger."
            )
        return None, None
    ledger = Ledger(args.ledger)  # never creates a file: a typo is refused
    dataset = dataset or default_dataset
    if not dataset:
        raise Refusal("--ledger needs --dataset NAME (registered with `dpinfer budget init`).")
    budget = ledger.budget(dataset)
    if budget.fingerprint is not None:
        path = Path(data_file)
        if not path.is_file():
            raise FileNotFoundError(f"data file {path} not found.")
        found = file_fingerprint(path)
        if found != budget.fingerprint:
            raise Refusal(
                f"{path} is not the data registered as {dataset!r} in {ledger.path} (file SHA-256 "
                f"{found[:16]}..., registered {budget.fingerprint[:16]}...); nothing was charged or "
                "released. The fingerprint covers the file's exact bytes: a reformatted copy differs."
            )
    return ledger, dataset


@contextmanager
def release_notices(accounted: bool) -> Iterator[None]:
    """Show the release's :class:`~dpinfer.privacy.PrivacyWarning` s as one-line notices.

    Unaccounted (``--no-ledger``): after a successful release, one notice says so instead of the
    library's warning. Other warnings pass through unchanged.
    """
    caught: list[str] = []
    original = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, PrivacyWarning):
            caught.append(_one_line(message))
        else:
            original(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.simplefilter("always", PrivacyWarning)
        warnings.showwarning = show
        yield
    if not accounted:
        print(
            "dpinfer: notice: released WITHOUT a ledger (--no-ledger): NOT ACCOUNTED against any "
            "privacy budget; its report says accounted: false.",
            file=sys.stderr,
        )
    for message in dict.fromkeys(caught):
        if accounted or "ledger" not in message.lower():
            print(f"dpinfer: warning: {message}", file=sys.stderr)


def _budget_init(args: argparse.Namespace) -> int:
    from .privacy.accountants import get_accountant
    from .privacy.validation import check_delta, check_epsilon, check_relation

    # everything is checked before the ledger file is created
    check_epsilon(args.epsilon, "budget epsilon")
    check_delta(args.delta, "budget delta")
    get_accountant(args.accountant)
    check_relation(args.neighbouring)
    fingerprint = None
    if args.data:
        if not Path(args.data).is_file():
            raise FileNotFoundError(f"data file {args.data} not found; nothing was registered.")
        fingerprint = file_fingerprint(args.data)
    ledger = Ledger.create(args.ledger)
    b = ledger.register(
        args.dataset, args.epsilon, args.delta, args.accountant, args.neighbouring, fingerprint=fingerprint
    )
    print(
        f"registered {b.dataset!r} in {ledger.path}: epsilon={b.epsilon:g}, delta={b.delta:g}, "
        f"accountant={b.accountant}, {b.neighbouring}"
        + (f", data {args.data} (SHA-256 {fingerprint[:16]}...)" if fingerprint else "")
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
                "fingerprint": b.fingerprint,
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
            + (f"  data {r['fingerprint'][:12]}" if r["fingerprint"] else "")
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
            + ("  [INSECURE RNG: no privacy]" if h.get("insecure") else "")
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
    init = bsub.add_parser(
        "init", help="register a data set with its total budget (creates the ledger if missing)"
    )
    init.add_argument("--ledger", required=True, help="ledger file (SQLite); created if missing")
    init.add_argument("--dataset", required=True)
    init.add_argument("--epsilon", type=float, required=True)
    init.add_argument("--delta", type=float, default=0.0)
    init.add_argument("--accountant", default="pure", help="pure | advanced | rdp | pld")
    init.add_argument("--neighbouring", default="replace-one", choices=("replace-one", "add-remove"))
    init.add_argument(
        "--data",
        help="the data file: its SHA-256 (over the exact bytes) is registered, so the same file "
        "cannot get a second budget and releases must read this very file",
    )
    init.set_defaults(func=_budget_init)
    show = bsub.add_parser("show", help="budget, spent and remaining per data set")
    show.add_argument("--ledger", required=True, help="an existing ledger file")
    show.add_argument("--dataset")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=_budget_show)
    hist = bsub.add_parser("history", help="every charge of a data set")
    hist.add_argument("--ledger", required=True, help="an existing ledger file")
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
    except (Refusal, LedgerNotFoundError, LedgerFileError) as exc:
        print(f"dpinfer: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except (DPInferError, ValueError, FileNotFoundError) as exc:
        print(f"dpinfer: error: {_one_line(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
