"""Performance of inference from privatised statistics: SIR simulator, SMC-ABC vs pyABC, backends.

Reports, measured in one run (issue 5, "Performance"):

* **SIR simulator** at K = 10^6, θ = (log β, log γ) = (-0.5, -3) (about 2 million events per
  simulation): Gillespie events per second and simulations per second of the compiled exact
  simulator on one core (process CPU time, numba limited to one thread) and on all cores (wall
  time); the same algorithm (Gillespie's direct method, same recording rule) in plain Python;
  target ratio >= 20. The optional hybrid simulator (``SIR(simulator="hybrid")``: exact while
  I < 100, tau-leaping otherwise): simulations per second, and C2ST of its SMC-ABC posterior
  against the exact simulator's (same release, prior, particles, schedule and seed; target
  <= 0.55).
* **SMC-ABC vs pyABC** (``bench`` extra; skipped with a message if pyabc is not importable) on the
  Gaussian-mean model and on linear regression: identical prior, simulator (dpinfer's model with
  the release mechanism inside, called one θ at a time by pyABC), Euclidean distance, particle
  count and fixed tolerance list (``pyabc.epsilon.ListEpsilon``); pyABC with
  ``SingleCoreSampler`` and a ``MultivariateNormalTransition`` whose covariance is set to twice the
  weighted particle covariance (ours: Beaumont et al. 2009), database in a temporary directory;
  ours on the serial backend with numba limited to one thread. Wall-time and CPU-time ratios
  (target: ours <= 0.5x pyABC), and both posteriors' distance to the exact reference
  (``GaussianMean.exact_posterior``; for linear regression a long DA-MCMC run).
* **Scaling**: the same SMC-ABC run (exact SIR simulator) on the processes backend with 1 and 2
  workers and on a local two-worker Dask cluster: wall time, and the workers' CPU time, whose ratio
  to the wall time is the number of cores the workers actually obtained (on a loaded machine fewer
  than the number of workers); the particles must be bit-identical.

Timing: the machine is shared and loaded, so single-threaded comparisons are reported in process
CPU time (what the computation costs whatever else runs; pyABC and ours both run in this process)
next to wall time; parallel runs can only be timed in wall time.

Usage: ``python benchmarks/private_data.py [--quick] [--skip-c2st] [--skip-scaling]
[--only sir,pyabc,scaling,c2st]``; writes benchmarks/results/private_data.json (``--only`` reruns
the named parts and keeps the others from the existing file).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numba
import numpy as np

from dpinfer.datasets.private_data import load_linreg, load_sir_synthetic
from dpinfer.diagnostics.metrics import c2st
from dpinfer.inference.exact.baselines import da_mcmc_linreg
from dpinfer.inference.smc.result import SMCABCResult
from dpinfer.inference.smc.smc_abc import smc_abc
from dpinfer.models import SIR, GaussianMean, LinearRegression
from dpinfer.models.shipped.gillespie import DEFAULT_TIMES, gillespie_sir
from dpinfer.models.shipped.sir_tau_leap import hybrid_sir

THETA_SIR = (-0.5, -3.0)
K_SIR = 1_000_000
LINREG_X_MEAN = (0.90014, -1.17335)  # the design of the shipped synthetic regression data
ALL_THREADS = numba.get_num_threads()


def _clocks() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    w, c = _clocks()
    return w - start[0], c - start[1]


# ----------------------------------------------------------------------------------------------
# SIR simulator
# ----------------------------------------------------------------------------------------------


def python_gillespie(
    beta: float,
    gamma: float,
    K: int,
    times: np.ndarray,
    seed: int,
    max_events: int | None = None,
    numpy_rng: bool = False,
) -> tuple[list[int], int]:
    """Gillespie's direct method in plain Python: the algorithm of ``dpinfer.models.shipped.sir`` line by
    line.

    ``I(t_j)`` is the state just before the first event after ``t_j``. ``max_events`` stops early
    (for a rate measurement only). ``numpy_rng`` draws each uniform with a scalar call of a numpy
    Generator instead of the standard library's ``random`` (a common, slower way of writing it).
    Returns the recorded infected counts and the number of events.
    """
    rnd = np.random.default_rng(seed) if numpy_rng else random.Random(seed)
    t, S, I, j, events = 0.0, K - 1, 1, 0, 0
    nt = len(times)
    out = [0] * nt
    inv_k = 1.0 / K
    log = math.log
    uniform = rnd.random
    while j < nt and times[j] <= 0.0:
        out[j] = I
        j += 1
    while j < nt:
        if I == 0:
            break
        r_inf = beta * S * I * inv_k
        total = r_inf + gamma * I
        t_next = t - log(1.0 - uniform()) / total
        while j < nt and times[j] < t_next:
            out[j] = I
            j += 1
        if j == nt:
            break
        if uniform() * total < r_inf:
            S -= 1
            I += 1
        else:
            I -= 1
        t = t_next
        events += 1
        if max_events is not None and events >= max_events:
            break
    return out, events


def _python_rate(beta: float, gamma: float, seed: int, cap: int | None, numpy_rng: bool) -> dict[str, Any]:
    """Events per CPU second of :func:`python_gillespie` on the first seed whose epidemic takes off."""
    for s in range(seed, seed + 50):
        start = _clocks()
        _, events = python_gillespie(beta, gamma, K_SIR, DEFAULT_TIMES.tolist(), s, cap, numpy_rng)
        wall, cpu = _since(start)
        if events >= min(cap or 100_000, 100_000):
            break
    return {
        "seed": s,
        "cpu_seconds": cpu,
        "wall_seconds": wall,
        "events": events,
        "events_per_second": events / cpu,
    }


def bench_sir_simulator(n_sims: int, python_events: int | None, seed: int) -> dict[str, Any]:
    """Events and simulations per second, exact (compiled) vs plain Python, and the hybrid."""
    beta, gamma = math.exp(THETA_SIR[0]), math.exp(THETA_SIR[1])
    gillespie_sir(beta, gamma, 1000, seed=0)  # compile / load the numba cache
    hybrid_sir(beta, gamma, 1000, seed=0)
    betas = np.full(n_sims, beta)
    res: dict[str, Any] = {"K": K_SIR, "theta": list(THETA_SIR), "n_simulations": n_sims}

    numba.set_num_threads(1)
    try:
        start = _clocks()
        _, final = gillespie_sir(betas, gamma, K_SIR, seed=seed)
        wall, cpu = _since(start)
        events = int(final[:, 2].sum())
        res["exact_one_core"] = {
            "cpu_seconds": cpu,
            "wall_seconds": wall,
            "events": events,
            "events_per_simulation": events / n_sims,
            "events_per_simulation_taking_off": float(np.median(final[final[:, 2] > 1000, 2]))
            if np.any(final[:, 2] > 1000)
            else None,
            "events_per_second": events / cpu,
            "simulations_per_second": n_sims / cpu,
        }
        start = _clocks()
        hybrid_sir(betas, gamma, K_SIR, seed=seed)
        wall, cpu = _since(start)
        res["hybrid_one_core"] = {"cpu_seconds": cpu, "simulations_per_second": n_sims / max(cpu, 1e-9)}
    finally:
        numba.set_num_threads(ALL_THREADS)
    start = _clocks()
    _, final = gillespie_sir(betas, gamma, K_SIR, seed=seed)
    wall, cpu = _since(start)
    res["exact_all_threads"] = {
        "threads": ALL_THREADS,
        "wall_seconds": wall,
        "events_per_second_wall": int(final[:, 2].sum()) / wall,
        "simulations_per_second_wall": n_sims / wall,
    }

    # plain Python: one simulation with the same θ whose epidemic takes off (the rate is what
    # matters; optionally capped), then the same loop with numpy scalar draws (capped)
    res["python"] = _python_rate(beta, gamma, seed, python_events, False)
    res["python"]["note"] = "random.Random (Mersenne twister in C) for the uniforms: favours Python"
    py_rate = res["python"]["events_per_second"]
    res["python_numpy_scalar_rng"] = _python_rate(
        beta, gamma, seed, min(python_events or 500_000, 500_000), True
    )
    res["python_numpy_scalar_rng"]["ratio_compiled_over_this"] = (
        res["exact_one_core"]["events_per_second"] / res["python_numpy_scalar_rng"]["events_per_second"]
    )
    res["ratio_events_per_second_compiled_over_python"] = res["exact_one_core"]["events_per_second"] / py_rate
    res["ratio_target"] = 20.0
    res["hybrid_over_exact_simulations_per_second"] = (
        res["hybrid_one_core"]["simulations_per_second"] / res["exact_one_core"]["simulations_per_second"]
    )
    return res


def _sir_fast_simulator_module() -> Any:
    """``examples/private_data/sir_fast_simulator.py`` (its weighted C2ST is reused here)."""
    here = Path(__file__).resolve().parent.parent / "examples" / "private_data"
    sys.path.insert(0, str(here))
    try:
        import sir_fast_simulator
    finally:
        sys.path.remove(str(here))
    return sir_fast_simulator


def bench_hybrid_c2st(particles: int, epsilon: float, seed: int, batch_size: int) -> dict[str, Any]:
    """SMC-ABC with the exact vs the hybrid SIR simulator on the shipped release; C2ST of the two.

    Two C2ST variants: (i) the weighted quadratic logistic regression of
    ``examples/private_data/sir_fast_simulator.py`` on the weighted particles (no resampling), and
    (ii) ``dpinfer.diagnostics.metrics.c2st`` (sbibm MLP) on equal-weight multinomial resamples.
    Variant (ii) sees duplicated atoms, which a flexible classifier can partly memorise, so it is
    biased upwards at small ESS; its null level is estimated by the same test between two
    independent exact-simulator runs (different seeds).
    """
    obs = load_sir_synthetic().observed(epsilon)
    runs: dict[str, SMCABCResult] = {}
    timing: dict[str, dict[str, float]] = {}
    for name, sim, s in (
        ("hybrid", "hybrid", seed),
        ("exact", "exact", seed),
        ("exact_seed2", "exact", seed + 1),
    ):
        model = SIR(population=K_SIR, epsilon=epsilon, simulator=sim)
        start = _clocks()
        runs[name] = smc_abc(
            model,
            obs,
            n_particles=particles,
            schedule="paper",
            backend="serial",
            seed=s,
            batch_size=batch_size,
        )
        wall, cpu = _since(start)
        timing[name] = {"wall_seconds": wall, "cpu_seconds": cpu, "simulations": runs[name].n_simulations}
        print(f"  SMC-ABC SIR {name}: {wall:.1f} s wall, {runs[name].n_simulations} simulations", flush=True)
    wc2st = _sir_fast_simulator_module().weighted_c2st
    ex, hy, ex2 = runs["exact"], runs["hybrid"], runs["exact_seed2"]
    n_draws = particles
    res = {
        "epsilon": epsilon,
        "particles": particles,
        "schedule": "paper (1.0*0.7^k down to 0.2)",
        "timing": timing,
        "speedup_wall": timing["exact"]["wall_seconds"] / timing["hybrid"]["wall_seconds"],
        "mean": {k: r.mean().tolist() for k, r in runs.items()},
        "sd": {k: r.sd().tolist() for k, r in runs.items()},
        "ess": {k: r.ess for k, r in runs.items()},
        "weighted_c2st_hybrid_vs_exact": wc2st(ex.particles, ex.weights, hy.particles, hy.weights),
        "weighted_c2st_exact_vs_exact_seed2": wc2st(ex.particles, ex.weights, ex2.particles, ex2.weights),
        "mlp_c2st_hybrid_vs_exact": c2st(ex.sample(n_draws, seed=1), hy.sample(n_draws, seed=2)),
        "mlp_c2st_exact_vs_exact_seed2": c2st(ex.sample(n_draws, seed=1), ex2.sample(n_draws, seed=2)),
        "target": 0.55,
    }
    return res


# ----------------------------------------------------------------------------------------------
# SMC-ABC vs pyABC
# ----------------------------------------------------------------------------------------------


def pyabc_available() -> str | None:
    """None if pyabc imports, else the reason it does not."""
    try:
        import pyabc  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means: skip the comparison
        return f"{type(exc).__name__}: {exc}"
    return None


def run_pyabc(
    model: Any, observed: np.ndarray, n_particles: int, tolerances: list[float], seed: int, db_dir: str
) -> dict[str, Any]:
    """pyABC's ABCSMC on ``model`` with our prior, simulator, distance and tolerances (one core)."""
    import logging

    import pyabc

    for name in ("ABC", "Sampler", "Epsilon", "History", "pyabc"):
        logging.getLogger(name).setLevel(logging.WARNING)
    names = list(model.param_names)
    mean = np.asarray(model.prior.mean)
    sd = np.sqrt(np.diag(model.prior.cov))
    if not np.allclose(model.prior.cov, np.diag(np.diag(model.prior.cov))):
        raise ValueError("this comparison needs a prior with independent coordinates.")
    prior = pyabc.Distribution(
        **{n: pyabc.RV("norm", float(m), float(s)) for n, m, s in zip(names, mean, sd, strict=True)}
    )
    gen = np.random.default_rng(seed)

    def simulator(par: Any) -> dict[str, np.ndarray]:
        theta = np.array([[par[n] for n in names]])
        return {"s": model.simulate(theta, gen)[0]}

    np.random.seed(seed)  # noqa: NPY002 - pyABC draws its proposals from numpy's global generator
    abc = pyabc.ABCSMC(
        simulator,
        prior,
        pyabc.PNormDistance(p=2),
        population_size=n_particles,
        transitions=pyabc.MultivariateNormalTransition(scaling=2.0, bandwidth_selector=lambda n, d: 1.0),
        eps=pyabc.ListEpsilon(list(tolerances)),
        sampler=pyabc.sampler.SingleCoreSampler(),
    )
    numba.set_num_threads(1)  # the simulator's compiled kernel: one thread, as in run_ours
    try:
        start = _clocks()
        db = "sqlite:///" + os.path.join(db_dir, f"pyabc_{seed}_{time.time_ns()}.db")
        abc.new(db, {"s": np.asarray(observed)})
        history = abc.run(max_nr_populations=len(tolerances))
        wall, cpu = _since(start)
    finally:
        numba.set_num_threads(ALL_THREADS)
    df, w = history.get_distribution(m=0, t=history.max_t)
    particles = df[names].to_numpy(dtype=np.float64)
    return {
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "simulations": int(history.total_nr_simulations),
        "populations": int(history.max_t) + 1,
        "particles": particles,
        "weights": np.asarray(w, dtype=np.float64) / np.sum(w),
    }


def run_ours(
    model: Any, observed: np.ndarray, n_particles: int, tolerances: list[float], seed: int, batch_size: int
) -> dict[str, Any]:
    """dpinfer's SMC-ABC on the serial backend, numba limited to one thread."""
    numba.set_num_threads(1)
    try:
        start = _clocks()
        res = smc_abc(
            model,
            observed,
            n_particles=n_particles,
            schedule=list(tolerances),
            backend="serial",
            seed=seed,
            batch_size=batch_size,
        )
        wall, cpu = _since(start)
    finally:
        numba.set_num_threads(ALL_THREADS)
    return {
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "simulations": res.n_simulations,
        "populations": len(res.populations),
        "particles": res.particles,
        "weights": res.weights,
    }


def _weighted_ks_1d(x: np.ndarray, w: np.ndarray, cdf: Any) -> float:
    """sup_x |F_w(x) - F(x)| of a weighted sample against a continuous CDF."""
    order = np.argsort(x)
    xs, cw = x[order], np.cumsum(w[order] / w.sum())
    f = cdf(xs)
    return float(max(np.max(np.abs(cw - f)), np.max(np.abs(cw - w[order] / w.sum() - f))))


def accuracy(
    run: dict[str, Any], ref_draws: np.ndarray, ref_mean: np.ndarray, ref_sd: np.ndarray, cdf: Any = None
) -> dict[str, Any]:
    """Distance of a weighted particle population to the reference posterior."""
    p, w = run["particles"], run["weights"]
    mean = w @ p
    sd = np.sqrt(w @ (p - mean) ** 2)
    gen = np.random.default_rng(7)
    draws = p[gen.choice(len(w), size=ref_draws.shape[0], p=w)]
    out = {
        "mean": mean.tolist(),
        "sd": sd.tolist(),
        "ess": float(1.0 / np.sum(w**2)),
        "max_abs_mean_error_in_ref_sd": float(np.max(np.abs(mean - ref_mean) / ref_sd)),
        "sd_ratio": (sd / ref_sd).tolist(),
        "c2st_resampled_vs_reference": c2st(draws, ref_draws),
    }
    if cdf is not None:
        out["weighted_ks_vs_exact"] = _weighted_ks_1d(p[:, 0], w, cdf)
    return out


def compare_with_pyabc(
    label: str,
    model: Any,
    observed: np.ndarray,
    tolerances: list[float],
    n_particles: int,
    reference: dict[str, Any],
    seed: int,
    batch_size: int,
) -> dict[str, Any]:
    """Ours vs pyABC with identical set-up; wall/CPU ratio and accuracy against the reference."""
    print(f"{label}: SMC-ABC vs pyABC, {n_particles} particles, tolerances {tolerances}", flush=True)
    run_ours(model, observed, 50, tolerances[:2], seed, 50)  # warm-up (numba cache)
    ours = run_ours(model, observed, n_particles, tolerances, seed, batch_size)
    print(
        f"  ours : {ours['wall_seconds']:.2f} s wall, {ours['cpu_seconds']:.2f} s CPU, "
        f"{ours['simulations']} simulations",
        flush=True,
    )
    out: dict[str, Any] = {
        "n_particles": n_particles,
        "tolerances": list(tolerances),
        "reference": {k: v for k, v in reference.items() if k not in ("draws", "cdf")},
        "ours": {k: v for k, v in ours.items() if k not in ("particles", "weights")},
    }
    out["ours"]["accuracy"] = accuracy(
        ours, reference["draws"], reference["mean"], reference["sd"], reference.get("cdf")
    )
    reason = pyabc_available()
    if reason is not None:
        msg = f"pyabc is not importable ({reason}); install the bench extra: pip install 'dpinfer[bench]'"
        print(f"  pyABC: skipped: {msg}", flush=True)
        out["pyabc"] = {"skipped": msg}
        return out
    with tempfile.TemporaryDirectory(prefix="dpinfer_pyabc_") as db_dir:
        theirs = run_pyabc(model, observed, n_particles, tolerances, seed, db_dir)
    print(
        f"  pyABC: {theirs['wall_seconds']:.2f} s wall, {theirs['cpu_seconds']:.2f} s CPU, "
        f"{theirs['simulations']} simulations",
        flush=True,
    )
    out["pyabc"] = {k: v for k, v in theirs.items() if k not in ("particles", "weights")}
    out["pyabc"]["accuracy"] = accuracy(
        theirs, reference["draws"], reference["mean"], reference["sd"], reference.get("cdf")
    )
    import pyabc

    out["pyabc"]["version"] = pyabc.__version__
    out["ratio_wall_ours_over_pyabc"] = ours["wall_seconds"] / theirs["wall_seconds"]
    out["ratio_cpu_ours_over_pyabc"] = ours["cpu_seconds"] / theirs["cpu_seconds"]
    out["ratio_cpu_per_simulation_ours_over_pyabc"] = (ours["cpu_seconds"] / ours["simulations"]) / (
        theirs["cpu_seconds"] / theirs["simulations"]
    )
    out["ratio_target"] = 0.5
    return out


def gaussian_mean_setup(ref_draws: int) -> tuple[GaussianMean, np.ndarray, dict[str, Any]]:
    """The Gaussian-mean set-up of benchmarks/neural.py (n = 50, clamp [-2, 2], ε = 0.5, s_dp = 0.6)."""
    model = GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5)
    obs = np.array([0.6])
    exact = model.exact_posterior(obs)
    ref = {
        "kind": "exact private posterior (quadrature, GaussianMean.exact_posterior)",
        "mean": np.array([exact.mean]),
        "sd": np.array([exact.sd]),
        "draws": exact.sample(ref_draws, seed=123),
        "cdf": exact.cdf,
    }
    return model, obs, ref


def linreg_setup(epsilon: float, ref_samples: int, seed: int) -> tuple[LinearRegression, np.ndarray, dict]:
    """The shipped synthetic regression release at ``epsilon`` and a long DA-MCMC reference."""
    model = LinearRegression(epsilon=epsilon, x_mean=LINREG_X_MEAN)
    obs = load_linreg().observed(epsilon)
    start = _clocks()
    da = da_mcmc_linreg(model, obs, n_samples=ref_samples, burn_in=5000, thin=10, seed=seed)
    wall, _ = _since(start)
    ref = {
        "kind": f"DA-MCMC (Ju et al. 2022), {ref_samples} draws, thinning 10, burn-in 5000",
        "mean": da.mean(),
        "sd": da.sd(),
        "draws": da.samples[
            np.random.default_rng(0).choice(ref_samples, size=min(ref_samples, 2000), replace=False)
        ],
        "mcmc_ess_min": float(np.min(da.ess())),
        "record_acceptance": da.record_acceptance,
        "wall_seconds": wall,
    }
    return model, obs, ref


# ----------------------------------------------------------------------------------------------
# scaling over backends
# ----------------------------------------------------------------------------------------------


def _own_cpu_seconds() -> float:
    """User + system CPU seconds of the calling process (run on a Dask worker)."""
    t = os.times()
    return t.user + t.system


def _worker_cpu_seconds(backend: Any) -> float | None:
    """Total CPU seconds used so far by the backend's worker processes (None if unknown)."""
    try:
        if backend.name == "dask":
            return float(sum(backend.client.run(_own_cpu_seconds).values()))
        import psutil

        procs = backend._pool._processes  # ProcessPoolExecutor's live workers (benchmark only)
        return float(sum(sum(psutil.Process(pid).cpu_times()[:2]) for pid in procs))
    except Exception:  # noqa: BLE001 - accounting is best effort
        return None


def _burn(n: int) -> float:
    """A pure-Python CPU load; returns the CPU seconds it took."""
    t = time.process_time()
    x = 0
    for i in range(n):
        x += i * i
    return time.process_time() - t


def cores_probe(n_workers: int = 2, n: int = 10_000_000) -> float:
    """Cores this session obtains for ``n_workers`` CPU-bound processes right now (CPU s / wall s).

    Independent of dpinfer: tells whether the machine could have given the backends a speed-up.
    """
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(n_workers, mp_context=mp.get_context("fork")) as ex:
        list(ex.map(_burn, [10] * n_workers))
        start = time.perf_counter()
        cpu = sum(ex.map(_burn, [n] * n_workers))
        return cpu / (time.perf_counter() - start)


def bench_scaling(particles: int, tolerances: list[float], seed: int, batch_size: int) -> dict[str, Any]:
    """One SMC-ABC run (exact SIR, K = 10^6, ε = 10) on processes(1), processes(2) and Dask(2)."""
    from dpinfer.execution import ProcessBackend

    model = SIR(population=K_SIR, epsilon=10.0)
    obs = load_sir_synthetic().observed(10.0)
    res: dict[str, Any] = {"particles": particles, "tolerances": tolerances, "batch_size": batch_size}
    res["cores_probe_before"] = cores_probe(2)
    particles_by: dict[str, np.ndarray] = {}
    configs: list[tuple[str, Any]] = [
        ("processes_1", lambda: ProcessBackend(1)),
        ("processes_2", lambda: ProcessBackend(2)),
    ]
    try:
        from dpinfer.execution import DaskBackend

        configs.append(("dask_2", lambda: DaskBackend(None, n_workers=2)))
    except ImportError as exc:
        res["dask_2"] = {"skipped": str(exc)}
    for name, make in configs:
        try:
            backend = make()
        except Exception as exc:  # noqa: BLE001 - report a backend that cannot start, keep going
            res[name] = {"skipped": f"{type(exc).__name__}: {exc}"}
            continue
        with backend:
            smc_abc(
                model,
                obs,
                n_particles=20,
                schedule=tolerances[:1],
                backend=backend,
                seed=seed,
                batch_size=batch_size,
            )  # warm-up: workers started, numba cache loaded
            cpu0 = _worker_cpu_seconds(backend)
            start = _clocks()
            r = smc_abc(
                model,
                obs,
                n_particles=particles,
                schedule=tolerances,
                backend=backend,
                seed=seed,
                batch_size=batch_size,
            )
            wall, _ = _since(start)
            cpu1 = _worker_cpu_seconds(backend)
        particles_by[name] = r.particles
        worker_cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
        res[name] = {
            "wall_seconds": wall,
            "workers_cpu_seconds": worker_cpu,
            # cores the workers actually obtained on average (<= n_workers; less on a loaded machine)
            "cores_obtained": None if worker_cpu is None else worker_cpu / wall,
            "simulations": r.n_simulations,
            "simulations_run": r.n_simulations_run,
            "load_average_1min": os.getloadavg()[0],
        }
        cores = (
            "" if worker_cpu is None else f", workers {worker_cpu:.1f} s CPU ({worker_cpu / wall:.2f} cores)"
        )
        print(
            f"  {name}: {wall:.1f} s wall{cores}, {r.n_simulations} simulations ({r.n_simulations_run} run)",
            flush=True,
        )
    if "processes_1" in particles_by:
        base = particles_by["processes_1"]
        res["identical_particles"] = {k: bool(np.array_equal(base, v)) for k, v in particles_by.items()}
        for k in ("processes_2", "dask_2"):
            if k in particles_by:
                res[f"speedup_{k}_over_processes_1"] = (
                    res["processes_1"]["wall_seconds"] / res[k]["wall_seconds"]
                )
    res["cores_probe_after"] = cores_probe(2)
    res["load_average_1min"] = os.getloadavg()[0]
    return res


# ----------------------------------------------------------------------------------------------


def _jsonable(o: Any) -> Any:
    return o.tolist() if hasattr(o, "tolist") else float(o)


def _print_summary(out: dict[str, Any]) -> None:
    print("\n=== summary ===")
    s = out.get("sir_simulator")
    if s:
        e = s["exact_one_core"]
        print(
            f"SIR exact, one core : {e['events_per_second'] / 1e6:.1f} M events/s, "
            f"{e['simulations_per_second']:.1f} simulations/s ({e['events_per_simulation'] / 1e6:.2f} M "
            "events/simulation)"
        )
        print(
            f"SIR plain Python    : {s['python']['events_per_second'] / 1e6:.3f} M events/s  ->  ratio "
            f"{s['ratio_events_per_second_compiled_over_python']:.0f}x (target >= 20)"
        )
        if "python_numpy_scalar_rng" in s:
            q = s["python_numpy_scalar_rng"]
            print(
                f"SIR Python, numpy scalar draws: {q['events_per_second'] / 1e6:.3f} M events/s  ->  "
                f"ratio {q['ratio_compiled_over_this']:.0f}x"
            )
        print(
            f"SIR exact, {s['exact_all_threads']['threads']} threads: "
            f"{s['exact_all_threads']['events_per_second_wall'] / 1e6:.1f} M events/s wall"
        )
        print(
            f"SIR hybrid, one core: {s['hybrid_one_core']['simulations_per_second']:.0f} simulations/s "
            f"({s['hybrid_over_exact_simulations_per_second']:.0f}x exact)"
        )
    h = out.get("sir_hybrid_c2st")
    if h and "skipped" not in h:
        print(
            f"hybrid vs exact SMC-ABC posterior: weighted C2ST {h['weighted_c2st_hybrid_vs_exact']:.3f} "
            f"(exact vs exact {h['weighted_c2st_exact_vs_exact_seed2']:.3f}); MLP C2ST on resamples "
            f"{h['mlp_c2st_hybrid_vs_exact']:.3f} (exact vs exact {h['mlp_c2st_exact_vs_exact_seed2']:.3f}); "
            f"target <= 0.55; speed-up {h['speedup_wall']:.0f}x"
        )
    for key in ("gaussian_mean", "linreg"):
        c = out.get(key)
        if not c:
            continue
        o = c["ours"]
        line = (
            f"{key}: ours {o['wall_seconds']:.2f} s wall / {o['cpu_seconds']:.2f} s CPU, C2ST "
            f"{o['accuracy']['c2st_resampled_vs_reference']:.3f}"
        )
        if "skipped" in c["pyabc"]:
            print(line + f"; pyABC skipped ({c['pyabc']['skipped']})")
            continue
        p = c["pyabc"]
        print(
            line + f" | pyABC {p['wall_seconds']:.2f} s / {p['cpu_seconds']:.2f} s CPU, C2ST "
            f"{p['accuracy']['c2st_resampled_vs_reference']:.3f}  ->  ours/pyABC wall "
            f"{c['ratio_wall_ours_over_pyabc']:.3f}, CPU {c['ratio_cpu_ours_over_pyabc']:.3f} (target <= 0.5)"
        )
    sc = out.get("scaling")
    if sc:
        parts = [
            f"{k} {sc[k]['wall_seconds']:.1f} s"
            for k in ("processes_1", "processes_2", "dask_2")
            if k in sc and "wall_seconds" in sc[k]
        ]
        print(
            "scaling (wall): " + ", ".join(parts) + f"; identical particles: {sc.get('identical_particles')}"
        )
        if "cores_probe_before" in sc:
            print(
                f"cores obtained by two CPU-bound processes (probe): {sc['cores_probe_before']:.2f} before, "
                f"{sc['cores_probe_after']:.2f} after"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    ap.add_argument("--sir-sims", type=int, default=16, help="exact simulations timed at K = 10^6")
    ap.add_argument(
        "--python-events", type=int, default=0, help="cap on plain-Python events (0: one whole simulation)"
    )
    ap.add_argument("--c2st-particles", type=int, default=150, help="particles of the hybrid-vs-exact runs")
    ap.add_argument("--skip-c2st", action="store_true", help="skip the hybrid-vs-exact SMC-ABC runs")
    ap.add_argument("--particles", type=int, default=500, help="particles, SMC-ABC vs pyABC")
    ap.add_argument("--linreg-epsilon", type=float, default=1.0)
    ap.add_argument("--mcmc-samples", type=int, default=20000, help="DA-MCMC reference draws (linreg)")
    ap.add_argument("--scaling-particles", type=int, default=100)
    ap.add_argument("--skip-scaling", action="store_true")
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated parts to (re)run: sir,pyabc,scaling,c2st; the others are kept from the "
        "existing JSON at --out",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "private_data.json"))
    args = ap.parse_args()
    if args.quick:
        args.sir_sims, args.python_events, args.c2st_particles = 2, 200_000, 30
        args.particles, args.mcmc_samples, args.scaling_particles = 100, 1000, 10

    parts = {"sir", "pyabc", "scaling", "c2st"}
    if args.only:
        parts = {p.strip() for p in args.only.split(",")}
    if args.skip_scaling:
        parts.discard("scaling")
    if args.skip_c2st:
        parts.discard("c2st")
    previous: dict[str, Any] = {}
    if args.only and Path(args.out).exists():
        previous = json.loads(Path(args.out).read_text())
    out: dict[str, Any] = dict(previous)
    out["setup"] = previous.get("setup") or {
        **{
            "machine": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "numba": numba.__version__,
            "load_average_1min_at_start": os.getloadavg()[0],
            "settings": vars(args),
            "timing": "single-threaded comparisons in process CPU time (shared, loaded machine); "
            "parallel runs in wall time",
        },
    }
    if args.only:
        out["setup"].setdefault("reruns", []).append(
            {"parts": sorted(parts), "load_average_1min": os.getloadavg()[0], "settings": vars(args)}
        )
    if "sir" in parts:
        print("SIR simulator throughput ...", flush=True)
        out["sir_simulator"] = bench_sir_simulator(args.sir_sims, args.python_events or None, args.seed + 1)
    if "pyabc" in parts:
        _pyabc_part(out, args)
    if "scaling" in parts:
        print("scaling over backends (exact SIR, K = 10^6) ...", flush=True)
        out["scaling"] = bench_scaling(
            args.scaling_particles,
            [1.0, 0.7] if args.quick else [1.0, 0.7, 0.49],
            args.seed,
            batch_size=25 if not args.quick else 10,
        )
    if "c2st" in parts:
        print("hybrid vs exact SIR simulator inside SMC-ABC ...", flush=True)
        out["sir_hybrid_c2st"] = bench_hybrid_c2st(args.c2st_particles, 10.0, args.seed + 3, batch_size=100)
    out["setup"]["load_average_1min_at_end"] = os.getloadavg()[0]
    _print_summary(out)
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2, default=_jsonable))
    print(f"\nwrote {path}")


def _pyabc_part(out: dict[str, Any], args: argparse.Namespace) -> None:
    """SMC-ABC vs pyABC on the Gaussian-mean model and on linear regression."""
    gm, gm_obs, gm_ref = gaussian_mean_setup(2000 if not args.quick else 500)
    gm_tol = [0.5, 0.25, 0.12, 0.06, 0.03]
    out["gaussian_mean"] = compare_with_pyabc(
        "Gaussian mean (n 50, clamp [-2, 2], eps 0.5, s_dp 0.6)",
        gm,
        gm_obs,
        gm_tol[:4] if args.quick else gm_tol,
        args.particles,
        gm_ref,
        args.seed,
        batch_size=1000,
    )
    lr, lr_obs, lr_ref = linreg_setup(args.linreg_epsilon, args.mcmc_samples, args.seed)
    lr_tol = [3.0, 2.0, 1.5, 1.2, 1.0, 0.85, 0.7]
    out["linreg"] = compare_with_pyabc(
        f"linear regression (n 100, eps {args.linreg_epsilon:g})",
        lr,
        lr_obs,
        lr_tol[:3] if args.quick else lr_tol,
        args.particles,
        lr_ref,
        args.seed,
        batch_size=1000,
    )


if __name__ == "__main__":
    main()
