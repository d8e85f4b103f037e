"""``dpinfer simulate`` and ``dpinfer abcdp``: the two-party ABCDP workflow (paper, Section 3).

* The modeler (public): ``dpinfer simulate MODEL --draws T --seed S --out sims.npz`` draws
  θ_t from the prior and simulates Y_t; the file holds ``theta`` (T, p), ``sims`` (T, ...) and
  a JSON ``meta`` (model, seed, parameter names, the median-heuristic bandwidth computed from the
  simulated data only).
* The data owner (private): ``dpinfer abcdp --observed data.csv --simulations sims.npz -c 10
  --epsilon 1 --epsilon-abc 0.1 [--resample] (--ledger L --dataset NAME | --no-ledger)
  --out release.json`` validates everything, charges the ledger, runs Algorithm 1 and writes only
  the released indicators (as accepted positions), the accepted θ and the privacy report. Either
  ``--ledger`` or an explicit ``--no-ledger`` (an unaccounted release) is required; if the data
  set was registered with ``dpinfer budget init --data data.csv``, ``--observed`` must be that
  very file (same bytes).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..distances import RFFMMD, ExactMMD, median_heuristic
from ..errors import InvalidDataError, InvalidPrivacyParameterError

MODELS = ("mixture-uniform", "covid", "tuberculosis")


def make_model(name: str, n_points: int | None = None, n_datasets: int | None = None) -> Any:
    """The model object for a CLI model name."""
    if name == "mixture-uniform":
        from ..models.mixture_uniform import MixtureOfUniforms

        return MixtureOfUniforms(n_points=n_points or 5000)
    if name == "covid":
        from ..models.covid import CovidPolynomial

        return CovidPolynomial()
    if name == "tuberculosis":
        from ..models.tuberculosis import Tuberculosis

        return Tuberculosis(n_datasets=n_datasets or 100)
    raise InvalidDataError(f"unknown model {name!r}; choose one of {MODELS}.")


def _simulate(args: argparse.Namespace) -> int:
    """Stream the simulations into an uncompressed ``.npz`` (memory does not grow with T)."""
    import zipfile

    from .draws import SimulatedDraws

    if args.draws < 1:
        raise InvalidDataError(f"--draws must be >= 1, got {args.draws}.")
    model = make_model(args.model, args.n_points, args.n_datasets)
    draws = SimulatedDraws(model.prior_sample, model.simulate, args.draws, args.seed, args.batch_size)
    dtype = np.dtype(np.float32 if args.float32 else np.float64)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    kind = "datasets" if args.model == "tuberculosis" else "points"
    thetas: list[np.ndarray] = []
    head: list[np.ndarray] = []  # the first simulated data sets, for the bandwidth heuristic
    n_head = 0
    sims_shape: tuple[int, ...] = ()
    tmp = out.with_name(out.name + ".partial")
    from .abcdp import _progress

    with (
        zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf,
        _progress(args.draws, None, f"simulate {args.model}") as bar,
    ):
        member = None
        for theta, sims in draws.batches():
            bar.update(len(theta))
            if member is None:
                sims_shape = (args.draws, *sims.shape[1:])
                member = zf.open("sims.npy", "w", force_zip64=True)
                header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
                          "shape": sims_shape}
                np.lib.format.write_array_header_2_0(member, header)
            member.write(np.ascontiguousarray(sims, dtype=dtype).tobytes())
            thetas.append(theta)
            if kind == "points" and n_head < 200:
                head.append(sims[: 200 - n_head])
                n_head += len(head[-1])
        assert member is not None
        member.close()
        theta_all = np.concatenate(thetas)
        meta: dict[str, Any] = {
            "model": args.model,
            "param_names": list(model.param_names),
            "seed": args.seed,
            "batch_size": args.batch_size,
            "n_draws": args.draws,
            "kind": kind,
        }
        if kind == "points":
            meta["bandwidth_median_heuristic"] = median_heuristic(np.concatenate(head), seed=args.seed)
        with zf.open("theta.npy", "w") as f:
            np.lib.format.write_array(f, theta_all)
        with zf.open("meta.npy", "w") as f:
            np.lib.format.write_array(f, np.array(json.dumps(meta)))
    tmp.replace(out)
    print(f"wrote {out}: theta {theta_all.shape}, sims {sims_shape} ({args.model}, seed {args.seed})")
    return 0


def _memmap_npz_member(path: Path, name: str) -> np.ndarray | None:
    """Memory-map an uncompressed ``.npy`` member of an ``.npz`` (as written by ``np.savez``).

    Returns None if the member is compressed or not a plain array; the caller then loads it.
    """
    import zipfile

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
    lines = [ln for ln in p.read_text().splitlines() if ln.strip()]
    if not lines:
        raise InvalidDataError(f"{p} is empty.")
    first = [c.strip() for c in lines[0].split(",")]
    try:
        [float(c) for c in first]
        header, rows = None, lines
    except ValueError:
        header, rows = first, lines[1:]
    try:
        arr = np.array([[float(c) for c in ln.split(",")] for ln in rows], dtype=np.float64)
    except ValueError as exc:
        raise InvalidDataError(f"{p}: non-numeric value ({exc}).") from None
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise InvalidDataError(f"{p}: expected a table of numbers with one row per record.")
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


def _abcdp(args: argparse.Namespace) -> int:
    import dataclasses

    from ..cli import open_release_ledger, release_notices
    from .abcdp import abcdp

    # refusals first: nothing is read, charged or released without a ledger decision
    ledger, dataset = open_release_ledger(args, args.observed)
    theta, sims, meta = load_simulations(args.simulations)
    observed = load_observed(args.observed, args.columns)
    kind = meta.get("kind", "points")
    if args.distance == "auto":
        args.distance = "clipped" if kind == "datasets" else "rff"
    if args.distance == "clipped":
        if meta.get("model") != "tuberculosis":
            raise InvalidDataError("--distance clipped is implemented for the tuberculosis model only.")
        from ..distances import ClippedDistance
        from ..models.tuberculosis import tb_distance

        distance = ClippedDistance(tb_distance, args.clip)
    else:
        bandwidth = args.bandwidth if args.bandwidth is not None else meta.get("bandwidth_median_heuristic")
        if bandwidth is None:
            raise InvalidPrivacyParameterError(
                "no bandwidth: pass --bandwidth, or simulate with `dpinfer simulate` which stores the "
                "median heuristic of the simulated data (never computed from the observed data)."
            )
        if args.distance == "rff":
            distance = RFFMMD(bandwidth, args.n_features, seed=args.feature_seed,
                              dtype="float32" if args.float32 else "float64")
        elif args.distance == "exact":
            distance = ExactMMD(bandwidth)
        else:
            raise InvalidDataError(f"unknown distance {args.distance!r}.")
    with release_notices(accounted=ledger is not None):
        res = abcdp(
            observed,
            (theta, sims),
            distance,
            args.c,
            args.epsilon,
            args.epsilon_abc,
            args.resample,
            ledger=ledger,
            dataset=dataset,
            label=f"abcdp {Path(args.simulations).name}",
            batch_size=args.batch_size,
            param_names=tuple(meta.get("param_names", ())),
            progress=False if args.no_progress else None,
            meta={"simulations": str(args.simulations), "model": meta.get("model"), "seed": meta.get("seed")},
        )
    if ledger is None and res.privacy is not None and res.privacy.accounted:
        res.privacy = dataclasses.replace(res.privacy, accounted=False)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res.release_dict(), indent=2, default=float))
    print(res.summary())
    print(f"release written to {out}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``simulate`` and ``abcdp`` to the ``dpinfer`` command line."""
    from ..cli import add_ledger_options

    sim = subparsers.add_parser("simulate", help="modeler: draw θ from the prior and simulate (public)")
    sim.add_argument("model", choices=MODELS)
    sim.add_argument("--draws", type=int, required=True, help="T, the number of (θ, Y) pairs")
    sim.add_argument("--seed", type=int, default=0, help="simulation seed")
    sim.add_argument("--out", required=True, help="output .npz file")
    sim.add_argument("--n-points", type=int, default=None, help="points per data set (mixture-uniform)")
    sim.add_argument("--n-datasets", type=int, default=None, help="data sets per simulation (tuberculosis)")
    sim.add_argument("--batch-size", type=int, default=256)
    sim.add_argument("--float32", action="store_true", help="store the simulated data as float32")
    sim.set_defaults(func=_simulate)

    ab = subparsers.add_parser("abcdp", help="data owner: private rejection ABC (ABCDP, sparse vector)")
    ab.add_argument("--observed", required=True, help="CSV of the confidential observed data")
    ab.add_argument("--columns", default=None, help="columns of the CSV to use (names or indices)")
    ab.add_argument("--simulations", required=True, help=".npz from `dpinfer simulate`")
    ab.add_argument("-c", type=int, required=True, help="number of posterior samples (stop after c)")
    ab.add_argument("--epsilon", type=float, required=True, help="epsilon_total (pure DP)")
    ab.add_argument("--epsilon-abc", type=float, required=True, help="ABC threshold")
    ab.add_argument("--resample", action="store_true", help="redraw the threshold after each acceptance")
    add_ledger_options(ab)
    ab.add_argument("--dataset", default=None, help="data set name in the ledger (with --ledger)")
    ab.add_argument("--out", required=True, help="release JSON")
    ab.add_argument("--distance", default="auto", choices=("auto", "rff", "exact", "clipped"))
    ab.add_argument(
        "--bandwidth", type=float, default=None, help="kernel bandwidth (default: from the sims file)"
    )
    ab.add_argument("--n-features", type=int, default=100, help="random features D (rff)")
    ab.add_argument("--feature-seed", type=int, default=0)
    ab.add_argument("--float32", action="store_true", help="float32 embeddings (rff)")
    ab.add_argument("--clip", type=float, default=200.0, help="clip bound C (clipped distance)")
    ab.add_argument("--batch-size", type=int, default=256)
    ab.add_argument("--no-progress", action="store_true")
    ab.set_defaults(func=_abcdp)
