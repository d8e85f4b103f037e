"""``dpinfer abcdp``: the data owner's private step of the two-party ABCDP workflow (Section 3).

``dpinfer abcdp --observed data.csv --simulations sims.npz -c 10 --epsilon 1 --epsilon-abc 0.1
[--resample] (--ledger L --dataset NAME | --no-ledger) --out release.json`` validates everything,
charges the ledger, runs Algorithm 1 and writes only the released indicators (as accepted
positions), the accepted θ and the privacy report. Either ``--ledger`` or an explicit
``--no-ledger`` (an unaccounted release) is required; if the data set was registered with
``dpinfer budget init --data data.csv``, ``--observed`` must hold the same records. The
simulations come from ``dpinfer simulate`` (:mod:`dpinfer.cli.simulate`).
"""

from __future__ import annotations

import argparse
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ..distances import RFFMMD, ExactMMD
from ..errors import InvalidDataError, InvalidPrivacyParameterError
from .common import add_command, add_ledger_options, mark_unaccounted, open_release_ledger, release_notices
from .data_input import (
    add_schema_option,
    file_columns,
    is_table_file,
    load_schema,
    read_numeric,
    schema_dataset,
    validate_file,
)


def _memmap_npz_member(path: Path, name: str) -> np.ndarray | None:
    """Memory-map an uncompressed ``.npy`` member of an ``.npz`` (as written by ``np.savez``).

    Returns None if the member is compressed or not a plain array; the caller then loads it.
    """
    with zipfile.ZipFile(path) as zf:
        try:
            info = zf.getinfo(name + ".npy")
        except KeyError:
            return None
        if info.compress_type != zipfile.ZIP_STORED:
            return None
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        local = f.read(30)
        if local[:4] != b"PK\x03\x04":
            return None
        name_len = int.from_bytes(local[26:28], "little")
        extra_len = int.from_bytes(local[28:30], "little")
        start = info.header_offset + 30 + name_len + extra_len
        f.seek(start)
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            return None
        if dtype.hasobject:
            return None
        offset = f.tell()
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape, order="F" if fortran else "C")


def load_simulations(path: str | Path) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Read a ``dpinfer simulate`` file; checks its keys and shapes.

    The simulated data are memory-mapped when stored uncompressed (the default of
    ``dpinfer simulate``), so ABCDP streams them batch by batch and memory does not grow with T.

    Returns
    -------
    theta, sims, meta
        θ (T, p), the simulated data (T, M, d) and the file's metadata (empty if it has none).
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"simulations file {p} not found (make it with `dpinfer simulate`).")
    try:
        with np.load(p, allow_pickle=False) as data:
            missing = {"theta", "sims"} - set(data.files)
            if missing:
                raise InvalidDataError(
                    f"{p} lacks {sorted(missing)}: a simulations file holds 'theta' (T, p) and 'sims' "
                    "(T, ...); make it with `dpinfer simulate`."
                )
            theta = data["theta"]
            sims = _memmap_npz_member(p, "sims")
            if sims is None:
                sims = data["sims"]
            meta = json.loads(str(data["meta"])) if "meta" in data.files else {}
    except (ValueError, OSError) as exc:
        raise InvalidDataError(f"cannot read simulations file {p}: {exc}") from None
    if theta.ndim != 2 or sims.ndim != 3 or theta.shape[0] != sims.shape[0]:
        raise InvalidDataError(
            f"{p}: expected theta (T, p) and sims (T, M, d) with the same T, got theta {theta.shape} "
            f"and sims {sims.shape}."
        )
    return theta, sims, meta


def load_observed(path: str | Path, columns: str | None = None) -> np.ndarray:
    """Observed data from a CSV (header optional); ``columns`` picks columns by name or index."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"observed data file {p} not found.")
    if is_table_file(p):  # Parquet / Arrow IPC (dpinfer.data): named columns, or all of them
        names = file_columns(p)
        picked = [c.strip() for c in columns.split(",")] if columns else names
        picked = [names[int(c)] if c.isdigit() and c not in names else c for c in picked]
        missing = [c for c in picked if c not in names]
        if missing:
            raise InvalidDataError(f"{p}: no column(s) {missing} (columns: {names}).")
        return read_numeric(p, picked)
    lines = p.read_text().splitlines()
    while lines and not lines[-1].strip():  # trailing newlines at the end of the file are no records
        lines.pop()
    if not lines:
        raise InvalidDataError(f"{p} is empty.")
    first = [c.strip() for c in lines[0].split(",")]
    try:
        [float(c) for c in first]
        header, start = None, 0
    except ValueError:
        header, start = first, 1
    width = len(first)
    rows = []
    for number, line in enumerate(lines[start:], start=start + 1):
        if not line.strip():
            raise InvalidDataError(
                f"{p}: line {number} is blank; every line after the header must be one record (a blank "
                "line is not dropped: it would change N and the noise scale). Remove it or fill it in."
            )
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != width:
            raise InvalidDataError(f"{p}: line {number} has {len(cells)} values, expected {width}.")
        row = []
        for k, cell in enumerate(cells):
            name = f"column {header[k]!r}" if header else f"column {k}"
            if cell == "" or cell.lower() in ("na", "nan", "null", "none"):
                raise InvalidDataError(
                    f"{p}: line {number}, {name}: missing value; ABCDP needs a complete "
                    "record on every line: remove the record or impute it before the release."
                )
            try:
                row.append(float(cell))
            except ValueError:
                raise InvalidDataError(
                    f"{p}: line {number}, {name}: not a number (encode categorical "
                    "columns as numbers)."
                ) from None
        rows.append(row)
    if not rows:
        raise InvalidDataError(f"{p}: no records after the header.")
    arr = np.array(rows, dtype=np.float64)
    if columns:
        idx = []
        for col in columns.split(","):
            col = col.strip()
            if col.isdigit():
                idx.append(int(col))
            elif header and col in header:
                idx.append(header.index(col))
            else:
                raise InvalidDataError(f"{p}: no column {col!r} (header: {header}).")
        arr = arr[:, idx]
    return arr


def _header(path: str | Path) -> list[str] | None:
    """The CSV's header (None if its first line is numbers); a Parquet/Arrow file's column names."""
    if is_table_file(path):
        return file_columns(path)
    with open(path) as fh:
        first = [c.strip() for c in fh.readline().split(",")]
    try:
        [float(c) for c in first]
        return None
    except ValueError:
        return first


def _distance(args: argparse.Namespace, meta: dict[str, Any]) -> Any:
    """The distance of ``--distance`` (``auto``: clipped for data sets of data sets, else RFF)."""
    if args.distance == "auto":
        args.distance = "clipped" if meta.get("kind", "points") == "datasets" else "rff"
    if args.distance == "clipped":
        if meta.get("model") != "tuberculosis":
            raise InvalidDataError("--distance clipped is implemented for the tuberculosis model only.")
        from ..distances import ClippedDistance
        from ..models.shipped.tuberculosis import tb_distance

        return ClippedDistance(tb_distance, args.clip)
    bandwidth = args.bandwidth if args.bandwidth is not None else meta.get("bandwidth_median_heuristic")
    if bandwidth is None:
        raise InvalidPrivacyParameterError(
            "no bandwidth: pass --bandwidth, or simulate with `dpinfer simulate` which stores the "
            "median heuristic of the simulated data (never computed from the observed data)."
        )
    if args.distance == "rff":
        return RFFMMD(bandwidth, args.n_features, seed=args.feature_seed,
                      dtype="float32" if args.float32 else "float64")
    if args.distance == "exact":
        return ExactMMD(bandwidth)
    raise InvalidDataError(f"unknown distance {args.distance!r}.")


def _abcdp(args: argparse.Namespace) -> int:
    from ..privacy.context import ReleaseContext
    from ..release.abcdp import ABCDPOptions, abcdp

    # refusals first: nothing is read, charged or released without a ledger decision
    schema = load_schema(args)
    schema_dataset(args, schema)  # the budget is the schema's data set
    ledger, dataset = open_release_ledger(args, args.observed)
    theta, sims, meta = load_simulations(args.simulations)
    validate_file(args.observed, schema)  # refused before anything is charged
    observed = load_observed(args.observed, args.columns)
    if sims.ndim == 3 and observed.shape[1] != sims.shape[2]:
        header = _header(args.observed)
        hint = (
            f"; pick {sims.shape[2]} of its columns with --columns (e.g. --columns {header[-1]})"
            if header and not args.columns and len(header) > sims.shape[2] else ""
        )
        raise InvalidDataError(
            f"{args.observed} has {observed.shape[1]} column(s) per record"
            + (f" ({', '.join(header)})" if header else "")
            + f" but the simulations in {args.simulations} have {sims.shape[2]} ({meta.get('model', '?')})"
            + hint + "."
        )
    distance = _distance(args, meta)
    with release_notices(accounted=ledger is not None):
        res = abcdp(
            observed,
            (theta, sims),
            distance,
            c=args.c,
            epsilon_total=args.epsilon,
            epsilon_abc=args.epsilon_abc,
            delta=args.delta,
            options=ABCDPOptions(
                noise=args.noise, resample=args.resample, release=args.release, batch_size=args.batch_size,
                progress=False if args.no_progress else None,
            ),
            seed=args.seed,
            context=ReleaseContext(
                ledger=ledger, dataset=dataset, label=f"abcdp {Path(args.simulations).name}"
            ),
            param_names=tuple(meta.get("param_names", ())),
            meta={"simulations": str(args.simulations), "model": meta.get("model"), "seed": meta.get("seed")},
        )
    mark_unaccounted(res, ledger)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    res.save(out)  # the result file beside --out (release.npz; ABCDPResult.load reads it)
    res.write_release_json(out)  # the release document as published
    print(res.summary())
    print(f"release written to {out}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``abcdp`` to the ``dpinfer`` command line."""
    ab = add_command(subparsers, "abcdp", help="data owner: private rejection ABC (ABCDP, sparse vector)")
    ab.add_argument("--observed", required=True,
        help="CSV of the confidential observed data: one record per line, numbers only, optional header; "
                    "blank lines and empty cells are refused (or a Parquet / Arrow IPC file)")
    add_schema_option(ab)
    ab.add_argument(
        "--columns", default=None,
        help="comma-separated columns of the CSV to use, by header name or 0-based index (None: all)",
    )
    ab.add_argument("--simulations", required=True, help=".npz from `dpinfer simulate`")
    ab.add_argument("-c", type=int, required=True, help="number of posterior samples (stop after c)")
    ab.add_argument("--epsilon", type=float, required=True, help="epsilon_total (pure DP with Laplace noise)")
    ab.add_argument("--epsilon-abc", type=float, required=True, help="ABC threshold")
    ab.add_argument("--resample", action="store_true", help="redraw the threshold after each acceptance")
    ab.add_argument("--noise", default="laplace", choices=("laplace", "gaussian"),
                    help="laplace: pure epsilon-DP (Algorithm 1); gaussian: (epsilon, delta)-DP sparse "
                    "vector in Renyi DP (Zhu & Wang 2020), needs --delta and an rdp ledger budget")
    ab.add_argument("--delta", type=float, default=0.0,
                    help="delta of the guarantee (with --noise gaussian or --release embedding)")
    ab.add_argument("--release", default="svt", choices=("svt", "embedding"),
                    help="svt: the sparse vector (noise grows with c); embedding: one Gaussian release of "
                    "the RFF mean embedding (L2 sensitivity 2/N), then ABC as post-processing, any c at the "
                    "same cost; needs --delta and --distance rff/auto")
    ab.add_argument("--seed", type=int, default=0,
                    help="public seed of the simulated mechanism noise (with --release embedding)")
    add_ledger_options(ab)
    ab.add_argument("--dataset", default=None, help="data set name in the ledger (with --ledger)")
    ab.add_argument(
        "--out", required=True, help="release JSON (the result file NAME.npz is written beside it)"
    )
    ab.add_argument(
        "--distance", default="auto", choices=("auto", "rff", "exact", "clipped"),
        help="MMD distance: rff (random Fourier features, O(N) per draw), exact MMD, clipped (tuberculosis); "
        "auto: clipped for the tuberculosis data sets, else rff",
    )
    ab.add_argument(
        "--bandwidth", type=float, default=None,
        help="Gaussian kernel bandwidth (None: the median heuristic stored in the simulations file)",

    )
    ab.add_argument("--n-features", type=int, default=100, help="random features D (rff)")
    ab.add_argument("--feature-seed", type=int, default=0, help="seed of the random features (public)")
    ab.add_argument("--float32", action="store_true", help="float32 embeddings (rff)")
    ab.add_argument("--clip", type=float, default=200.0, help="clip bound C (clipped distance)")
    ab.add_argument(
        "--batch-size", type=int, default=256, help="simulations compared per batch (memory, not results)"
    )
    ab.add_argument("--no-progress", action="store_true", help="no progress bar (shown on a terminal)")
    ab.set_defaults(func=_abcdp)
