"""``dpinfer dpvi``: fit a DPVI posterior to a CSV file (or the shipped Abalone set).

Example::

    dpinfer budget init --ledger budget.db --dataset records --epsilon 2 --delta 1e-5 \\
        --accountant pld --data records.csv
    dpinfer dpvi --data records.csv --target y --model logistic --epsilon 1 --delta 1e-5 \\
        --ledger budget.db --out fit.json

The defaults are the library's: the per-example likelihood gradients (with respect to θ, at 4
Monte Carlo draws) are clipped before any scaling, at a clip norm estimated privately (``--clip
auto``, the 0.995 quantile of the norms, its cost inside the same event), and the iterates of the
last half are averaged. When the gradient noise is small (high ε; a public rule) the variational
family is full-rank for up to 30 coefficients (``--family auto``: it captures the posterior's
correlations at no privacy cost in this mode), the quantile 0.999 and the AdaGrad step 0.05;
otherwise mean-field, 0.995 and 0.1.
The DPVI paper's fit is ``--per-example elbo --clip 5 --last-iterate --no-intercept`` (``auto``
is then mean-field).

A private fit needs ``--ledger PATH`` (charged to ``--dataset``, default: the file stem, before
any noise is drawn) or an explicit ``--no-ledger`` (released unaccounted). If the data set was
registered with ``--data FILE``, ``--data`` must hold the same records (any format or order).

``--non-private`` fits the confidential data without noise: the output is not a release and
offers no privacy at all. It is never charged (``--ledger`` is refused) and, like an unaccounted
release, needs the explicit ``--no-ledger``; the output file says ``NON-PRIVATE`` in its config
(``privacy_warning``) and a notice on standard error says so again.

The CSV has a header row; every column other than ``--target`` (or those listed in
``--features``) is a feature and must be numeric. As ``dpinfer glm``: ``--bounds`` gives the
features' *public* bounds (``LO:HI`` for all features, or ``NAME=LO:HI,...`` per column), which
scale every feature to [-1, 1] (a value outside them is refused before anything is charged), and
the model has an intercept unless ``--no-intercept`` (the DPVI paper's Abalone model has none).
Without ``--bounds`` the features are used as given (standardising with the data's own statistics
is itself a release), or ``--schema FILE`` (:class:`dpinfer.data.Schema`) gives the bounds: the
budget is then its data set, and a file that does not match it is refused before anything is
charged. ``--data`` may also be a Parquet or Arrow IPC file.
``--data abalone`` uses the shipped Abalone set with the DPVI authors' preprocessing and reports
the test accuracy.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidDataError, NonPrivateResultWarning
from .common import (
    Refusal,
    add_command,
    add_ledger_options,
    mark_unaccounted,
    open_release_ledger,
    pick,
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

# options passed to DPVI.fit under their own names
# the options passed on unchanged into DPVI.fit's groups (PrivacyOptions, OptimizerOptions, TrainingOptions)
_PRIVACY_OPTIONS = ("accountant", "neighbouring", "sampling", "paper_accounting", "delta_prime")
_OPTIMIZER_OPTIONS = ("optimizer", "lr")
_TRAINING_OPTIONS = ("sampling_rate", "steps", "per_example", "mc_samples")


def read_csv(
    path: str | Path, target: str, features: list[str] | None = None
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Features, target and feature names from a CSV file with a header row (or a Parquet/Arrow
    file, read by :mod:`dpinfer.data`)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"data file {p} not found.")
    if is_table_file(p):
        header = file_columns(p)
        if target not in header:
            raise InvalidDataError(f"target column {target!r} not in {p} (columns: {header}).")
        names = features or [h for h in header if h != target]
        missing = [f for f in names if f not in header]
        if missing:
            raise InvalidDataError(f"feature column(s) {missing} not in {p} (columns: {header}).")
        out = read_numeric(p, [*names, target])
        return out[:, :-1], out[:, -1], names
    with p.open(newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise InvalidDataError(f"{p} is empty; expected a header row and records.") from None
        rows, lines = [], []
        for r in reader:
            if not r or not "".join(r).strip():
                raise InvalidDataError(
                    f"{p} line {reader.line_num} is blank; every line after the header must be one record "
                    "(a blank line is not dropped: it would change N and the noise). Nothing was charged "
                    "or released."
                )
            rows.append(r)
            lines.append(reader.line_num)
    if target not in header:
        raise InvalidDataError(f"target column {target!r} not in {p} (columns: {header}).")
    names = features or [h for h in header if h != target]
    missing = [f for f in names if f not in header]
    if missing:
        raise InvalidDataError(f"feature column(s) {missing} not in {p} (columns: {header}).")
    if not rows:
        raise InvalidDataError(f"{p} has a header but no records.")
    cols = [header.index(c) for c in [*names, target]]
    out = np.empty((len(rows), len(cols)))
    for i, (r, line) in enumerate(zip(rows, lines, strict=True)):
        if len(r) != len(header):
            raise InvalidDataError(f"{p} line {line} has {len(r)} fields, expected {len(header)}.")
        for j, c in enumerate(cols):
            if r[c].strip() == "" or r[c].strip().lower() in ("na", "nan", "null", "none"):
                raise InvalidDataError(  # a record's cell: never shown
                    f"{p} line {line}, column {header[c]!r}: missing value; the fit needs complete "
                    "records: remove the record or impute it first. Nothing was charged or released."
                )
            try:
                out[i, j] = float(r[c])
            except ValueError:
                raise InvalidDataError(  # a record's cell: never shown
                    f"{p} line {line}, column {header[c]!r}: not a number. Encode "
                    "categorical columns numerically first; nothing was charged or released."
                ) from None
    return out[:, :-1], out[:, -1], names


#: What a non-private fit's output and notices say (config["privacy_warning"]).
NON_PRIVATE_MARK = (
    "NON-PRIVATE: fitted to the confidential data without noise (dpinfer dpvi --non-private "
    "--no-ledger); not a differentially private release: do not publish it or anything computed from it."
)


def _ledger(args: argparse.Namespace, private: bool) -> tuple[Any, str | None]:
    """The ledger decision, before anything is read (refusals first).

    A non-private fit is never charged, and it needs the same explicit, loud choice as an
    unaccounted release: ``--no-ledger`` (:func:`~dpinfer.cli.common.open_release_ledger` refuses
    without it).
    """
    if args.data == "abalone":
        from ..datasets import data_path

        data_file, default_name = data_path("abalone.data"), "abalone"
    else:
        data_file, default_name = Path(args.data), Path(args.data).stem
    if private:
        return open_release_ledger(args, data_file, default_name)
    if args.ledger or args.dataset:
        raise Refusal(
            "--non-private fits are not releases and cannot be charged to a ledger; pass --no-ledger "
            "instead (nothing was read or written)."
        )
    if not args.no_ledger:
        raise Refusal(
            "--non-private fits the confidential data WITHOUT noise: the output is not a private "
            "release. Pass --no-ledger to make that choice explicit (nothing was read or written)."
        )
    return open_release_ledger(args, data_file, default_name)  # (None, None) with --no-ledger


def _data(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray, list[str] | None, Any]:
    """``(X, y, feature names, test split or None)`` of ``--data``."""
    if args.data == "abalone":
        from ..datasets import load_abalone

        split = load_abalone(args.label_rule)
        return split.X_train, split.y_train, None, (split.X_test, split.y_test)
    if not args.target:
        raise InvalidDataError("--target COLUMN is required with a CSV file.")
    feats = [f.strip() for f in args.features.split(",")] if args.features else None
    schema = load_schema(args)
    validate_file(args.data, schema)
    if feats is None and schema is not None:
        feats = [n for n, c in schema.columns.items()
                 if c.release and c.type in ("float", "int", "bool") and n != args.target]
    X, y, names = read_csv(args.data, args.target, feats)
    return X, y, names, None


def _clip(args: argparse.Namespace, private: bool) -> float | str | None:
    """``--clip``: "auto" or a positive number; a non-private fit clips only on request."""
    if not (private or args.clip_non_private):
        return None
    if args.clip == "auto":
        if not private:
            raise InvalidDataError("--clip-non-private needs a numeric --clip (auto is a private estimate).")
        return "auto"
    try:
        value = float(args.clip)
    except ValueError:
        raise InvalidDataError(f"--clip takes 'auto' or a positive number, got {args.clip!r}.") from None
    if not value > 0 or value == float("inf"):
        raise InvalidDataError(f"--clip must be 'auto' or a positive finite number, got {args.clip!r}.")
    return value


def _range(text: str, what: str) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in text.split(":"))
    except ValueError:
        raise Refusal(f"{what} must be LO:HI (two numbers), got {text!r}.") from None
    return lo, hi


def _bounds(text: str, names: list[str] | None) -> Any:
    """``--bounds``, as ``dpinfer glm`` reads it: ``LO:HI`` for all features or ``NAME=LO:HI,...``."""
    if "=" not in text:
        return _range(text, "--bounds")
    out = {}
    for part in text.split(","):
        name, _, rng = part.partition("=")
        out[name.strip()] = _range(rng, f"--bounds for {name.strip()!r}")
    unknown = [c for c in out if names is None or c not in names]
    if unknown:
        raise Refusal(f"--bounds names column(s) {unknown} that are not features ({names}).")
    return out


def _run(args: argparse.Namespace) -> int:
    from ..models.data_spec import DataSpec
    from ..privacy.context import ReleaseContext
    from ..release.dpvi.engine import DPVI
    from ..release.dpvi.models import make_model
    from ..release.dpvi.options import OptimizerOptions, PrivacyOptions, TrainingOptions

    private = not args.non_private
    schema = load_schema(args)
    schema_dataset(args, schema)  # the budget is the schema's data set
    ledger, dataset = _ledger(args, private)
    X, y, names, test = _data(args)
    if private and args.epsilon is None and args.noise_multiplier is None:
        raise InvalidDataError("give --epsilon (or --noise-multiplier), or --non-private for a baseline.")
    model = make_model(args.model)  # dim from the data (the intercept included)
    bounds = _bounds(args.bounds, names) if args.bounds is not None else None  # None: the schema's, if any
    if args.delta is None:  # the budget's delta when charged to a ledger (so defaults fit), else 1e-5
        args.delta = ledger.budget(dataset).delta if ledger is not None else 1e-5
        args.delta = args.delta if args.delta > 0 else 1e-5
    with release_notices(accounted=ledger is not None or not private), warnings.catch_warnings():
        # non-private: the notice below says it (NON_PRIVATE_MARK), once, in the command's terms
        warnings.filterwarnings("ignore", category=NonPrivateResultWarning)
        fit = DPVI(model, args.family).fit(
            X,
            y,
            epsilon=args.epsilon if private else None,
            delta=args.delta if private else None,
            privacy=PrivacyOptions(
                clip=_clip(args, private), noise_multiplier=args.noise_multiplier if private else None,
                **pick(args, *_PRIVACY_OPTIONS),
            ),
            optimizer=OptimizerOptions(**pick(args, *_OPTIMIZER_OPTIONS)),
            training=TrainingOptions(
                progress=not args.no_progress, average=not args.last_iterate, **pick(args, *_TRAINING_OPTIONS)
            ),
            private=private,
            seed=args.seed,
            context=ReleaseContext(ledger=ledger, dataset=dataset),
            # public bounds (--bounds, else the schema's) scale the features to [-1, 1]
            data=DataSpec(
                intercept=not args.no_intercept, bounds=bounds, schema=schema, feature_names=names
            ),
        )
    mark_unaccounted(fit, ledger)
    if not private:
        fit.config["privacy_warning"] = NON_PRIVATE_MARK
        print(f"dpinfer: notice: {NON_PRIVATE_MARK}", file=sys.stderr)
    if names is not None:
        if getattr(args, "target", None):  # the synthetic records' last column (dpinfer synthesize)
            fit.config["target_name"] = str(args.target)
    path = fit.save(args.out)
    print(fit.summary())
    extra: dict[str, Any] = {}
    if test is not None and args.model == "logistic":
        extra["test_accuracy"] = fit.accuracy(*test)
        print(f"  test accuracy (Abalone, {len(test[1])} held-out records): {extra['test_accuracy']:.4f}")
    if ledger is not None:
        print(f"  charged to {dataset!r} in {ledger.location}: spent {ledger.spent(dataset):.4g}")
    print(f"wrote {path}")
    if args.json:
        print(
            json.dumps({
                "out": str(path), **extra, "private": private,
                "privacy": _quiet_privacy(fit.privacy.to_dict()) if fit.privacy else None,
                "noise_sd": fit.noise_sd.tolist(), "converged": fit.converged,
                **({} if private else {"privacy_warning": NON_PRIVATE_MARK}),
            })
        )
    return 0


def _quiet_privacy(report: dict[str, Any]) -> dict[str, Any]:
    """The report without per-step traces (any ``*_trace`` detail; a fit keeps none of its
    noisy clip counts since issue 35, but a result file written before may hold them)."""
    details = report.get("details")
    if isinstance(details, dict):
        report = {**report, "details": {k: v for k, v in details.items() if not k.endswith("_trace")}}
    return report


#: DPVI's option names in its errors and warnings, as this command's flags
HINTS = (
    ("training=TrainingOptions(steps=...)", "--steps"),
    ("a larger sampling_rate", "a larger --sampling-rate"),
    ("raise the learning rate", "raise --lr"),
)


def register(subparsers: Any) -> None:
    """Add ``dpinfer dpvi`` to the CLI."""
    p = add_command(
        subparsers,
        "dpvi",
        help="differentially private variational inference (logistic / Poisson regression)",
        description=__doc__,
    )
    p.add_argument("--data", required=True,
                   help="CSV file with a header row, a Parquet or Arrow IPC file, or 'abalone' (shipped)")
    add_schema_option(p)
    p.add_argument("--target", help="target column of the CSV (required for a CSV)")
    p.add_argument("--features", help="comma-separated feature columns (default: all but the target)")
    p.add_argument("--model", default="logistic", choices=("logistic", "poisson"), help="GLM likelihood")
    p.add_argument("--bounds",
                   help="public feature bounds: LO:HI for all, or NAME=LO:HI,NAME=LO:HI,... per column "
                   "(scale every feature to [-1, 1]; default: the schema's, else the features as given)")
    icpt = p.add_mutually_exclusive_group()
    icpt.add_argument("--intercept", dest="no_intercept", action="store_false", default=False,
                      help="an intercept in the linear predictor (the default)")
    icpt.add_argument("--no-intercept", dest="no_intercept", action="store_true",
                      help="no intercept in the linear predictor (the DPVI paper's Abalone model)")
    p.add_argument("--family", default="auto", choices=("auto", "meanfield", "fullrank"),
                   help="variational family: auto (full-rank Gaussian for at most 30 coefficients with "
                   "--per-example theta when the noise is small, else diagonal), diagonal (meanfield, "
                   "the paper's) or full-rank")
    p.add_argument("--epsilon", type=float, help="target epsilon (the noise is calibrated to it)")
    p.add_argument(
        "--delta", type=float, default=None,
        help="target delta, at most the budget's delta (None: the budget's delta with --ledger, else 1e-5)",
    )
    p.add_argument("--noise-multiplier", type=float, help="fix sigma instead of --epsilon")
    p.add_argument(
        "--clip", default="auto",
        help="per-example L2 clip norm C, or 'auto': estimated privately (0.995 quantile of the norms; "
        "replace-one, Poisson batches); the paper's is 5 with --per-example elbo",
    )
    p.add_argument("--sampling-rate", type=float, default=0.05, help="Poisson sampling rate q")
    p.add_argument("--steps", type=int, default=1000, help="gradient steps T")
    p.add_argument("--lr", type=float, default=None,
                   help="learning rate (default: 0.05 for adagrad when the gradient noise is small, "
                   "else 0.1)")
    p.add_argument("--optimizer", default="adagrad", choices=("adagrad", "adam", "sgd"), help="optimizer")
    p.add_argument("--accountant", default=None, help="pld | rdp | advanced (None: pld)")
    p.add_argument("--neighbouring", default="replace-one", choices=("replace-one", "add-remove"),
                   help="neighbouring relation")
    p.add_argument("--sampling", default="poisson", choices=("poisson", "with-replacement"),
                   help="minibatch sampling")
    p.add_argument("--paper-accounting", action="store_true", help="report 2*act(2 sigma, delta/2) (paper)")
    p.add_argument("--delta-prime", type=float, help="delta' of the advanced composition")
    p.add_argument("--per-example", default="theta", choices=("theta", "likelihood", "elbo"),
                   help="what is clipped per example: the likelihood gradient in theta before any "
                   "scaling (pulled back after the noise), the same in the variational parameters, "
                   "or the scaled ELBO term (the DPVI paper's reproduction)")
    p.add_argument("--last-iterate", action="store_true",
                   help="return the last iterate (the paper's) instead of the tail average")
    p.add_argument("--mc-samples", type=int, default=None,
                   help="Monte Carlo draws per step (default: 4 with --per-example theta, else 1)")
    p.add_argument("--label-rule", default="code", choices=("code", "paper"), help="Abalone label rule")
    p.add_argument("--non-private", action="store_true",
                   help="non-private baseline (no clip, no noise; NOT a release): needs --no-ledger")
    p.add_argument("--clip-non-private", action="store_true", help="clip in the non-private baseline")
    p.add_argument("--seed", type=int, default=None, help="simulation seed (never the privacy noise)")
    add_ledger_options(p)
    p.add_argument("--dataset", help="data-set name in the ledger (default: the file stem)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (shown on a terminal)")
    p.add_argument("--json", action="store_true", help="also print a JSON line")
    p.add_argument("--out", required=True, help="output JSON file")
    p.set_defaults(func=_run, cli_hints=HINTS)
