"""``dpinfer check``: simulation-based calibration of an inference method on a model.

Examples::

    dpinfer check --model gaussian-mean --epsilon 1 --method smc-abc --replicates 100 --plot sbc.png
    dpinfer check --model mypackage.models:make_model --model-args '{"n": 40}' --method exact --json

Prints the one-line verdict (or ``--json``: verdict, p-values, coverage); exit status 0 when
the SBC ranks are uniform, 3 when they are not (:mod:`dpinfer.diagnostics.calibration`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import InvalidDataError
from ..models.shipped.registry import MODELS
from .common import add_command, load_model

MISCALIBRATED = 3


def _json_object(option: str, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidDataError(f"{option} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidDataError(f"{option} must be a JSON object, got {text!r}.")
    return value


def _check(args: argparse.Namespace) -> int:
    from ..inference.entry import calibration_check

    model = load_model(args.model, args.epsilon, _json_object("--model-args", args.model_args))
    options = _json_object("--method-args", args.method_args)
    res = calibration_check(
        model, args.method, args.replicates, args.draws, seed=args.seed, budget_seconds=args.budget, **options
    )
    if args.plot:
        from ..plots import plot_calibration

        plot_calibration(res, args.plot)
    if args.json:
        print(json.dumps(res.to_dict(), indent=2))
    else:
        print(res.verdict())
    return 0 if res.passed else MISCALIBRATED


def register(subparsers: Any) -> None:
    """Add ``dpinfer check`` to the CLI."""
    p = add_command(
        subparsers,
        "check",
        help="simulation-based calibration (SBC ranks, coverage) of an inference method on a model",
    )
    p.add_argument(
        "--model", required=True,
        help=f"one of {', '.join(MODELS)}, or package.module:factory (a user model; the current "
        "directory is importable)",
    )
    p.add_argument("--epsilon", type=float, default=None,
                   help="privacy level (registry models: default 1; passed to a factory that takes epsilon)")
    p.add_argument("--model-args", default="{}", help="JSON object of keyword arguments for the model")
    p.add_argument(
        "--method", default="auto", choices=("auto", "exact", "importance", "smc-abc", "sppe", "sple"),
        help="inference method to calibrate",
    )
    p.add_argument(
        "--method-args", default="{}", help="JSON object of keyword arguments for the method, e.g. "
        "'{\"n_particles\": 500}'",
    )
    p.add_argument("--replicates", type=int, default=100, help="SBC replicates (data sets)")
    p.add_argument("--draws", type=int, default=99, help="posterior draws per replicate")
    p.add_argument("--budget", type=float, default=120.0, help="time budget (s) of one fit for 'auto'")
    p.add_argument("--seed", type=int, default=None, help="simulation seed (not privacy noise)")
    p.add_argument("--plot", default=None, help="write the rank histograms and coverage plot here (PNG)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_check)


__all__ = ["load_model", "register"]
