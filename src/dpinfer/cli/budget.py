"""``dpinfer budget init | show | history``: the privacy-budget ledger.

``init`` registers a data set with its total budget (creating the ledger: a SQLite file, or the
``dpinfer`` schema in the PostgreSQL database of a ``postgresql://`` URL), bound to the records of
its data file (``--data FILE``, :mod:`dpinfer.cli.data_input`; the same records cannot then be
charged to any other budget of the ledger) or, explicitly, to nothing (``--unbound``); ``show``
lists budget, spent and remaining per data set; ``history`` lists every charge of one data set.
A URL's password is never printed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..data.fingerprint import data_file_fingerprint
from ..errors import InvalidPrivacyParameterError
from ..privacy import Ledger
from ..privacy.event_conversion import describe, event_from_dict
from ..privacy.ledger import DEFAULT_ACCOUNTANT, check_budget_accountant
from .common import Refusal, add_command


def _init(args: argparse.Namespace) -> int:
    from ..privacy.validation import check_epsilon, check_relation

    # everything is checked before the ledger file is created
    if not args.data and not args.unbound:
        raise Refusal(
            "budget init needs --data FILE (binds the budget to the file's records: the same records cannot "
            "then be charged to another budget, and releases must read these records) or, to register "
            "a budget bound to no file, --unbound (nothing then stops the same data from being charged "
            "to another unbound budget until a release names them). Nothing was registered."
        )
    if args.data and args.unbound:
        raise Refusal("--data and --unbound contradict each other; pass one of them. Nothing was registered.")
    check_epsilon(args.epsilon, "budget epsilon")
    try:
        check_budget_accountant(args.accountant, args.delta)
    except InvalidPrivacyParameterError as exc:
        if "cannot work" not in str(exc):
            raise
        raise Refusal(f"{exc} (--accountant, --delta). Nothing was registered.") from None
    check_relation(args.neighbouring)
    fingerprint = None
    if args.data:
        if not Path(args.data).is_file():
            raise FileNotFoundError(f"data file {args.data} not found; nothing was registered.")
        fingerprint = data_file_fingerprint(args.data)  # the file's records, not its bytes
    ledger = Ledger.create(args.ledger)
    b = ledger.register(
        args.dataset, args.epsilon, args.delta, args.accountant, args.neighbouring, fingerprint=fingerprint
    )
    print(
        f"registered {b.dataset!r} in {ledger.location}: epsilon={b.epsilon:g}, delta={b.delta:g}, "
        f"accountant={b.accountant}, {b.neighbouring}"
        + (f", bound to the records of {args.data} (fingerprint {fingerprint[:16]}...)" if fingerprint else
           ", UNBOUND (bound to no data file)")
    )
    return 0


def _show(args: argparse.Namespace) -> int:
    ledger = Ledger(args.ledger)
    names = [args.dataset] if args.dataset else ledger.datasets()
    rows: list[dict[str, Any]] = []
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
            + (f"  data {r['fingerprint'][:12]}" if r["fingerprint"] else "  unbound")
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
    "pld | rdp | pure | advanced: how charges are composed; budgets cannot be changed later, so "
    "pick one that accounts every release you will make. pld (default) and rdp, at "
    "--delta > 0: privacy-loss distributions or Renyi-DP curves of the releases (Laplace, ABCDP's "
    "sparse vectors, Gaussian, the private GLM, DPVI's DP-SGD with its default replace-one Poisson "
    "batches); where an accountant has no tight analysis of a release it composes a valid bound, and "
    "the release's privacy report states the bound used. pure, at --delta 0: pure-DP releases only "
    "(Laplace, ABCDP's Laplace sparse vector; not the Gaussian releases nor DPVI). advanced: advanced "
    "composition of pure releases (and of DPVI's with-replacement batches, the paper's convention)"
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
        "--delta", type=float, default=None,
        help="total delta of the budget; spent epsilon is measured at this delta; a DPVI run's --delta must "
        "not exceed it (default: 1e-6, or 0 with --accountant pure; pure with delta > 0 and pld/rdp with "
        "delta 0 are refused)",
    )
    init.add_argument(
        "--accountant", default=DEFAULT_ACCOUNTANT, help=ACCOUNTANT_HELP
    )
    init.add_argument(
        "--neighbouring", default="replace-one", choices=("replace-one", "add-remove"),
        help="neighbouring relation: data sets differing in one record replaced, or one added/removed",
    )
    bind = init.add_mutually_exclusive_group()
    bind.add_argument(
        "--data",
        help="the data file (CSV, Parquet or Arrow): the fingerprint of its records is registered (row "
        "order, headers, number formatting, line ends and file format do not count), so the same records "
        "cannot get a second budget nor be charged to another one (this or --unbound is required)",
    )
    bind.add_argument(
        "--unbound", action="store_true",
        help="register a budget bound to no data file (instead of --data): a file first charged to it "
        "cannot then be charged to another budget, but nothing checks which file that is",
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
