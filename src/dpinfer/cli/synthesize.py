"""``dpinfer synthesize``: synthetic records from a released posterior::

    dpinfer synthesize --release release.json --n 1000 --out synthetic.csv

Reads a saved posterior (ABCDP release, DPVI fit, SMC-ABC / exact / neural posterior), draws θ
from it, simulates one record per θ from the model (:mod:`dpinfer.models.synthesis`) and writes
the records as CSV, with ``synthetic.csv.privacy.json`` beside it stating which columns carry
which guarantee and which are not protected; the same statement is printed. Sampling the release
is post-processing: nothing is charged. ABCDP releases name their model; posteriors of
private-data models need ``--model`` (and ``--model-args``).

A DPVI regression releases y given x only, and synthesis never copies confidential covariates.
Its covariates come from exactly one of:

* ``--covariate-model FILE``: a DP model of the covariates released before (no further cost);
* ``--covariates FILE --covariate-epsilon E --covariate-bounds B`` (the data owner): releases a
  DP product-of-marginals model of the confidential covariates in FILE
  (:func:`dpinfer.release.synthesis.release_covariate_model`), charged to ``--ledger/--dataset``
  (bound to FILE's records) or explicitly unaccounted with ``--no-ledger``, writes it to
  ``OUT.covariates.json`` and samples from it;
* ``--public-covariates FILE``: covariates the user declares public in their own right; their rows
  are copied, and the output says they are NOT protected.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from .common import (
    Refusal,
    add_command,
    add_ledger_options,
    count,
    load_model,
    open_release_ledger,
    release_notices,
)
from .data_input import (
    add_schema_option,
    file_columns,
    is_table_file,
    load_schema,
    read_numeric,
    schema_dataset,
    validate_file,
)

COVARIATE_OPTIONS = ("covariates", "public_covariates", "covariate_model")


def _load(path: str) -> Any:
    from ..results.format import load_result

    p = Path(path)
    sibling = p.with_suffix(".npz")  # `dpinfer abcdp --out release.json` writes release.npz beside it
    if not p.is_file():
        if sibling.is_file():
            return load_result(sibling)
        raise FileNotFoundError(f"release file {p} not found.")
    try:
        return load_result(p)
    except InvalidDataError:
        if sibling.is_file() and sibling != p:
            return load_result(sibling)
        raise


def read_covariates(path: str, d: int, names: tuple[str, ...] | None) -> tuple[np.ndarray, tuple[str, ...]]:
    """The ``d`` covariate columns of a CSV file with a header row: the columns named ``names``
    (the fit's feature names) when the file has them all, else all of its columns if there are
    ``d``. Errors name the file, line and column, never a value."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"covariates file {p} not found.")
    if is_table_file(p):  # Parquet / Arrow IPC (dpinfer.data)
        header = file_columns(p)
        if names and all(n in header for n in names):
            cols = tuple(names)
        elif len(header) == d:
            cols = tuple(header)
        else:
            raise InvalidDataError(f"{p} has columns {header}, but the fit needs {d} covariate columns.")
        return read_numeric(p, list(cols)), cols
    with p.open(newline="") as fh:
        rows = list(csv.reader(fh))
    if len(rows) < 2:
        raise InvalidDataError(f"{p} needs a header row and at least one record.")
    header = [h.strip() for h in rows[0]]
    if names and all(n in header for n in names):
        idx, cols = [header.index(n) for n in names], tuple(names)
    elif len(header) == d:
        idx, cols = list(range(d)), tuple(header)
    else:
        wanted = f" ({', '.join(names)})" if names else ""
        raise InvalidDataError(
            f"{p} has columns {header}, but the fit needs {d} covariate columns{wanted}: give a file with "
            "exactly those columns (the target column left out)."
        )
    out = np.empty((len(rows) - 1, d))
    for i, row in enumerate(rows[1:]):
        line = i + 2
        if len(row) != len(header):
            raise InvalidDataError(f"{p} line {line} has {len(row)} fields, expected {len(header)}.")
        for j, c in enumerate(idx):
            try:
                out[i, j] = float(row[c])
            except ValueError:
                raise InvalidDataError(
                    f"{p} line {line}, column {header[c]!r}: not a number (or missing); encode it "
                    "numerically or remove the record. Nothing was charged or written."
                ) from None
    return out, cols


def _bounds(text: str, columns: tuple[str, ...]) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise Refusal(
            f"--covariate-bounds is not JSON: {text!r}; give [lo, hi] for every column, a list of pairs, "
            'or an object {"column": [lo, hi], ...}.'
        ) from None
    if isinstance(value, dict):
        missing = [c for c in columns if c not in value]
        if missing:
            raise Refusal(f"--covariate-bounds names no bounds for column(s) {missing}.")
        return [value[c] for c in columns]
    return value


def _covariate_source(args: argparse.Namespace, result: Any, ledger: Any, dataset: Any) -> Any:
    """The covariates of a DPVI fit's synthetic records (module docstring)."""
    from ..inference.glm import GLMPosterior
    from ..models.synthesis import MarginalHistogramModel, PublicCovariates

    names: tuple[str, ...] | None
    if isinstance(result, GLMPosterior):  # a private GLM: its release names the features
        d, names = int(result.release.n_features), tuple(result.release.feature_names)
    else:
        d = int(getattr(result.model, "n_features", result.dim))
        names = result.param_names if result.config.get("feature_names") else None
        if (result.config.get("design") or {}).get("intercept"):  # θ has one more coordinate
            d = int(result.config["design"]["n_columns"])
            names = tuple(n for n in names if n != "intercept") if names else None
    if args.covariate_model:
        model = MarginalHistogramModel.load(args.covariate_model)
        if model.n_columns != d:
            raise InvalidDataError(
                f"{args.covariate_model} models {model.n_columns} covariates; the fit has {d}."
            )
        return model
    if args.public_covariates:
        X, cols = read_covariates(args.public_covariates, d, names)
        return PublicCovariates(X, source=f"file {Path(args.public_covariates).name}", columns=cols)
    from ..privacy.context import ReleaseContext
    from ..release.synthesis import release_covariate_model

    schema = load_schema(args)
    validate_file(args.covariates, schema)  # refused before anything is charged
    X, cols = read_covariates(args.covariates, d, names)
    unknown = sorted(_integer_columns(args) - set(cols))
    if unknown:  # before the covariate model is released and charged
        raise Refusal(f"--covariate-integer names column(s) {unknown} that are not covariates "
                      f"({list(cols)}). Nothing was charged or written.")
    integer = [c in _integer_columns(args) for c in cols]
    bounds = _bounds(args.covariate_bounds, cols) if args.covariate_bounds else None  # None: the schema's
    with release_notices(ledger is not None):
        model = release_covariate_model(
            X, bounds=bounds, epsilon=args.covariate_epsilon, schema=schema,
            bins=args.covariate_bins, integer=integer, columns=cols,
            context=ReleaseContext(ledger=ledger, dataset=dataset),
            label=f"synthesize: covariate marginals eps={args.covariate_epsilon:g}",
        )
    path = model.save(Path(args.out).with_name(Path(args.out).name + ".covariates.json"))
    print(f"dpinfer: note: released a DP covariate model, wrote {path} (reuse: --covariate-model {path})",
          file=sys.stderr)
    return model


def _integer_columns(args: argparse.Namespace) -> set[str]:
    return {c.strip() for c in (args.covariate_integer or "").split(",") if c.strip()}


def _refusals(args: argparse.Namespace) -> tuple[Any, Any]:
    """Option combinations refused before anything is read; the ledger decision for --covariates."""
    given = [o for o in COVARIATE_OPTIONS if getattr(args, o)]
    if len(given) > 1:
        raise Refusal(
            "pass one source of covariates: " + ", ".join("--" + o.replace("_", "-") for o in given)
            + " contradict each other."
        )
    if args.covariates:
        if args.covariate_epsilon is None or not (args.covariate_bounds or args.schema):
            raise Refusal(
                f"--covariates {args.covariates} reads confidential covariates, and synthetic data never "
                "copy them: release a DP model of them instead by adding --covariate-epsilon E and "
                "--covariate-bounds (public bounds, e.g. '[[0, 120], [0, 1]]'), with --ledger/--dataset "
                "(or --no-ledger); or, if the file is public in its own right, pass it as "
                "--public-covariates FILE (copied, and stated NOT protected). Nothing was written."
            )
        schema_dataset(args, load_schema(args))  # the budget is the schema's data set
        return open_release_ledger(args, args.covariates)
    if args.ledger or args.no_ledger or args.dataset:
        raise Refusal(
            "--ledger/--dataset/--no-ledger charge the release of a DP covariate model (--covariates FILE): "
            "synthesizing from a release alone costs nothing and charges nothing."
        )
    for option in ("covariate_epsilon", "covariate_bounds", "covariate_integer"):
        if getattr(args, option) is not None:
            raise Refusal(f"--{option.replace('_', '-')} applies only with --covariates FILE.")
    return None, None


def _run(args: argparse.Namespace) -> int:
    ledger, dataset = _refusals(args)
    result = _load(args.release)
    from ..inference.glm import GLMPosterior
    from ..release.abc_result import ABCResult
    from ..release.dpvi.result import DPVIResult

    kind = type(result).__name__  # for messages only; the dispatch below is by class
    conditional = isinstance(result, DPVIResult | GLMPosterior)  # regressions: y given covariates
    if not conditional and any(getattr(args, o) for o in COVARIATE_OPTIONS):
        raise Refusal(f"{args.release} holds a {kind}, whose model simulates whole records: covariate "
                      "options are only for DPVI and private-GLM regressions. Nothing was charged or "
                      "written.")
    if isinstance(result, ABCResult):  # ABCDPResult included
        out = result.synthesize(args.n, seed=args.seed, model=None)
    elif conditional:
        if not any(getattr(args, o) for o in COVARIATE_OPTIONS):
            what = "DPVI" if isinstance(result, DPVIResult) else "private GLM"
            raise Refusal(
                f"a {what} posterior models y given x: pass "
                "--covariate-model FILE (a released DP covariate "
                "model), --covariates FILE with --covariate-epsilon and --covariate-bounds (releases one, "
                "charged), or --public-covariates FILE (covariates public in their own right; copied and "
                "stated NOT protected)."
            )
        from ..models.synthesis import check_n

        check_n(args.n)  # before a covariate model is released and charged
        out = result.synthesize(args.n, _covariate_source(args, result, ledger, dataset), seed=args.seed)
        target = getattr(result, "config", {}).get("target_name")
        if target and out.columns[-1] == "y" and target not in out.columns[:-1]:
            from dataclasses import replace

            out = replace(out, columns=(*out.columns[:-1], str(target)))  # the input's name, not "y"
    else:
        if not args.model:
            raise InvalidDataError(
                f"{args.release} holds a {kind}: name its model with --model (and --model-args)."
            )
        privacy = getattr(result, "privacy", None)
        eps = privacy.epsilon if privacy is not None else 1.0
        model = load_model(args.model, eps, json.loads(args.model_args or "{}"))  # or package.module:factory
        out = result.synthesize(args.n, model, seed=args.seed)
    path = out.to_csv(args.out)
    from ..models.synthesis import sidecar_path

    print(json.dumps({"out": str(path), "privacy_file": str(sidecar_path(path)), "n": out.n,
                      "columns": list(out.columns), "source": kind, "statement": out.statement(),
                      "privacy": out.privacy_report()}, indent=2, default=float))
    print(f"dpinfer: note: {out.statement()} (details: {sidecar_path(path)})", file=sys.stderr)
    return 0


def register(subparsers: Any) -> None:
    """Add ``synthesize``."""
    p = add_command(subparsers, "synthesize",
                    help="synthetic records from a released posterior (post-processing: no privacy cost)")
    p.add_argument("--release", required=True,
                   help="saved posterior (ABCDP release.json, DPVI fit, `dpinfer glm` fit, .npz, .pt)")
    p.add_argument("--n", type=count, required=True, help="number of synthetic records")
    p.add_argument("--out", required=True,
                   help="output CSV file (PATH.privacy.json beside it states what is and is not protected)")
    p.add_argument("--seed", type=int, default=0, help="seed of the θ draws and simulations (public)")
    p.add_argument("--model", help="model of a private-data posterior (smc-abc, exact-posterior, sppe, "
                   "sple): a built-in name or package.module:factory (the current directory is importable)")
    p.add_argument("--model-args", help="JSON keyword arguments of --model")
    p.add_argument(
        "--covariate-model",
        help="DPVI / GLM: a released DP covariate model (JSON, e.g. OUT.covariates.json of an earlier run)",
    )
    p.add_argument(
        "--covariates",
        help="DPVI / GLM, data owner: the CONFIDENTIAL covariates (CSV with a header row, Parquet or Arrow): "
        "a DP model of them is "
        "released "
        "(needs --covariate-epsilon, --covariate-bounds and a ledger decision); its rows are never copied",
    )
    p.add_argument(
        "--public-covariates",
        help="DPVI / GLM: a CSV of covariates that are public in their own right; rows are copied and the "
        "output "
        "states they are NOT protected",
    )
    p.add_argument(
        "--covariate-epsilon", type=float,
        help="epsilon of the DP covariate model released from --covariates (charged to --ledger)",
    )
    p.add_argument(
        "--covariate-bounds",
        help="public bounds of the covariates (JSON): [lo, hi] for all, [[lo, hi], ...] per column, or "
        '{"column": [lo, hi]}; declared from the domain, never from the data; values are clamped',
    )
    add_schema_option(p)
    p.add_argument(
        "--covariate-bins", type=count, default=20,
        help="equal-width bins per continuous covariate of the DP covariate model",
    )
    p.add_argument(
        "--covariate-integer",
        help="comma-separated covariates taking integer values (one bin per integer of the bounds)",
    )
    add_ledger_options(p)
    p.add_argument("--dataset", default=None,
                   help="data set in the ledger charged for the DP covariate model (with --ledger)")
    p.set_defaults(func=_run)
