"""``dpinfer budget init | show | history``: the privacy-budget ledger.

``init`` registers a data set with its total budget (creating the ledger: a SQLite file, or the
``dpinfer`` schema in the PostgreSQL database of a ``postgresql://`` URL), optionally bound to the
SHA-256 of its data file (``--data``); ``show`` lists budget, spent and remaining per data set;
``history`` lists every charge of one data set. A URL's password is never printed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..privacy import Ledger
from ..privacy.event_conversion import describe, event_from_dict
from ..privacy.fingerprint import file_fingerprint
from .common import Refusal, add_command


def _init(args: argparse.Namespace) -> int:
    from ..privacy.accountants import get_accountant
    from ..privacy.validation import check_delta, check_epsilon, check_relation

    # everything is checked before the ledger file is created
    check_epsilon(args.epsilon, "budget epsilon")
    check_delta(args.delta, "budget delta")
    get_accountant(args.accountant)
    if args.accountant in ("pld", "rdp") and args.delta == 0:
        raise Refusal(
            f"--accountant {args.accountant} with --delta 0 cannot account Laplace or Gaussian releases "
            "(their epsilon at delta = 0 is infinite); pass --delta > 0 (e.g. 1e-6, well below 1/n), or "
            "--accountant pure for pure-DP releases only. Nothing was registered."
        )
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
        f"registered {b.dataset!r} in {ledger.location}: epsilon={b.epsilon:g}, delta={b.delta:g}, "
        f"accountant={b.accountant}, {b.neighbouring}"
        + (f", data {args.data} (SHA-256 {fingerprint[:16]}...)" if fingerprint else "")
    )
    return 0


def _show(args: argparse.Namespace) -> int:
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
        print(f"no data sets registered in {ledger.location}")
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


def _history(args: argparse.Namespace) -> int:
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


ACCOUNTANT_HELP = (
    "pld | rdp | pure | advanced: how charges are composed; budgets cannot be changed later, "
    "so pick one that accounts every "
    "release you will make: pld (default) accounts all of them (Laplace, ABCDP's sparse vector, "
    "Gaussian, DPVI's DP-SGD) at --delta > 0; rdp the same, more loosely; pure only pure-DP releases "
    "(Laplace, ABCDP; not DPVI) at --delta 0; advanced: advanced composition of pure releases"
)


def register(subparsers: Any) -> None:
    """Add ``budget`` (with the actions ``init``, ``show``, ``history``) to the command line."""
    budget = add_command(subparsers, "budget", help="privacy-budget ledger: init, show, history")
    bsub = budget.add_subparsers(dest="budget_command", metavar="ACTION", required=True)
    init = add_command(
        bsub, "init", help="register a data set with its total budget (creates the ledger if missing)"
    )
    init.add_argument(
        "--ledger", required=True,
        help="ledger: a SQLite file (created if missing) or postgresql://user@host:port/dbname (its schema "
        "created if missing; the database must exist; password from ~/.pgpass or PGPASSWORD)",
    )
    init.add_argument(
        "--dataset", required=True,
        help="name of the data set's budget; releases name it with --dataset (registered once only)",
    )
    init.add_argument(
        "--epsilon", type=float, required=True,
        help="total epsilon of the budget: all releases from these data together may spend at most this",
    )
    init.add_argument(
        "--delta", type=float, default=1e-6,
        help="total delta of the budget; spent epsilon is measured at this delta (use 0 with --accountant "
        "pure); a DPVI run's --delta must not exceed it",
    )
    init.add_argument(
        "--accountant", default="pld", help=ACCOUNTANT_HELP
    )
    init.add_argument(
        "--neighbouring", default="replace-one", choices=("replace-one", "add-remove"),
        help="neighbouring relation: data sets differing in one record replaced, or one added/removed",
    )
    init.add_argument(
        "--data",
        help="the data file: its SHA-256 (over the exact bytes) is registered, so the same file "
        "cannot get a second budget and releases must read this very file",
    )
    init.set_defaults(func=_init)
    for action, dataset_required, help_text, func in (
        ("show", False, "budget, spent and remaining per data set", _show),
        ("history", True, "every charge of a data set", _history),
    ):
        p = add_command(bsub, action, help=help_text)
        p.add_argument(
            "--ledger", required=True, help="an existing ledger: SQLite file or postgresql:// URL"
        )
        p.add_argument(
            "--dataset", required=dataset_required,
            help="the data set" + ("" if dataset_required else " (default: all)"),
        )
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")
        p.set_defaults(func=func)
