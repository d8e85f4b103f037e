"""``dpinfer synthesize``: synthetic records from a released posterior (no privacy cost)::

    dpinfer synthesize --release release.json --n 1000 --out synthetic.csv

Reads a saved posterior (ABCDP release, DPVI fit, SMC-ABC / exact / neural posterior), draws θ
from it, simulates one record per θ from the model (:mod:`dpinfer.models.synthesis`) and writes
the records as CSV. Post-processing of the release: nothing is charged, and the printed privacy
report says so. ABCDP releases name their model; posteriors of private-data models need
``--model`` (and ``--model-args``); DPVI regressions need public ``--covariates``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from .common import add_command


def _load(path: str) -> Any:
    from ..results.format import load_result

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"release file {p} not found.")
    try:
        return load_result(p)
    except InvalidDataError:
        sibling = p.with_suffix(".npz")  # `dpinfer abcdp --out release.json` writes release.npz beside it
        if sibling.is_file() and sibling != p:
            return load_result(sibling)
        raise


def _covariates(path: str) -> np.ndarray:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"covariates file {p} not found.")
    try:
        return np.loadtxt(p, delimiter=",", skiprows=1, ndmin=2)
    except ValueError as exc:
        raise InvalidDataError(f"{p}: covariates must be a numeric CSV with a header row ({exc}).") from None


def _run(args: argparse.Namespace) -> int:
    from ..models.shipped.registry import build_model

    result = _load(args.release)
    kind = type(result).__name__
    if kind in ("ABCResult", "ABCDPResult"):
        out = result.synthesize(args.n, seed=args.seed, model=None)
    elif kind == "DPVIResult":
        if not args.covariates:
            raise InvalidDataError("a DPVI posterior models y given x: pass --covariates X.csv (public).")
        out = result.synthesize(args.n, _covariates(args.covariates), seed=args.seed)
    else:
        if not args.model:
            raise InvalidDataError(
                f"{args.release} holds a {kind}: name its model with --model (and --model-args)."
            )
        privacy = getattr(result, "privacy", None)
        eps = privacy.epsilon if privacy is not None else 1.0
        model = build_model(args.model, eps, **json.loads(args.model_args or "{}"))
        out = result.synthesize(args.n, model, seed=args.seed)
    path = out.to_csv(args.out)
    print(json.dumps({"out": str(path), "n": out.n, "columns": list(out.columns), "source": kind,
                      "privacy": out.privacy_report()}, indent=2, default=float))
    return 0


def register(subparsers: Any) -> None:
    """Add ``synthesize``."""
    p = add_command(subparsers, "synthesize",
                    help="synthetic records from a released posterior (post-processing: no privacy cost)")
    p.add_argument("--release", required=True,
                   help="saved posterior (ABCDP release.json, DPVI fit, .npz, .pt)")
    p.add_argument("--n", type=int, required=True, help="number of synthetic records")
    p.add_argument("--out", required=True, help="output CSV file")
    p.add_argument("--seed", type=int, default=0, help="seed of the θ draws and simulations (public)")
    p.add_argument("--model", help="model of a private-data posterior (smc-abc, exact-posterior, sppe, sple)")
    p.add_argument("--model-args", help="JSON keyword arguments of --model")
    p.add_argument("--covariates", help="public covariates CSV (header row) for a DPVI regression")
    p.set_defaults(func=_run)
