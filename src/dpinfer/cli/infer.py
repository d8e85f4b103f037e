"""``dpinfer infer``: the posterior of a release by the method that suits it (:func:`dpinfer.infer`).

Examples::

    dpinfer infer --model gaussian-mean --epsilon 1 --observed builtin
    dpinfer infer --model sir --epsilon 10 --observed release.json --budget 60 --out post.dpinfer --json

The release is given as for ``dpinfer exact-posterior`` (``--model``, ``--observed``, ``--epsilon``,
``--model-args``: a built-in model or ``package.module:factory``). ``--method auto`` (the default)
measures the cost of one simulation and chooses among exact, importance, smc-abc, sppe and sple
(:func:`dpinfer.inference.entry.choose_method`); the command prints which method it chose and why,
then the posterior summary, and saves the result with ``--out`` (``InferenceResult.load(path)``).
Its diagnostics are printed as warnings (each once) and listed under ``"findings"`` in ``--json``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from .common import (
    add_command,
    add_output_options,
    add_release_options,
    release_from_args,
    shown_warnings,
    without_warning_lines,
)


def _method_args(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--method-args is not JSON ({exc.msg}): {text!r}.") from None
    if not isinstance(value, dict):
        raise ValueError(f"--method-args must be a JSON object of keyword arguments, got {text!r}.")
    return value


def _infer(args: argparse.Namespace) -> int:
    from ..inference.entry import infer

    options = _method_args(args.method_args)
    model, observed, epsilon = release_from_args(args)
    with shown_warnings():  # its diagnostics, each once, in this command's flags
        res = infer(
            model, observed, args.method, seed=args.seed, backend=args.backend, budget_seconds=args.budget,
            progress=False if args.no_progress else None, **options,
        )  # fmt: skip
    saved = str(res.save(args.out)) if args.out else None
    if args.json:
        print(json.dumps({
            "model": args.model, "epsilon": float(epsilon), "method": res.method, "reason": res.reason,
            "param_names": list(res.param_names), "mean": res.mean().tolist(), "sd": res.sd().tolist(),
            "interval95": res.interval().tolist(), "findings": res.findings,
            "details": {k: v for k, v in res.details.items() if isinstance(v, (int, float, str))},
            "saved_to": saved,
        }, indent=2, default=str))  # fmt: skip
        return 0
    print(f"method: {res.method} ({'requested' if args.method != 'auto' else 'chosen'}: {res.reason})")
    # the findings were shown as warnings (once each); the summary's own copies are left out
    print("\n".join(without_warning_lines(res.summary()).splitlines()[1:]))
    if saved:
        print(f"saved to {saved}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``dpinfer infer`` to the ``dpinfer`` command line."""
    from ..inference.entry import METHODS

    p = add_command(
        subparsers, "infer",
        help="posterior of a release by the method that suits it (auto: says which it chose and why)",
        description=__doc__,
    )  # fmt: skip
    add_release_options(p)
    p.add_argument("--method", default="auto", choices=METHODS,
                   help="auto chooses by the model's mechanism and the cost of a simulation")
    p.add_argument("--budget", type=float, default=120.0,
                   help="seconds auto may plan to run (simulations plus neural training)")
    p.add_argument("--method-args", default="{}",
                   help="JSON object of keyword arguments for the chosen method, e.g. "
                   "'{\"n_particles\": 500}'")
    p.add_argument("--backend", default="auto",
                   help="where simulations run: auto | serial | processes | dask | tcp://scheduler:8786")
    p.add_argument("--seed", type=int, default=None, help="simulation seed (never privacy noise)")
    p.add_argument("--out", help="save the result (InferenceResult.load reads it; not saved without it)")
    add_output_options(p, progress="no progress bar (shown on a terminal)")
    p.set_defaults(func=_infer, cli_hints=(("method='exact'", "--method exact"),))


__all__ = ["register"]
