"""The ``device="cuda"`` paths against the CPU on one GPU machine (issue 27, item 4).

Run on a machine whose torch sees a CUDA GPU; every CPU figure is taken on the same machine in the
same process (torch with all its cores unless said otherwise), so each row is a ratio side by side.
Sections (each independent; a failure is recorded, not fatal):

``steps``
    One training step (forward, backward, Adam) of the atomic APT loss (SPPE, eq. of Greenberg et
    al. 2019 with the nested copies) at B = 1000 simulations, M = 16 copies, K = 10 atoms, θ 2-dim,
    release 10-dim (the SIR shape), on all M copies and on one copy per step (the default preset),
    and the small-batch step B = 200, M = 8 that the default training takes, eagerly and replayed
    from a CUDA graph (launch overhead removed). Median of 20 timed steps after 5 warm-ups, device
    synchronised before reading the clock.
``dpsgd``
    DP steps per second of :class:`dpinfer.release.dpvi.DPVI` (``threads=None``: the CPU rows use
    all the machine's cores) on 10⁶ × 100 synthetic records
    (logistic regression, Poisson sampling q = 0.01 and q = 0.1, per-example ELBO gradients,
    clipping, noise), float32 and float64. The minibatch indices and the noise are drawn on the CPU
    by the privacy core (OS entropy, replaced here by a fixed insecure stream) and moved to the GPU.
``rff``
    The RFF-MMD embedding (:class:`dpinfer.distances.RFFMMD`) of 64 data sets of N = 5000 points in
    d = 5 dimensions with D = 100 random features: numba kernels (all cores) against torch on the GPU,
    float64 and float32; the distances must agree to rounding.
``fits``
    End to end, default options, CPU against GPU: SPPE and SPLE (``simulations=2000``) on the
    Gaussian-mean release at ε = 1 (exact reference by quadrature), and a DPVI logistic fit on
    2·10⁵ × 20 records at ε = 1 with one privacy stream on both devices. Accuracy: mean error in
    exact sd, sd ratio, C2ST against exact draws; DPVI: the largest parameter difference between
    the devices.

Usage: ``python benchmarks/gpu.py [--sections steps,dpsgd,rff,fits] [--out PATH]``; writes
``benchmarks/results/gpu.json`` by default, with the GPU's name, the CPU count, torch's version and
thread count beside the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median_ms(fn: Callable[[], Any], device: torch.device, warmup: int = 5, reps: int = 20) -> float:
    for _ in range(warmup):
        fn()
    _sync(device)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


# ---------------------------------------------------------------------------------------------
def section_steps() -> dict[str, Any]:
    from dpinfer.inference.neural.flows import build_flow
    from dpinfer.inference.neural.losses import apt_loss
    from dpinfer.inference.neural.training import _copies

    rows = []
    for B, M, label in ((1000, 16, "large"), (200, 8, "default"))[1 if SMOKE else 0:]:
        d, o, K = 2, 10, 10
        row: dict[str, Any] = {"B": B, "M": M, "K": K, "theta_dim": d, "release_dim": o, "shape": label}
        for tag, dev_name in (("cpu", "cpu"), ("cuda", GPU)):
            dev = torch.device(dev_name)
            torch.manual_seed(0)
            theta, x, lp = (torch.randn(B, d, device=dev), torch.randn(B, M, o, device=dev),
                            torch.randn(B, device=dev))  # fmt: skip
            gen = torch.Generator(device=dev).manual_seed(0)
            flow = build_flow("nsf", d, o).to(dev)
            opt = torch.optim.Adam(flow.parameters(), lr=1e-5)

            def step(copies: bool, flow: Any = flow, opt: Any = opt, theta: Any = theta, x: Any = x,
                     lp: Any = lp, gen: Any = gen, K: int = K) -> None:  # fmt: skip
                opt.zero_grad()
                xx = x if copies else _copies(x, 1, gen)
                apt_loss(flow, theta, xx, lp, K, gen).backward()
                opt.step()

            row[f"{tag}_all_copies_ms"] = _median_ms(lambda: step(True), dev)
            row[f"{tag}_one_copy_ms"] = _median_ms(lambda: step(False), dev)
            if dev.type == "cuda":
                row["cuda_graph_all_copies_ms"] = _graph_ms(flow, theta, x, lp, K)
        for k in ("all_copies", "one_copy"):
            row[f"speedup_{k}"] = row[f"cpu_{k}_ms"] / row[f"cuda_{k}_ms"]
        if row.get("cuda_graph_all_copies_ms"):
            row["speedup_graph_all_copies"] = row["cpu_all_copies_ms"] / row["cuda_graph_all_copies_ms"]
        rows.append(row)
        print(f"[steps] {row}", flush=True)
    return {"rows": rows}


def _graph_ms(flow: Any, theta: Any, x: Any, lp: Any, K: int) -> float | None:
    """The all-copies APT step captured in a CUDA graph and replayed; ``None`` where capture fails
    (the reason is printed). The atoms are drawn once before the capture (a graph replays fixed
    indices; a training loop would refill the static index tensor before each replay, a copy of
    B·K integers), so this times the step's arithmetic without the launch gaps."""
    from dpinfer.inference.neural.losses import apt_loss, choose_atoms

    try:
        idx = choose_atoms(theta.shape[0], K, torch.Generator(device=theta.device).manual_seed(1))
        opt = torch.optim.Adam(flow.parameters(), lr=1e-5, capturable=True)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                apt_loss(flow, theta, x, lp, K, atom_index=idx).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            loss = apt_loss(flow, theta, x, lp, K, atom_index=idx)
            loss.backward()
            opt.step()
        return _median_ms(g.replay, theta.device)
    except Exception as exc:  # noqa: BLE001 - recorded, the eager figure stands
        print(f"[steps] CUDA graph capture failed: {type(exc).__name__}: {exc}", flush=True)
        return None


# ---------------------------------------------------------------------------------------------
def _prng() -> Any:
    from dpinfer.privacy import InsecureRandomnessWarning, PrivacyRNG

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        return PrivacyRNG.insecure_deterministic(0)


def _dpvi_rate(X: np.ndarray, y: np.ndarray, q: float, steps: int, device: str, dtype: str) -> float:
    from dpinfer.privacy.context import ReleaseContext
    from dpinfer.release.dpvi import (
        DPVI,
        DataSpec,
        LogisticRegression,
        OptimizerOptions,
        PrivacyOptions,
        TrainingOptions,
    )

    stamps: list[float] = []

    def cb(t: int, _p: Any) -> None:
        if t in (4, steps - 1):  # skip the first steps (allocation, kernel loading)
            if device != "cpu":
                torch.cuda.synchronize()
            stamps.append(time.perf_counter())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        DPVI(LogisticRegression(X.shape[1])).fit(
            X, y, delta=1e-7,
            privacy=PrivacyOptions(noise_multiplier=1.0, clip=2.0),
            training=TrainingOptions(sampling_rate=q, steps=steps, callback=cb, dtype=dtype,
                                     per_example="elbo", device=device, threads=None),
            optimizer=OptimizerOptions(lr=0.05), seed=0, context=ReleaseContext(privacy_rng=_prng()),
            data=DataSpec(intercept=False),
        )  # fmt: skip
    return (steps - 5) / (stamps[1] - stamps[0])


def section_dpsgd(n: int | None = None, D: int = 100) -> dict[str, Any]:
    n = n or (10_000 if SMOKE else 1_000_000)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(n, D)) / np.sqrt(D)
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ rng.normal(size=D)))).astype(np.float64)
    from dpinfer.privacy.subsampling import poisson_subsample

    prng = _prng()
    sub_ms = {str(q): _median_ms(lambda q=q: poisson_subsample(n, q, prng), torch.device("cpu"), 2, 10)
              for q in (0.01, 0.1)}  # fmt: skip
    print(f"[dpsgd] Poisson subsampling of {n} records on the CPU (privacy core), ms: {sub_ms}", flush=True)
    rows = []
    for q, steps in ((0.01, 60), (0.1, 25)):
        for dtype in ("float32", "float64"):
            row: dict[str, Any] = {"n": n, "D": D, "q": q, "dtype": dtype, "steps": steps}
            for tag, device in (("cpu", "cpu"), ("cuda", GPU)):
                row[f"{tag}_steps_per_s"] = _dpvi_rate(X, y, q, steps, device, dtype)
            row["speedup"] = row["cuda_steps_per_s"] / row["cpu_steps_per_s"]
            rows.append(row)
            print(f"[dpsgd] {row}", flush=True)
    return {"rows": rows, "cpu_subsample_ms": sub_ms}


# ---------------------------------------------------------------------------------------------
def section_rff(B: int | None = None, N: int = 5000, d: int = 5, D: int = 100) -> dict[str, Any]:
    from dpinfer.distances import RFFMMD

    B = B or (4 if SMOKE else 64)
    rng = np.random.default_rng(0)
    obs, sims = rng.normal(size=(N, d)), rng.normal(size=(B, N, d))
    rows = []
    ref_dist = RFFMMD(1.0, D, seed=1)
    ref = ref_dist.batch(ref_dist.prepare(obs), sims)
    for dtype in ("float64", "float32"):
        row: dict[str, Any] = {"data_sets": B, "N": N, "d": d, "features": D, "dtype": dtype}
        for tag, device, backend in (("cpu", "cpu", "auto"), ("cuda", GPU, "torch")):
            dist = RFFMMD(1.0, D, seed=1, dtype=dtype, device=device, backend=backend)
            prep = dist.prepare(obs)
            got = dist.batch(prep, sims)
            row[f"{tag}_backend"] = dist.backend
            row[f"{tag}_max_abs_diff"] = float(np.abs(got - ref).max())
            row[f"{tag}_ms"] = _median_ms(lambda dist=dist, prep=prep: dist.batch(prep, sims),
                                          torch.device(device), warmup=2, reps=10)  # fmt: skip
        row["speedup"] = row["cpu_ms"] / row["cuda_ms"]
        rows.append(row)
        print(f"[rff] {row}", flush=True)
    return {"rows": rows, "threads_numba": int(os.environ.get("NUMBA_NUM_THREADS", os.cpu_count() or 1))}


# ---------------------------------------------------------------------------------------------
def section_fits() -> dict[str, Any]:
    from dpinfer.diagnostics.metrics import c2st
    from dpinfer.inference.neural import SPLE, SPPE, NeuralRunOptions
    from dpinfer.models import GaussianMean

    model = GaussianMean()
    exact = model.exact_posterior([0.5])
    ref = exact.quantile(np.random.default_rng(5).random(2000)).reshape(-1, 1)
    out: dict[str, Any] = {"neural": [], "dpvi": {}}
    for klass in (SPPE, SPLE):
        for device in ("cpu", GPU):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                post = klass(model, simulations=300 if SMOKE else 2000, seed=0,
                             run=NeuralRunOptions(device=device)).fit([0.5])
                d = post.sample(2000, seed=1)
                wall = time.perf_counter() - t0
            row = {
                "method": klass.__name__, "device": device, "wall_s": wall,
                "epochs": [r.epochs for r in post.rounds], "stopped": post.settings.get("stopped"),
                "mean_error_in_sd": float((d.mean() - exact.mean) / exact.sd),
                "sd_ratio": float(d.std() / exact.sd), "c2st": float(c2st(d, ref, seed=0)),
            }  # fmt: skip
            out["neural"].append(row)
            print(f"[fits] {row}", flush=True)
    # DPVI: one privacy stream on both devices
    from dpinfer.privacy.context import ReleaseContext
    from dpinfer.release.dpvi import DPVI, DataSpec, LogisticRegression, TrainingOptions

    rng = np.random.default_rng(1)
    n, D = (5_000 if SMOKE else 200_000), 20
    X = rng.uniform(-1, 1, size=(n, D))
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ rng.normal(size=D) / 2))).astype(np.float64)
    params = {}
    for tag, device in (("cpu", "cpu"), ("cuda", GPU)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            res = DPVI(LogisticRegression(D)).fit(
                X, y, epsilon=1.0, delta=1e-6, data=DataSpec(bounds=[(-1.0, 1.0)] * D, intercept=False),
                training=TrainingOptions(device=device, threads=None), seed=0,
                context=ReleaseContext(privacy_rng=_prng()),
            )  # fmt: skip
            out["dpvi"][f"{tag}_wall_s"] = time.perf_counter() - t0
        params[tag] = np.asarray(res.params, dtype=np.float64)
    out["dpvi"].update(n=n, D=D, epsilon=1.0,
                       max_abs_param_diff=float(np.abs(params["cpu"] - params["cuda"]).max()),
                       max_abs_param=float(np.abs(params["cpu"]).max()))  # fmt: skip
    print(f"[fits] dpvi {out['dpvi']}", flush=True)
    return out


GPU = "cuda"  # ``--device cpu``: a smoke run of the whole script on a machine without a GPU
SMOKE = False

SECTIONS = {"steps": section_steps, "dpsgd": section_dpsgd, "rff": section_rff, "fits": section_fits}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sections", default=",".join(SECTIONS))
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "gpu.json"))
    p.add_argument("--device", default="cuda", help="'cpu' only to smoke-test the script (CPU against CPU)")
    args = p.parse_args(argv)
    global GPU, SMOKE
    GPU = args.device
    SMOKE = GPU == "cpu"
    if GPU == "cuda" and not torch.cuda.is_available():
        raise SystemExit("benchmarks/gpu.py needs a CUDA GPU; torch sees none here.")
    path = Path(args.out)
    res: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    res.update(
        gpu=torch.cuda.get_device_name(0) if GPU != "cpu" else "none (smoke run)",
        cpu_count=os.cpu_count(), torch=torch.__version__,
        cuda=torch.version.cuda, torch_threads=torch.get_num_threads(), machine=platform.platform(),
        python=platform.python_version(),
    )  # fmt: skip
    for name in args.sections.split(","):
        t0 = time.perf_counter()
        try:
            res[name] = SECTIONS[name]()
        except Exception as exc:  # noqa: BLE001 - one failed section does not lose the others
            traceback.print_exc()
            res[name] = {"error": f"{type(exc).__name__}: {exc}"}
        res[name]["section_wall_s"] = time.perf_counter() - t0
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(res, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
