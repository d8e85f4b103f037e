"""Adaptive SMC-ABC (Beaumont, Cornuet, Marin & Robert 2009) for privatised statistics: the loop.

The simulator is the *private-data* simulator ``θ -> G(S(x), u)``: the confidential simulator
followed by the known release mechanism with fresh uniforms, so the ABC posterior targets
``p(θ | s_dp)`` (Xiong, Ju & Zhang 2025, §3.1 and Algorithm 3).

Population ``t`` (tolerance ``ε_t`` from the schedule, :mod:`dpinfer.inference.smc.schedule`):

* ``t = 0``: draw ``θ`` from the prior, keep those within ``ε_0``; weights uniform.
* ``t > 0``: propose from the perturbation kernel built on population ``t - 1`` (resampled first
  when its ESS is low), keep the proposals within ``ε_t`` and weight them by the PMC weights
  ``w_i ∝ π(θ_i) / Σ_j w_j K_Σ(θ_i - θ_j)`` (:mod:`dpinfer.inference.smc.kernel`).
* Stop when the schedule returns no further tolerance (:class:`~dpinfer.inference.smc.result.SMCABCResult`).

Reproducibility: batch ``j`` of population ``t`` draws from ``SeedSequence(seed, spawn_key=(0, t,
j))``; the first ``n_particles`` accepted in batch order are kept, so a seed (and ``batch_size``)
fixes the result on every backend and worker count.

The schedules, weighted statistics and result are in :mod:`~dpinfer.inference.smc.schedule`,
:mod:`~dpinfer.results.weighted` and :mod:`~dpinfer.inference.smc.result`.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

import numpy as np

from ...diagnostics.checks import emit
from ...errors import DPInferError, ImpossibleObservationError, InvalidDataError
from ...execution import Backend, batch_seeds, get_backend
from ...results.weighted import ess as _ess
from ...results.weighted import release_facts, weighted_cov
from ...sizes import check_allocation
from .adaptive_schedule import AdaptiveSchedule, stall_message, stalled_findings
from .convergence import range_findings, shrinking_findings, stop_findings
from .kernel import BatchTask, PerturbationKernel, population_batch
from .options import KernelOptions, RunOptions
from .progress import progress_bar
from .result import PopulationDiagnostics as _Diagnostics
from .result import SMCABCResult as _Result
from .runs import SMCRunHook
from .schedule import make_schedule as _make_schedule


class SMCInterrupted(RuntimeError):
    """An SMC-ABC run stopped before finishing; ``partial`` holds the completed populations
    (``complete=False``) or None if not even the first population finished. ``interrupted`` is
    True when the cause was Ctrl-C (a KeyboardInterrupt, also when a compiled simulator surfaced
    it as ``SystemError: ... returned a result with an exception set``)."""

    def __init__(self, message: str, partial: _Result | None, interrupted: bool = False) -> None:
        super().__init__(message)
        self.partial = partial
        self.interrupted = interrupted


def auto_batch_size(n_particles: int, n_workers: int) -> int:
    """``batch_size="auto"``: ``ceil(n_particles / (2 · n_workers))`` clipped to [25, 1000]."""
    return int(min(1000, max(25, math.ceil(n_particles / (2 * max(int(n_workers), 1))))))


def _is_ctrl_c(exc: BaseException) -> bool:
    """Whether ``exc`` is a KeyboardInterrupt or was raised while one propagated (numba's
    dispatcher turns a KeyboardInterrupt inside a compiled call into a SystemError)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


class _BudgetStop(Exception):
    pass


def _check_inputs(model: Any, observed: Any, n_particles: int, batch_size: int) -> np.ndarray:
    if int(n_particles) != n_particles or n_particles < 2:
        raise InvalidDataError(f"n_particles must be an integer >= 2, got {n_particles!r}.")
    if int(batch_size) != batch_size or batch_size < 1:
        raise InvalidDataError(f"batch_size must be a positive integer, got {batch_size!r}.")
    obs = model.check_observed(observed) if hasattr(model, "check_observed") else np.asarray(observed, float)
    probe = np.random.default_rng(0)
    theta = np.asarray(model.prior.sample(2, probe))
    if theta.ndim != 2 or theta.shape[0] != 2:
        raise InvalidDataError(f"prior.sample(2) must return shape (2, dim), got {theta.shape}.")
    lp = np.asarray(model.prior.log_prob(theta))
    if lp.shape != (2,):
        raise InvalidDataError(f"prior.log_prob must return one value per row, got shape {lp.shape}.")
    sim = np.asarray(model.simulate(theta, probe))
    if sim.shape != (2, obs.size):
        raise InvalidDataError(
            f"prior/simulator/observed shape mismatch: the simulator returned {sim.shape} for 2 prior "
            f"draws of dimension {theta.shape[1]}, but {obs.size} observed statistics were given."
        )
    width = theta.shape[1] + obs.size + 2  # a particle, its statistic, distance and weight
    check_allocation(f"SMC-ABC with n_particles={n_particles}", n_particles, width, copies=3)
    check_allocation(f"SMC-ABC with batch_size={batch_size}", batch_size, width, copies=3)
    return obs


def _fill_population(
    be: Backend,
    template: BatchTask,
    root: np.random.SeedSequence,
    t: int,
    n_particles: int,
    spent: int,
    max_simulations: int | None,
    progress: bool | None,
    stall: int | None = None,
) -> tuple[np.ndarray, np.ndarray, int, int, np.ndarray]:
    """Run waves of batches (copies of ``template`` with their own seeds) until ``n_particles``
    proposals are accepted.

    Returns the accepted θ and distances (first ``n_particles`` in batch order), the simulations
    they used, the simulations run (with the discarded speculative batches) and the ``(2, d)``
    coordinate-wise min/max of the statistics simulated in the batches used (NaN if none). Raises
    ``_BudgetStop`` before ``spent`` + this population's simulations would pass ``max_simulations``,
    and :class:`~dpinfer.errors.ImpossibleObservationError` once the population has run ``stall``
    simulations without completing.
    """
    batch_size = template.batch_size
    acc_theta: list[np.ndarray] = []
    acc_dist: list[np.ndarray] = []
    n_acc = sims_used = sims_run = next_batch = 0
    ranges: list[tuple[np.ndarray, np.ndarray]] = []
    rate_guess = None
    # numbered from 1, as the command line's population lines
    bar = progress_bar(n_particles, f"population {t + 1} (eps {template.tolerance:.4g})", progress,
                       unit="particle")
    try:
        done = False
        while not done:
            remaining = n_particles - n_acc
            if rate_guess is None or rate_guess <= 0:
                wave = be.n_workers
            else:
                need = math.ceil(1.2 * remaining / (rate_guess * batch_size))
                wave = int(min(max(need, be.n_workers), 8 * be.n_workers))
            wave = max(wave, 1)
            if max_simulations is not None and spent + sims_used + batch_size > max_simulations:
                raise _BudgetStop(f"max_simulations={max_simulations} reached during population {t}")
            seeds = batch_seeds(root, (0, t), wave, start=next_batch)
            results = be.map(population_batch, [replace(template, seed=s) for s in seeds])
            next_batch += wave
            for th, di, pos, m, lo, hi in results:
                sims_run += m
                if done:
                    continue
                ranges.append((lo, hi))
                if th.shape[0] >= remaining:  # this batch completes the population
                    take = remaining
                    sims_used += int(pos[take - 1]) + 1
                else:
                    take = th.shape[0]
                    sims_used += m
                acc_theta.append(th[:take])
                acc_dist.append(di[:take])
                n_acc += take
                remaining -= take
                bar.update(take)
                if remaining == 0:
                    done = True
            bar.set_postfix_str(f"{spent + sims_used} simulations in all")  # once per wave
            rate_guess = n_acc / max(sims_used, 1)
            if stall is not None and not done and sims_used >= stall:
                raise ImpossibleObservationError(
                    stall_message(t, n_acc, sims_used, n_particles, template.tolerance, template.observed)
                )
            if max_simulations is not None and spent + sims_used > max_simulations and not done:
                raise _BudgetStop(f"max_simulations={max_simulations} reached during population {t}")
    finally:
        bar.close()
    with np.errstate(all="ignore"):
        span = np.stack([np.fmin.reduce([r[0] for r in ranges]), np.fmax.reduce([r[1] for r in ranges])])
    return (
        np.concatenate(acc_theta)[:n_particles],
        np.concatenate(acc_dist)[:n_particles],
        sims_used,
        sims_run,
        span,
    )


def smc_abc(
    model: Any,
    observed: Any,
    *,
    n_particles: int = 2000,
    schedule: Any = "adaptive",
    seed: int | np.random.SeedSequence | None = None,
    backend: Any = "auto",
    n_workers: int | None = None,
    batch_size: int | str = 1000,
    scale: Any = None,
    max_simulations: int | None = None,
    kernel: KernelOptions | None = None,
    run: RunOptions | None = None,
    runs: Any = None,
    resume: str | None = None,
) -> _Result:
    """Adaptive SMC-ABC posterior of ``θ`` given the privatised statistic ``observed``.

    Parameters
    ----------
    model
        A :class:`~dpinfer.models.contract.PrivateDataModel` (or any object with ``prior`` and a
        batched ``simulate(theta, rng)``).
    observed
        The observed private statistic ``s_dp``.
    n_particles
        Particles per population (authors: 2000).
    schedule
        ``"adaptive"`` (default: median of the distances, stopped by a rule that does not depend
        on the units of the statistic, :mod:`dpinfer.inference.smc.adaptive_schedule`), ``"paper"``
        (1.0·0.7^k down to 0.2, the authors' absolute schedule), a list of tolerances, or a
        schedule object (:mod:`dpinfer.inference.smc.schedule`).
    backend
        ``"auto"`` (default: times one batch, then stays serial for cheap simulators or starts
        worker processes, :mod:`dpinfer.execution.auto`), ``"serial"``, ``"processes"``,
        ``"dask"``, a scheduler address, a Dask client or a :class:`~dpinfer.execution.Backend`.
        The processes backend sends the work with cloudpickle, so models defined in ``__main__``
        (``python -c``, stdin, notebooks) work.
    seed
        Fixes every simulation (with ``batch_size``), whatever the backend.
    n_workers
        Worker processes of a process backend (default: all cores).
    batch_size
        Proposals per batch (the unit of parallel work). With ``seed`` it fixes every simulation,
        so the default (1000) gives the same particles on every backend and cluster size.
        ``"auto"`` sizes batches for the backend's workers, ``ceil(n_particles / (2 · workers))``
        clipped to [25, 1000], so that each worker gets at least two batches of the first
        population and little speculative work is discarded; the value chosen is recorded in
        ``settings["batch_size"]``, and passing it back reproduces the run on any backend.
    scale
        Optional per-coordinate scale of the Euclidean distance (None: unscaled, as the authors).
    max_simulations
        Stop before a population would exceed this total; the last complete population is
        returned with ``complete=False`` and a ``stop_reason``.
    kernel
        :class:`~dpinfer.inference.smc.options.KernelOptions`: perturbation covariance scale
        (Beaumont et al. 2009: 2, weighted, the default), weighted covariance, resampling threshold.
    run
        :class:`~dpinfer.inference.smc.options.RunOptions`: progress bar, per-population callback,
        checkpoint file, history, and the simulations after which one population is declared
        impossible (:class:`~dpinfer.errors.ImpossibleObservationError`).
    runs, resume
        A run store (path, ``postgresql://`` URL or :class:`~dpinfer.execution.runstore.RunStore`)
        that records this run and checkpoints it after every population; ``resume=RUN_ID``
        continues that run to the result an uninterrupted run gives (:mod:`dpinfer.inference.smc.runs`).
        The run id is ``result.settings["run_id"]`` (``dpinfer runs list`` shows it).

    Returns
    -------
    SMCABCResult

    Raises
    ------
    ImpossibleObservationError
        (Near) zero acceptance: a population did not complete within ``max_population_simulations``.
    SMCInterrupted
        On KeyboardInterrupt or an error in a simulation: carries the completed populations.
    """
    n_particles = int(n_particles)
    auto_batch = isinstance(batch_size, str)
    if auto_batch and batch_size != "auto":
        raise InvalidDataError(f"batch_size must be a positive integer or 'auto', got {batch_size!r}.")
    obs = _check_inputs(model, observed, n_particles, 1000 if isinstance(batch_size, str) else batch_size)
    sched = _make_schedule(schedule)
    kernel = KernelOptions() if kernel is None else kernel
    run = RunOptions() if run is None else run
    if not isinstance(kernel, KernelOptions) or not isinstance(run, RunOptions):
        raise InvalidDataError(
            "kernel must be a KernelOptions and run a RunOptions (dpinfer.inference.smc.options)."
        )
    kernel_scale, weighted_covariance = float(kernel.scale), bool(kernel.weighted_covariance)
    resample_threshold = float(kernel.resample_threshold)
    max_population_simulations, progress = run.max_population_simulations, run.progress
    checkpoint, keep_history, callback = run.checkpoint, run.keep_history, run.callback
    scale_arr = None if scale is None else np.broadcast_to(np.asarray(scale, float), obs.shape).copy()
    if scale_arr is not None and np.any(scale_arr <= 0):
        raise InvalidDataError("distance scale must be positive.")
    stall = max(10**6, 1000 * n_particles)
    if max_population_simulations is not None:
        stall = int(max_population_simulations)
    hook = SMCRunHook(runs, resume)
    seed = hook.seed(seed)
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    own_backend = not isinstance(backend, Backend)
    be = get_backend(backend, n_workers)
    if auto_batch:
        batch_size = auto_batch_size(n_particles, be.n_workers)
    settings: dict[str, Any] = {
        "n_particles": n_particles,
        "schedule": repr(sched),
        "backend": be.name,
        "seed_entropy": str(root.entropy),
        "seed_spawn_key": list(root.spawn_key),
        "batch_size": int(batch_size),
        "kernel_scale": float(kernel_scale),
        "weighted_covariance": bool(weighted_covariance),
        "resample_threshold": float(resample_threshold),
        "scale": None if scale_arr is None else scale_arr.tolist(),
        "distance": "euclidean",
    }
    privacy, model_desc, names = release_facts(model)
    restored = hook.begin(model_desc, settings, obs, privacy)
    if hook.run_id is not None:
        settings["run_id"] = hook.run_id

    pops: list[_Diagnostics] = []
    hist: list[tuple[np.ndarray, np.ndarray]] = []
    particles: np.ndarray | None = None
    weights: np.ndarray | None = None
    dists: np.ndarray | None = None
    total_sims = 0
    span0: tuple[np.ndarray, int] | None = None

    def findings(complete: bool, stop: str) -> list[Any]:
        """The convergence and range checks (:mod:`dpinfer.inference.smc.convergence`), stored in
        ``settings["findings"]`` and issued as warnings."""
        conflict_seed = np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (97,))
        found = list(range_findings(obs, *span0, model, conflict_seed)) if span0 is not None else []
        if "stalled" in stop and not found and span0 is None:  # a resumed run: no population 0 here
            found += stalled_findings(model, obs, root)
        found += shrinking_findings(pops, names) + stop_findings(stop, complete, adaptive)
        settings["findings"] = [f.to_dict() for f in found]
        return found

    def partial(complete: bool, reason: str) -> _Result | None:
        if particles is None or weights is None or dists is None:
            return None
        return _Result(particles, weights, dists, list(pops), list(hist), names, obs, settings,
                       complete, reason, privacy, model_desc)

    adaptive = isinstance(sched, AdaptiveSchedule)
    tol = float(sched.initial())
    t = 0
    if restored is not None:
        particles, weights, dists, pops, hist, total_sims, tol, t = restored
        if hasattr(sched, "replay"):  # the adaptive schedule's state: rates and spreads so far
            sched.replay(pops[:t])
    try:
        while True:
            start = time.perf_counter()
            perturbation = None
            if particles is not None and weights is not None:
                # the proposal population (resampled copy if degenerate); the last completed
                # population itself is left untouched until this one completes
                perturbation = PerturbationKernel.build(
                    particles,
                    weights,
                    resample_threshold=resample_threshold,
                    kernel_scale=kernel_scale,
                    weighted_covariance=weighted_covariance,
                    resample_seed=np.random.SeedSequence(
                        root.entropy, spawn_key=tuple(root.spawn_key) + (1, t)
                    ),
                )
            template = BatchTask(model, obs, tol, int(batch_size), perturbation, scale_arr)
            new_particles, new_dists, sims_used, sims_run, span = _fill_population(
                be, template, root, t, n_particles, total_sims, max_simulations, progress, stall
            )
            if perturbation is None:
                span0 = (span, sims_used)  # the prior predictive's range (population 0)
                new_w = np.full(n_particles, 1.0 / n_particles)
            else:
                new_w = perturbation.importance_weights(model.prior, new_particles)
            particles, weights, dists = new_particles, new_w, new_dists
            total_sims += sims_used
            diag = _Diagnostics(
                t=t,
                tolerance=tol,
                n_simulations=sims_used,
                n_simulations_run=sims_run,
                acceptance_rate=n_particles / sims_used,
                ess=_ess(weights),
                resampled_before=perturbation is not None and perturbation.resampled,
                wall_time=time.perf_counter() - start,
                kernel_cov=None if perturbation is None else perturbation.cov.tolist(),
                n_simulations_total=total_sims,
                sd=np.sqrt(np.clip(np.diag(np.atleast_2d(weighted_cov(particles, weights))), 0, None))
                .tolist(),
            )
            pops.append(diag)
            if keep_history:
                hist.append((particles.copy(), weights.copy()))
            if checkpoint is not None:
                snapshot = partial(False, f"checkpoint after population {t}")
                if snapshot is not None:
                    snapshot.save(checkpoint)
            if callback is not None:
                callback(diag)
            if hasattr(sched, "observe"):  # the adaptive schedule's spread check
                sched.observe(t, diag.sd, diag.ess)
            nxt = sched.next(t, tol, dists, weights, diag.acceptance_rate)
            if nxt is None:
                settings["schedule_stop"] = str(getattr(sched, "stop_reason", "") or "schedule finished")
                settings["backend"] = be.name
                break
            tol = float(nxt)
            t += 1
            hook.checkpoint(t, tol, particles, weights, dists, pops, hist, total_sims)
    except _BudgetStop as stop:
        hook.end("finished", str(stop), len(pops))
        if not pops:
            raise SMCInterrupted(f"{stop}: not even the first population completed.", None) from None
        emit(findings(False, str(stop)))
        res = partial(False, str(stop))
        assert res is not None
        return res
    except DPInferError:
        raise
    except (KeyboardInterrupt, Exception) as exc:
        ctrl_c = _is_ctrl_c(exc)
        cause = "interrupted (Ctrl-C)" if ctrl_c else f"{type(exc).__name__}: {exc}"
        res = partial(False, f"stopped during population {t}: {cause}")
        if res is not None and checkpoint is not None:
            res.save(checkpoint)
        hook.end("interrupted", f"during population {t}: {cause}")
        raise SMCInterrupted(
            f"SMC-ABC {'was ' + cause if ctrl_c else 'stopped (' + cause + ')'} during population {t}; "
            f"{len(pops)} completed population(s) kept (the exception's .partial)",
            res,
            interrupted=ctrl_c,
        ) from exc
    finally:
        if own_backend:
            be.close()
    emit(findings(True, settings.get("schedule_stop", "")))
    result = partial(True, "")
    assert result is not None
    hook.end("finished", "", len(pops))
    if checkpoint is not None:
        result.save(checkpoint)
    return result


__all__ = ["SMCInterrupted", "smc_abc"]
