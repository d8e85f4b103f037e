"""The ``dpinfer`` command line: one module per command group.

* :mod:`~dpinfer.cli.budget`: ``budget init | show | history`` (the privacy ledger);
* :mod:`~dpinfer.cli.simulate` and :mod:`~dpinfer.cli.abcdp`: the two-party ABCDP workflow;
* :mod:`~dpinfer.cli.dpvi`: ``dpvi``;
* :mod:`~dpinfer.cli.glm`: ``glm`` (the noise-aware private GLM);
* :mod:`~dpinfer.cli.smc`: ``smc-abc`` and ``exact-posterior``;
* :mod:`~dpinfer.cli.infer`: ``infer`` (the method that suits the release, :func:`dpinfer.infer`);
* :mod:`~dpinfer.cli.neural`: ``sppe`` and ``sple``;
* :mod:`~dpinfer.cli.runs`: ``runs list | show`` (runs recorded for resuming);
* :mod:`~dpinfer.cli.synthesize`: ``synthesize`` (synthetic data from a released posterior);
* :mod:`~dpinfer.cli.serve`: ``serve``, ``serve-token`` (the data owner's service) and ``remote``;
* ``demo`` (:func:`dpinfer.demo.run_demo`), added here.

Each command module defines ``register(subparsers)``, which adds parsers whose ``func`` attribute
runs the command; shared option blocks, the ledger decision and the one-line error handling are in
:mod:`~dpinfer.cli.common`. A command module whose method family is not part of this build is
skipped.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
from collections.abc import Sequence

from .._version import __version__
from .common import EXIT_STATUSES, INTERRUPTED, apply_help_style, module_present, run_command

# (command module with ``register(subparsers) -> None``, the package it drives). A command whose
# package is not part of this build is skipped; an error inside a present module propagates.
COMMAND_MODULES: list[tuple[str, str]] = [
    ("dpinfer.cli.budget", "dpinfer.privacy"),  # budget
    ("dpinfer.cli.simulate", "dpinfer.release"),  # simulate
    ("dpinfer.cli.abcdp", "dpinfer.release"),  # abcdp
    ("dpinfer.cli.dpvi", "dpinfer.release.dpvi"),  # dpvi
    ("dpinfer.cli.glm", "dpinfer.release.glm"),  # glm
    ("dpinfer.cli.smc", "dpinfer.inference"),  # smc-abc, exact-posterior
    ("dpinfer.cli.infer", "dpinfer.inference"),  # infer (the automatic choice)
    ("dpinfer.cli.neural", "dpinfer.inference.neural"),  # sppe, sple
    ("dpinfer.cli.release", "dpinfer.models"),  # release
    ("dpinfer.cli.check", "dpinfer.inference"),  # check (calibration)
    ("dpinfer.cli.runs", "dpinfer.execution"),  # runs list, runs show
    ("dpinfer.cli.synthesize", "dpinfer.models"),  # synthesize
    ("dpinfer.cli.schema", "dpinfer.data"),  # schema draft, schema check
    ("dpinfer.cli.serve", "dpinfer.service"),  # serve, serve-token, remote
]


def _demo(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    run_demo(args.out, seed=args.seed, quick=args.quick)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser: ``demo`` plus the commands of every present module."""
    parser = argparse.ArgumentParser(
        prog="dpinfer", description="Bayesian inference under differential privacy.",
        epilog="exit status (every command):\n" + "\n".join(
            f"  {code:>3}  {meaning}" for code, meaning in EXIT_STATUSES
        ) + "\nErrors are one line on standard error (never a traceback).",
    )
    parser.add_argument("--version", action="version", version=f"dpinfer {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser("demo", help="end-to-end tour of every capability (writes to --out)")
    demo.add_argument("--out", default="out", help="output directory (default: out)")
    demo.add_argument("--seed", type=int, default=2026, help="simulation seed (not privacy noise)")
    demo.add_argument("--quick", action="store_true", help="smaller runs, for smoke tests")
    demo.set_defaults(func=_demo)

    for name, package in COMMAND_MODULES:
        if module_present(package):
            importlib.import_module(name).register(sub)
    apply_help_style(parser)  # one --help style for every command (plain text, defaults once)
    return parser


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The parser :func:`main` uses, built once per process: building it takes 15-45 ms (every
    command's options), which an in-process caller of :func:`main` (a notebook, a test suite, the
    README check) would otherwise pay on every call. Parsing never changes an argparse parser
    (the one repeatable option, ``--allowance``, starts from a new list on each parse)."""
    return build_parser()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpinfer`` console script.

    Returns
    -------
    int
        The exit status (:data:`~dpinfer.cli.common.EXIT_STATUSES`): 0 on success, 2 for a usage
        or data error (argparse's own usage errors raise ``SystemExit(2)``), 1 for a refusal or a
        failure, 3 for a result that failed its own diagnostics, 130 for Ctrl-C; every error is
        one line on standard error, never a traceback.
    """
    try:
        parser = _parser()
        args = parser.parse_args(argv)
    except KeyboardInterrupt:
        print("dpinfer: interrupted (Ctrl-C).", file=sys.stderr)
        return INTERRUPTED
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return run_command(args.func, args)


__all__ = ["build_parser", "main"]
