"""``dpinfer release``: the data owner's step of private-data inference.

Reads the confidential records from a CSV file, computes the statistic the model declares
(clamped to the model's declared bounds by the model itself), releases it through the model's
mechanism — charged to the ledger *before* the noise is drawn — and writes the release file that
the analyst's commands read (``dpinfer smc-abc / exact-posterior / sppe / sple --observed FILE``)::

    dpinfer release --model gaussian-mean --data x.csv --columns x --epsilon 1 \\
        --model-args '{"clamp": [-2, 2]}' --ledger budget.db --dataset xs --out release.json

A model of your own is named ``--model package.module:factory`` with one ``--columns`` column:
its mechanism must be a :func:`~dpinfer.models.clamped_release` (which computes the clamped
statistic of the records), and a factory taking ``n`` gets the file's number of records.

The number of records n is public (replace-one neighbours) and taken from the file. The release
file is JSON: ``{"observed": [...], "epsilon": ε, "model": NAME, "model_args": {...},
"privacy": report}``; it holds nothing confidential.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from ..models.shipped.registry import build_model
from ..privacy.context import ReleaseContext
from .common import (
    Refusal,
    add_command,
    add_ledger_options,
    check_output_path,
    open_release_ledger,
    release_notices,
    write_text_atomic,
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

#: model -> (the columns its statistic reads, in order, and how they become the statistic's inputs)
RELEASABLE = {
    "gaussian-mean": ("x", "one numeric column: the values whose clamped mean is released"),
    "linreg": ("x1,x2,y", "three numeric columns: two covariates and the response"),
    "naive-bayes": ("class,f1,f2", "three 0/1 columns: the class label and two binary features"),
}


def read_columns(path: str | Path, columns: list[str]) -> np.ndarray:
    """The named numeric columns of a CSV file with a header row, shape (rows, len(columns)).

    Blank lines and empty cells are refused (never dropped): dropping a record would change n and
    with it the sensitivity the noise is calibrated to.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"data file {p} not found.")
    if is_table_file(p):  # Parquet / Arrow IPC (dpinfer.data)
        header = file_columns(p)
        missing = [c for c in columns if c not in header]
        if missing:
            raise InvalidDataError(f"column(s) {missing} not in {p} (columns: {header}); pass --columns.")
        return read_numeric(p, columns)
    with p.open(newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows:
        raise InvalidDataError(f"{p} is empty; expected a header row and records.")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in columns if c not in header]
    if missing:
        raise InvalidDataError(f"column(s) {missing} not in {p} (columns: {header}); pass --columns.")
    idx = [header.index(c) for c in columns]
    out = np.empty((len(rows) - 1, len(columns)))
    for i, row in enumerate(rows[1:]):
        line = i + 2
        if not row or all(not cell.strip() for cell in row):
            raise InvalidDataError(
                f"{p} line {line} is blank; remove it or fill the record (a dropped record would "
                "change n and the noise scale). Nothing was charged or released."
            )
        if len(row) != len(header):
            raise InvalidDataError(f"{p} line {line} has {len(row)} fields, expected {len(header)}.")
        for j, c in enumerate(idx):
            cell = row[c].strip()
            if not cell:
                raise InvalidDataError(
                    f"{p} line {line}, column {header[c]!r}: missing value. Impute or remove the record "
                    "before the release; nothing was charged or released."
                )
            try:
                out[i, j] = float(cell)
            except ValueError:
                raise InvalidDataError(  # the cell's value is a record's: never shown
                    f"{p} line {line}, column {header[c]!r}: not a number; encode it numerically. "
                    "Nothing was charged or released."
                ) from None
    if out.shape[0] == 0:
        raise InvalidDataError(f"{p} has a header but no records.")
    return out


def statistic(name: str, model: Any, table: np.ndarray) -> np.ndarray:
    """The confidential statistic of model ``name`` computed from the columns of ``table``."""
    if name == "gaussian-mean":
        return model.statistic(table[:, 0])
    if name == "linreg":
        return model.statistic(table[:, :2], table[:, 2])
    if name == "naive-bayes":
        return model.statistic(table[:, 0].astype(int), table[:, 1:].astype(int))
    raise InvalidDataError(
        f"model {name!r} cannot be released from a CSV (releasable: {sorted(RELEASABLE)})."
    )


def _user_release(args: argparse.Namespace, model_args: dict[str, Any], ledger: Any, dataset: Any) -> Any:
    """Build the factory's model for this file and release the records through its mechanism."""
    import inspect

    from ..models.user_factory import build_user_model, load_factory

    if not args.columns or "," in args.columns:
        raise Refusal(f"--model {args.model}: name the one column of records with --columns COLUMN.")
    table = read_columns(args.data, [args.columns.strip()])
    n = int(table.shape[0])
    params = inspect.signature(load_factory(args.model)).parameters
    if "n" in params and "n" not in model_args:
        model_args = {**model_args, "n": n}
    model, _ = build_user_model(args.model, args.epsilon, **model_args)
    mech = model.mechanism
    if not hasattr(mech, "release_records"):
        raise Refusal(
            f"--model {args.model}: its mechanism ({type(mech).__name__}) does not say how records become "
            "the statistic; build it with dpinfer.models.clamped_release(...) to release from a CSV, "
            "or release from Python with model.mechanism.release(statistic, "
            "context=ReleaseContext(ledger=..., dataset=...))."
        )
    if getattr(mech, "n", None) is not None and mech.n != n:
        raise Refusal(
            f"--model {args.model}: its release is declared for n = {mech.n} records but {args.data} has "
            f"{n}; give the factory n (an argument named n gets the file's count) or --model-args."
        )
    with release_notices(ledger is not None):
        rel = mech.release_records(
            table[:, 0], context=ReleaseContext(ledger=ledger, dataset=dataset),
            label=f"release {args.model} eps={args.epsilon:g}",
        )
    return rel, model_args, n


def _release(args: argparse.Namespace) -> int:
    try:
        model_args = json.loads(args.model_args) if args.model_args else {}
    except ValueError:
        raise Refusal(f"--model-args is not a JSON object: {args.model_args!r}.") from None
    if not isinstance(model_args, dict):
        raise Refusal(f"--model-args must be a JSON object, got {args.model_args!r}.")
    from ..models.user_factory import is_user_model

    user = is_user_model(args.model)
    if not user and args.model not in RELEASABLE:
        raise Refusal(
            f"--model {args.model!r}: releasable models are {', '.join(sorted(RELEASABLE))}, or a model of "
            "your own as package.module:factory whose mechanism is a clamped_release."
        )
    check_output_path(args.out)  # written whole after the release: refused now if it cannot be
    schema = load_schema(args)
    schema_dataset(args, schema)  # the budget is the schema's data set
    ledger, dataset = open_release_ledger(args, args.data)  # refusals first: nothing read before
    validate_file(args.data, schema)  # a file that does not match its schema: refused, nothing charged
    if schema is not None and args.model == "gaussian-mean" and "clamp" not in model_args:
        column = (args.columns or RELEASABLE[args.model][0]).strip()
        model_args = {**model_args, "clamp": list(schema.bounds([column])[0])}  # the schema's bounds
    if user:
        rel, model_args, n = _user_release(args, model_args, ledger, dataset)
        return _write(args, rel, model_args, n, ledger, dataset)
    if args.model == "gaussian-mean" and "clamp" not in model_args:
        raise Refusal(  # explicit bounds: the default [-2, 2] is for standardised data (BMI: all clamped)
            "--model gaussian-mean: give the clamp bounds in the data's units, e.g. --model-args "
            "'{\"clamp\": [15, 45]}'. The model's default [-2, 2] is for standardised data: on raw values "
            "such as body-mass indices it would clamp every record and spend the budget on releasing a bound."
        )
    if args.model == "gaussian-mean":
        # the analyst's model in the data's units: a prior and record spread from the public clamp
        # bounds (prior_from_clamp), for the keys the owner did not give; they do not change the release
        from ..models.shipped.gaussian_mean import prior_from_clamp

        try:
            model_args = {**prior_from_clamp(model_args["clamp"]), **model_args}
        except (TypeError, ValueError):
            raise Refusal(
                f"--model-args: clamp must be two numbers [lo, hi], got {model_args['clamp']!r}."
            ) from None
    columns = [c.strip() for c in (args.columns or RELEASABLE[args.model][0]).split(",")]
    table = read_columns(args.data, columns)
    model_args = {**model_args, "n": int(table.shape[0])}  # n is public under replace-one
    try:
        model = build_model(args.model, args.epsilon, **model_args)
    except TypeError as exc:
        raise Refusal(f"--model-args does not fit model {args.model!r}: {exc}") from None
    s = statistic(args.model, model, table)  # clamps to the model's declared bounds
    with release_notices(ledger is not None):
        rel = model.mechanism.release(
            s, context=ReleaseContext(ledger=ledger, dataset=dataset),
            label=f"release {args.model} eps={args.epsilon:g}",
        )
    return _write(args, rel, model_args, int(table.shape[0]), ledger, dataset)


def _write(
    args: argparse.Namespace, rel: Any, model_args: dict[str, Any], n: int, ledger: Any, dataset: Any
) -> int:
    """Write the release file (module docstring) and say what was done."""
    privacy = rel.privacy.to_dict()
    doc = {
        "observed": np.asarray(rel.value, dtype=np.float64).tolist(),
        "epsilon": float(args.epsilon),
        "model": args.model,
        "model_args": model_args,
        "privacy": privacy,
    }
    out = write_text_atomic(args.out, json.dumps(doc, indent=2))
    print(f"released the {args.model} statistic of {n} records at epsilon={args.epsilon:g}")
    if ledger is not None:
        print(f"  charged to {dataset!r} in {ledger.location}: spent {ledger.spent(dataset):.4g}")
    print(f"wrote {out} (read it with --model {args.model} --observed {out})")
    if args.model == "gaussian-mean":
        a = model_args
        print(
            f"  the analyst's model, stored in the file: theta ~ N({a['prior_mean']:g}, "
            f"{a['prior_sd']:g}^2) and records' sd {a['noise_sd']:g} (from the clamp bounds unless given "
            "in --model-args); change them with --prior-mean, --prior-sd or --model-args "
            "'{\"noise_sd\": ...}' when reading the release"
        )
    return 0


def register(subparsers: Any) -> None:
    """Add ``dpinfer release`` to the CLI."""
    choices = "; ".join(f"{m}: --columns {c} ({d})" for m, (c, d) in RELEASABLE.items())
    p = add_command(
        subparsers,
        "release",
        help="data owner: release a model's statistic from a CSV through its mechanism",
        description=(
            "Compute the statistic a private-data model declares from confidential records, release "
            "it through the model's mechanism (charged to the ledger first) and write the release "
            f"file the analyst's commands read. Models and default columns: {choices}."
        ),
    )
    p.add_argument(
        "--model", required=True,
        help=f"the private-data model: {', '.join(sorted(RELEASABLE))}, or package.module:factory "
        "(a model of your own whose mechanism is a clamped_release; one --columns column)",
    )
    p.add_argument("--data", required=True,
                   help="the confidential records: CSV (header row), Parquet or Arrow IPC (.arrow/.feather)")
    add_schema_option(p)
    p.add_argument("--columns", default=None, help="comma-separated columns (default: the model's, above)")
    p.add_argument("--epsilon", type=float, required=True, help="privacy level of the release (pure DP)")
    p.add_argument(
        "--model-args", default="",
        help='JSON object of model keyword arguments, e.g. \'{"clamp": [-2, 2]}\' (n comes from the file)',
    )
    add_ledger_options(p)
    p.add_argument("--dataset", default=None, help="data set name in the ledger (with --ledger)")
    p.add_argument("--out", required=True, help="the release file to write (JSON)")
    p.set_defaults(func=_release)
