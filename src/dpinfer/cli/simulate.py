"""``dpinfer simulate``: the modeler's public step of the two-party ABCDP workflow (paper, Section 3).

``dpinfer simulate MODEL --draws T --seed S --out sims.npz`` draws θ_t from the prior and
simulates Y_t. The file holds ``theta`` (T, p), ``sims`` (T, ...) and a JSON ``meta`` (model,
seed, parameter names, the median-heuristic bandwidth computed from the simulated data only); the
data owner's ``dpinfer abcdp`` (:mod:`dpinfer.cli.abcdp`) reads it.

Sizes are checked before anything is simulated or written: one probe draw gives the bytes per
simulation, and a file that would exceed the output limit, the free disk or half the memory is
refused with the estimate and what to do (:func:`~dpinfer.cli.common.check_output_size`). The file
is streamed into a temporary file beside ``--out`` and renamed over it only when complete; an error
or Ctrl-C removes it (:func:`~dpinfer.cli.common.atomic_output`).
"""

from __future__ import annotations

import argparse
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ..distances import median_heuristic
from ..errors import InvalidDataError
from ..models.shipped.registry import ABCDP_MODELS, make_abcdp_model
from .common import add_command, atomic_output, check_output_size, count, progress_bar


def _check_sizes(args: argparse.Namespace, model: Any, dtype: np.dtype) -> None:
    """Refuse before anything is simulated or written: bytes of one simulated data set from one
    probe draw (public randomness of its own; the file's stream is untouched), times T."""
    probe = np.random.default_rng(0)
    theta = np.asarray(model.prior_sample(1, probe))
    per_draw = int(np.asarray(model.simulate(theta, probe))[0].size) * dtype.itemsize
    theta_bytes = float(args.draws) * theta.shape[-1] * 8
    n_bytes = float(args.draws) * per_draw + theta_bytes
    batch = min(args.batch_size, args.draws) * per_draw * 8  # the batch as float64, with copies
    check_output_size(
        f"simulate {args.model} --draws {args.draws} ({per_draw} bytes per simulation)",
        n_bytes,
        args.out,
        memory_bytes=2 * theta_bytes + batch,
        how_to_shrink="Pass a smaller --draws (ABCDP needs T large enough for c acceptances, rarely above "
        "1e6), --float32, or fewer --n-points / --n-datasets; a smaller --batch-size lowers the memory.",
    )


def _simulate(args: argparse.Namespace) -> int:
    """Stream the simulations into an uncompressed ``.npz`` (memory does not grow with T)."""
    from ..release.draws import SimulatedDraws

    if args.draws < 1:
        raise InvalidDataError(f"--draws must be >= 1, got {args.draws}.")
    if args.batch_size < 1:
        raise InvalidDataError(f"--batch-size must be >= 1, got {args.batch_size}.")
    model = make_abcdp_model(args.model, args.n_points, args.n_datasets)
    dtype = np.dtype(np.float32 if args.float32 else np.float64)
    _check_sizes(args, model, dtype)
    draws = SimulatedDraws(model.prior_sample, model.simulate, args.draws, args.seed, args.batch_size)
    out = Path(args.out)
    kind = "datasets" if args.model == "tuberculosis" else "points"
    thetas: list[np.ndarray] = []
    head: list[np.ndarray] = []  # the first simulated data sets, for the bandwidth heuristic
    n_head = 0
    sims_shape: tuple[int, ...] = ()

    with (
        atomic_output(out) as tmp,
        zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf,
        progress_bar(args.draws, f"simulate {args.model}") as bar,
    ):
        member = None
        try:
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
        finally:
            if member is not None:  # the zip cannot close (nor the partial file go) with it open
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
    print(f"wrote {out}: theta {theta_all.shape}, sims {sims_shape} ({args.model}, seed {args.seed})")
    return 0


def _data(args: argparse.Namespace) -> int:
    """``dpinfer data list`` / ``dpinfer data path NAME``: the data files shipped with dpinfer."""
    from .. import datasets

    folder = datasets.data_path(".")
    names = sorted(f.name for f in folder.iterdir() if f.is_file() and not f.name.startswith("."))
    if args.data_command == "list":
        print("\n".join(names))
        return 0
    if args.name not in names:
        raise FileNotFoundError(f"no shipped data file {args.name!r}; `dpinfer data list` lists them.")
    print(datasets.data_path(args.name).resolve())
    return 0


def register(subparsers: Any) -> None:
    """Add ``simulate`` and ``data`` (the shipped data files) to the ``dpinfer`` command line."""
    sim = add_command(subparsers, "simulate", help="modeler: draw θ from the prior and simulate (public)")
    sim.add_argument(
        "model", choices=ABCDP_MODELS,
        help="mixture-uniform: mixture of uniforms; covid: polynomial growth of "
        "cumulative cases (the Netherlands series); tuberculosis: strain clusters (San Francisco)",
    )
    sim.add_argument(
        "--draws", type=count, required=True,
        help="T, the number of (θ, Y) pairs (sizes that cannot fit on disk or in memory are refused first)",
    )
    sim.add_argument("--seed", type=int, default=0, help="simulation seed (public, never privacy noise)")
    sim.add_argument("--out", required=True, help="output .npz file (uncompressed, streamed)")
    sim.add_argument(
        "--n-points", type=int, default=None, help="points per data set, mixture-uniform (None: 5000)"
    )
    sim.add_argument(
        "--n-datasets", type=int, default=None, help="data sets per simulation, tuberculosis (None: 100)"
    )
    sim.add_argument("--batch-size", type=count, default=256, help="draws simulated per batch (memory only)")
    sim.add_argument("--float32", action="store_true", help="store the simulated data as float32")
    sim.set_defaults(func=_simulate)

    data = add_command(subparsers, "data", help="the data files shipped with dpinfer: list, path NAME")
    dsub = data.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    add_command(dsub, "list", help="list the shipped data files").set_defaults(func=_data)
    path = add_command(dsub, "path", help="print the full path of a shipped data file (to copy or read it)")
    path.add_argument("name", help="file name, as `dpinfer data list` prints it")
    path.set_defaults(func=_data)
