"""``dpinfer runs list | show``: the runs recorded in a run store (:mod:`dpinfer.execution.runstore`).

``list`` shows one line per run (id, kind, status, completed steps, wall and CPU time); ``show``
one run's record: model, settings, seed, observed release, the privacy report of that release,
times and the step its latest checkpoint resumes from. ``--runs`` is a file or a
``postgresql://`` URL (passwords are never shown).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..execution.runstore import RunStore
from ..privacy.ledger_store import is_database_url
from .common import Refusal, add_command


def _store(target: str) -> RunStore:
    if not is_database_url(target) and not Path(target).is_file():
        raise Refusal(f"no run store at {target}; runs are recorded there by smc_abc(..., runs={target!r}).")
    return RunStore(target)


def _list(args: argparse.Namespace) -> int:
    store = _store(args.runs)
    runs = store.runs()
    if args.json:
        print(json.dumps(runs, indent=2))
        return 0
    if not runs:
        print(f"no runs in {store.location}")
        return 0
    print(f"{'run':34s} {'kind':8s} {'status':11s} {'steps':>5s} {'wall s':>8s} {'cpu s':>8s}  updated")
    for r in runs:
        print(
            f"{r['id']:34s} {r['kind']:8s} {r['status']:11s} {r['steps']:5d} {r['wall_s']:8.1f} "
            f"{r['cpu_s']:8.1f}  {r['updated']}" + (f"  ({r['note']})" if r["note"] else "")
        )
    return 0


def _show(args: argparse.Namespace) -> int:
    record: dict[str, Any] = _store(args.runs).run(args.run_id)
    if args.json:
        print(json.dumps(record, indent=2))
        return 0
    for key in ("id", "kind", "status", "note", "created", "updated", "host", "pid", "steps", "wall_s",
                "cpu_s", "seed"):
        print(f"{key:9s} {record[key]}")
    for key in ("model", "settings", "observed", "privacy"):
        print(f"{key:9s} {json.dumps(record[key], sort_keys=True)}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``runs`` (with the actions ``list``, ``show``) to the command line."""
    runs = add_command(subparsers, "runs", help="recorded runs that can be resumed: list, show")
    rsub = runs.add_subparsers(dest="runs_command", metavar="ACTION", required=True)
    for action, help_text, func in (
        ("list", "every run in the store", _list),
        ("show", "one run's model, settings, seed, privacy report and times", _show),
    ):
        p = add_command(rsub, action, help=help_text)
        if action == "show":
            p.add_argument("run_id", help="the run's id (from `dpinfer runs list`)")
        p.add_argument("--runs", default="runs.db", help="the run store: a SQLite file or postgresql:// URL")
        p.add_argument("--json", action="store_true", help="print JSON instead of text")
        p.set_defaults(func=func)
