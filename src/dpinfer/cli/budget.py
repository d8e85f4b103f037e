"""``dpinfer budget init | show | history | raise | retire | check | grant``: the budget ledger.

``init`` registers a data set with its total budget (creating the ledger: a SQLite file, or the
``dpinfer`` schema in the PostgreSQL database of a ``postgresql://`` URL), bound to the records of
its data file (``--data FILE``, :mod:`dpinfer.cli.data_input`; the same records cannot then be
charged to any other budget of the ledger) or, explicitly, to nothing (``--unbound``); ``show``
lists budget, spent and remaining per data set; ``history`` lists every change of one data set's
budget (registration, raises, retirement: who, when, why) and every charge (who charged, for what
purpose). ``raise`` and ``retire`` are the owner's (a reason is required); ``grant`` gives a
PostgreSQL role the analyst's privileges (charge and read; no table writes); ``check`` recomposes
every charge from its recorded event and names any charge that under-stated its spend. A URL's
password is never printed.
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
                "owner": b.owner,
                "retired": b.retired,
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
            + ("  RETIRED" if r["retired"] else "")
        )
    return 0


def _who(by: Any, authenticated: Any) -> str:
    """``by`` as recorded, with the authenticated identity where it differs (or is unknown)."""
    if by is None and authenticated is None:
        return "(unrecorded)"
    if by is None or by == authenticated:
        return str(authenticated)
    return f"{by} (as {authenticated or 'unrecorded'})"


def _history(args: argparse.Namespace) -> int:
    ledger = Ledger(args.ledger)
    budget = ledger.budget(args.dataset)
    changes = ledger.budget_history(args.dataset)
    hist = ledger.history(args.dataset)
    if args.json:
        print(json.dumps(changes if args.changes else hist, indent=2))
        return 0
    if not args.changes:
        if not hist:
            print(f"no charges on {args.dataset!r}")
        for h in hist:
            print(
                f"#{h['id']:<4d} {h['created']}  {h['status']:8s} eps_after={h['epsilon_spent_after']:.4g}"
                f"  {h['label'] or '-'}  {describe(event_from_dict(h['event']))}"
                f"  by {_who(h['charged_by'], h['authenticated_as'])}"
                + (f"  purpose: {h['purpose']}" if h.get("purpose") else "")
                + ("  [INSECURE RNG: no privacy]" if h.get("insecure") else "")
            )
    print(
        f"budget of {args.dataset!r}: epsilon={budget.epsilon:g}, owner {budget.owner or '(unrecorded)'}"
        + (", RETIRED" if budget.retired else "") + "; changes:"
    )
    for c in changes:
        before = "" if c["previous"] is None else f" (was {c['previous']:g})"
        print(
            f"  {c['created']}  {c['action']:8s} epsilon={c['epsilon']:g}{before}  by "
            f"{_who(c['by'], c['authenticated_as'])}  {c['reason'] or '-'}"
        )
    return 0


def _raise(args: argparse.Namespace) -> int:
    ledger = Ledger(args.ledger)
    before = ledger.budget(args.dataset)
    b = ledger.raise_budget(args.dataset, epsilon=args.epsilon, reason=args.reason)
    print(
        f"raised {b.dataset!r} in {ledger.location}: epsilon {before.epsilon:g} -> {b.epsilon:g} "
        f"(recorded in `dpinfer budget history`)"
    )
    return 0


def _retire(args: argparse.Namespace) -> int:
    ledger = Ledger(args.ledger)
    b = ledger.retire(args.dataset, reason=args.reason)
    print(f"retired {b.dataset!r} in {ledger.location}: it refuses every further charge")
    return 0


def _check(args: argparse.Namespace) -> int:
    ledger = Ledger(args.ledger)
    names = [args.dataset] if args.dataset else ledger.datasets()
    reports = [ledger.recompute(name, full=not args.no_full) for name in names]
    if args.json:
        print(json.dumps(reports, indent=2))
    for r in reports if not args.json else ():
        print(
            f"{r['dataset']:20s} {r['charges']:6d} charges  recorded {r['recorded']:.6g}  replayed "
            f"{r['recomputed']:.6g}"
            + ("" if r["full"] is None else f"  full recomposition {r['full']:.6g}")
            + "  " + ("ok" if r["ok"] else f"{len(r['understated'])} UNDERSTATED" if r["understated"]
                      else "FULL RECOMPOSITION ABOVE THE RECORDED SPEND")
        )
        for u in r["understated"]:
            print(
                f"  charge #{u['id']} by {_who(u['charged_by'], u['authenticated_as'])} recorded "
                f"{u['recorded']:.6g}, its events compose to {u['recomputed']:.6g}"
            )
    return 0 if all(r["ok"] for r in reports) else 1


def _grant(args: argparse.Namespace) -> int:
    ledger = Ledger(args.ledger)
    if ledger.backend != "postgresql":
        raise Refusal(
            f"{ledger.location} is a SQLite ledger: it has no roles. Whoever can write the file is its "
            "owner in effect; keep it writable by the data owner only. Nothing was granted."
        )
    ledger.grant(args.analyst)
    print(
        f"role {args.analyst!r} may now charge and read the ledger {ledger.location} (EXECUTE on "
        "dpinfer.charge, lock_budget, set_status; SELECT on its tables; no table writes)"
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
    budget = add_command(
        subparsers, "budget", help="privacy-budget ledger: init, show, history, raise, retire, grant"
    )
    bsub = budget.add_subparsers(dest="budget_command", metavar="ACTION", required=True)
    _add_init(bsub)
    _add_show_and_history(bsub)
    _add_raise_and_retire(bsub)
    _add_check(bsub)
    _add_grant(bsub)


def _add_init(bsub: Any) -> None:
    """``budget init``."""
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


def _add_show_and_history(bsub: Any) -> None:
    """``budget show`` and ``budget history``."""
    for action, dataset_required, help_text, func in (
        ("show", False, "budget, spent and remaining per data set", _show),
        ("history", True, "every change of a data set's budget and every charge", _history),
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
        if action == "history":
            p.add_argument(
                "--changes", action="store_true",
                help="only the budget's changes (registration, raises, retirement: who, when, why); with "
                "--json, these instead of the charges",
            )
        p.set_defaults(func=func)


def _add_raise_and_retire(bsub: Any) -> None:
    """``budget raise`` and ``budget retire`` (the owner's)."""
    for action, help_text, func in (
        ("raise", "raise a data set's total epsilon (its owner only; recorded in the history)", _raise),
        ("retire", "retire a data set's budget: every later charge is refused (its owner only)", _retire),
    ):
        p = add_command(bsub, action, help=help_text)
        p.add_argument("--ledger", required=True, help="an existing ledger: SQLite file or postgresql:// URL")
        p.add_argument("--dataset", required=True, help="the data set")
        if action == "raise":
            p.add_argument(
                "--epsilon", type=float, required=True,
                help="the new total epsilon: above the current one (a budget is never lowered)",
            )
        p.add_argument("--reason", required=True, help="why (kept in the budget's history)")
        p.set_defaults(func=func)


def _add_check(bsub: Any) -> None:
    """``budget check``."""
    check = add_command(
        bsub, "check",
        help="recompose every charge from its recorded event and name any charge that under-stated its "
        "spend (exit status 1 if one did)",
    )
    check.add_argument("--ledger", required=True, help="an existing ledger: SQLite file or postgresql:// URL")
    check.add_argument("--dataset", help="the data set (default: all)")
    check.add_argument("--json", action="store_true", help="print JSON instead of a table")
    check.add_argument(
        "--no-full", action="store_true",
        help="skip the accountant's full recomposition (replay the charges' incremental composition only)",
    )
    check.set_defaults(func=_check)


def _add_grant(bsub: Any) -> None:
    """``budget grant``."""
    grant = add_command(
        bsub, "grant",
        help="PostgreSQL: let a database role charge and read the ledger, and nothing more (owner only)",
    )
    grant.add_argument("--ledger", required=True, help="the ledger's postgresql:// URL, as its owner")
    grant.add_argument(
        "--analyst", required=True,
        help="the role: gets SELECT on the ledger's tables and EXECUTE on its charge functions; every "
        "other privilege it held on the tables is revoked",
    )
    grant.set_defaults(func=_grant)
