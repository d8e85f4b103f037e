"""``dpinfer glm``: a noise-aware private GLM fitted to a CSV, Parquet or Arrow file.

Example::

    dpinfer budget init --ledger budget.db --dataset patients --epsilon 2 --delta 1e-5 \\
        --data patients.csv
    dpinfer glm --data patients.csv --target event --family logistic \\
        --bounds age=18:90,bmi=15:50 --epsilon 1 --delta 1e-6 --ledger budget.db --out fit.npz

The data owner's side (:func:`dpinfer.release.glm.release_glm_statistics`) scales every feature by
its public ``--bounds`` (``LO:HI`` for all features, or ``NAME=LO:HI,...`` per column: from the
domain, never from the data), refuses records outside them (nothing charged) and releases noisy
sufficient statistics once, charged to ``--ledger`` before the noise is drawn; the posterior is
post-processing (:func:`dpinfer.inference.glm.glm_posterior`). ``--family poisson`` needs
``--y-bounds YMAX`` and takes ``--offset COLUMN --offset-bounds LO:HI`` (e.g. log exposure);
``--family linear`` needs ``--y-bounds LO:HI``. The summary and ``--json`` give the coefficients
in the features' own units under the column names (``--json`` also the coefficients of the features
scaled to [-1, 1] by their bounds, which the model is fitted on, under ``"scaled"``); the output
file (``dpinfer.result``) keeps the release and its privacy report, so the same release can be
resampled (``GLMPosterior.load(path).resample(...)``) without a new charge.

With ``--schema FILE`` (:class:`dpinfer.data.Schema`) the bounds of the features, the response and
the offset default to the schema's (explicit options override them), the budget is the schema's
data set, and a file that does not match the schema is refused before anything is charged
(:mod:`dpinfer.cli.data_input`).

Refusals and bad input (a missing column, a value outside its bounds, a malformed option, a bad
sampler option, seed or output path) exit with status 2 and one line on standard error; nothing is
charged: every option, the posterior's included, is checked before the release. An error after the
release (e.g. the posterior's optimisation failing) exits with status 1 and says that the release
was charged.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import InvalidDataError
from .common import (
    Refusal,
    add_command,
    add_ledger_options,
    mark_unaccounted,
    open_release_ledger,
    release_notices,
)
from .data_input import add_schema_option, file_columns, load_schema, schema_dataset, validate_file

FAMILIES = ("logistic", "probit", "poisson", "linear")


def _read(
    path: Path, columns: list[str] | None, target: str, offset: str | None, schema: Any = None
) -> tuple[Any, ...]:
    """Features, target, offset and feature names: the DPVI command's reader (header row, no
    blank lines, no missing or non-numeric cells, no cell ever shown), with the offset column
    read as one more feature and split off. Parquet/Arrow files are read by dpinfer.data; with a
    schema, the features default to its releasable numeric columns and the file is validated."""
    from .dpvi import read_csv

    if not path.exists():
        raise Refusal(f"data file {path} not found (nothing was charged).")
    validate_file(path, schema)
    header = file_columns(path)
    if columns is None and schema is not None:
        columns = [n for n, c in schema.columns.items()
                   if c.release and c.type in ("float", "int", "bool") and n not in (target, offset)]
    names = columns or [h for h in header if h not in (target, offset)]
    if not names and header:
        raise Refusal(f"{path} has no feature columns besides the target.")
    try:
        X, y, _ = read_csv(path, target, [*names, offset] if offset else names)
    except InvalidDataError as exc:  # bad input: a refusal (exit 2), nothing charged
        raise Refusal(str(exc)) from None
    if offset:
        return X[:, :-1], y, X[:, -1], names
    return X, y, None, names


def _range(text: str, what: str) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in text.split(":"))
    except ValueError:
        raise Refusal(f"{what} must be LO:HI (two numbers), got {text!r}.") from None
    return lo, hi


def _bounds(text: str, names: list[str]) -> Any:
    if "=" not in text:
        return _range(text, "--bounds")
    out = {}
    for part in text.split(","):
        name, _, rng = part.partition("=")
        out[name.strip()] = _range(rng, f"--bounds for {name.strip()!r}")
    unknown = [c for c in out if c not in names]
    if unknown:
        raise Refusal(f"--bounds names column(s) {unknown} that are not features ({names}).")
    return out


def _run(args: argparse.Namespace) -> int:
    from ..inference.glm import GLMPosteriorOptions, GLMSamplerOptions
    from ..models.data_spec import DataSpec
    from ..pipelines.glm import private_glm
    from ..privacy.context import ReleaseContext

    schema = load_schema(args)
    schema_dataset(args, schema)  # the budget is the schema's data set
    ledger, dataset = open_release_ledger(args, Path(args.data), Path(args.data).stem)
    feats = [f.strip() for f in args.features.split(",")] if args.features else None
    X, y, off, names = _read(Path(args.data), feats, args.target, args.offset, schema)
    if args.bounds is None and schema is None:
        raise Refusal("--bounds is required (public feature bounds), or --schema FILE declaring them.")
    bounds = _bounds(args.bounds, names) if args.bounds is not None else None  # None: the schema's
    y_bounds: Any = None
    if schema is not None and args.y_bounds is None and args.family in ("poisson", "linear"):
        y_bounds = schema.bounds([args.target])[0]
    off_bounds: Any = None
    if schema is not None and args.offset and args.offset_bounds is None:
        off_bounds = schema.bounds([args.offset])[0]
    if args.y_bounds is not None:
        y_bounds = _range(args.y_bounds, "--y-bounds") if ":" in args.y_bounds else args.y_bounds
        if not isinstance(y_bounds, tuple):
            try:
                y_bounds = float(y_bounds)
            except ValueError:
                raise Refusal(f"--y-bounds must be YMAX or LO:HI, got {args.y_bounds!r}.") from None
    if args.offset_bounds:
        off_bounds = _range(args.offset_bounds, "--offset-bounds")
    try:
        with release_notices(accounted=ledger is not None):
            fit = private_glm(
                X, y, family=args.family, epsilon=args.epsilon, delta=args.delta,
                data=DataSpec(bounds=bounds, y_bounds=y_bounds, offset=off, offset_bounds=off_bounds,
                              intercept=not args.no_intercept, feature_names=names, schema=schema),
                context=ReleaseContext(ledger=ledger, dataset=dataset), seed=args.seed,
                posterior=GLMPosteriorOptions(sampler=GLMSamplerOptions(
                    method=args.sampler, proposals=args.proposals, fallback=args.fallback
                )),
            )
    except InvalidDataError as exc:
        if getattr(exc, "charged", False):  # failed after the release: it WAS charged (exit 1)
            raise
        raise Refusal(str(exc)) from None  # refused before anything was charged
    mark_unaccounted(fit, ledger)
    fit.settings["target"] = args.target  # names the response of `dpinfer synthesize`'s records
    path = fit.save(args.out)
    print(fit.summary())
    if ledger is not None and dataset is not None:
        print(f"  charged to {dataset!r} in {ledger.location}: spent {ledger.spent(dataset):.4g}")
    print(f"wrote {path}")
    if args.json:
        print(json.dumps({
            "out": str(path), "scale": "original", "param_names": list(fit.param_names),
            "mean": fit.mean().tolist(), "sd": fit.sd().tolist(), "interval90": fit.interval(0.9).tolist(),
            "scaled": {"param_names": list(fit.names("scaled")), "mean": fit.mean(scale="scaled").tolist(),
                       "sd": fit.sd(scale="scaled").tolist(),
                       "interval90": fit.interval(0.9, scale="scaled").tolist()},
            "privacy": fit.privacy.to_dict() if fit.privacy else None,
        }))
    return 0


def register(subparsers: Any) -> None:
    """Add ``dpinfer glm`` to the CLI."""
    p = add_command(subparsers, "glm", help="noise-aware private GLM (logistic, probit, Poisson, linear)",
                    description=__doc__)
    p.add_argument("--data", required=True,
                   help="the confidential records: CSV (header row), Parquet or Arrow IPC (.arrow/.feather)")
    p.add_argument("--target", required=True, help="response column")
    p.add_argument("--features", help="comma-separated feature columns (default: all but target and offset)")
    p.add_argument("--family", default="logistic", choices=FAMILIES, help="GLM family")
    p.add_argument("--bounds",
                   help="public feature bounds: LO:HI for all, or NAME=LO:HI,NAME=LO:HI,... per column "
                   "(required unless --schema declares them; overrides the schema's)")
    add_schema_option(p)
    p.add_argument("--y-bounds", help="response bounds: YMAX (poisson) or LO:HI (linear)")
    p.add_argument("--offset", help="offset column (enters the linear predictor with coefficient 1)")
    p.add_argument("--offset-bounds", help="public bounds LO:HI of the offset")
    p.add_argument("--no-intercept", action="store_true", help="no intercept in the linear predictor")
    p.add_argument("--epsilon", type=float, required=True, help="epsilon of the release")
    p.add_argument("--delta", type=float, default=1e-6, help="delta of the release")
    p.add_argument("--seed", type=int, default=None, help="sampler seed (never the privacy noise)")
    p.add_argument("--sampler", default="laplace-is", choices=("laplace-is", "hmc"),
                   help="posterior sampler: adaptive importance sampling from the Laplace approximation, "
                   "or HMC preconditioned by it (slower; real chains)")
    p.add_argument("--proposals", type=int, default=4000, help="importance-sampling proposals per round")
    p.add_argument("--fallback", default="hmc", choices=("hmc", "none"),
                   help="when the importance weights degenerate (Pareto k > 0.7 or ESS < 100): run HMC on "
                   "the same release (hmc), or keep the weights and warn (none); nothing is charged again")
    add_ledger_options(p)
    p.add_argument("--dataset", help="data-set name in the ledger (default: the file stem)")
    p.add_argument("--json", action="store_true", help="also print a JSON line")
    p.add_argument("--out", required=True, help="output result file (.npz)")
    p.set_defaults(func=_run)
