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
:mod:`~dpinfer.inference.weighted` and :mod:`~dpinfer.inference.smc.result`.
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
from ...sizes import check_allocation
from ..weighted import ess as _ess
from ..weighted import release_facts, weighted_cov
from .adaptive_schedule import AdaptiveSchedule, stall_message, stalled_findings
from .convergence import range_findings, shrinking_findings, stop_findings, tolerance_findings
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


def _wave_size(rate_guess: float | None, remaining: int, batch_size: int, n_workers: int) -> int:
    """Batches in the next wave: one per worker at first, then enough (with 20 % slack) for the
    remaining particles at the acceptance rate so far, between 1 and 8 per worker."""
    if rate_guess is None or rate_guess <= 0:
        wave = n_workers
    else:
        need = math.ceil(1.2 * remaining / (rate_guess * batch_size))
        wave = int(min(max(need, n_workers), 8 * n_workers))
    return max(wave, 1)


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
            wave = _wave_size(rate_guess, remaining, batch_size, be.n_workers)
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
    scale_arr = None if scale is None else np.broadcast_to(np.asarray(scale, float), obs.shape).copy()
    if scale_arr is not None and np.any(scale_arr <= 0):
        raise InvalidDataError("distance scale must be positive.")
    hook = SMCRunHook(runs, resume)
    seed = hook.seed(seed)
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    own_backend = not isinstance(backend, Backend)
    be = get_backend(backend, n_workers)
    if auto_batch:
        batch_size = auto_batch_size(n_particles, be.n_workers)
    state = _SMCRun(model, obs, sched, kernel, run, root, be, int(batch_size), scale_arr, n_particles,
                    max_simulations, hook)
    state.begin()
    try:
        state.populations()
    except _BudgetStop as stop:
        return state.budget_stop(stop)
    except DPInferError:
        raise
    except (KeyboardInterrupt, Exception) as exc:
        raise state.interrupted(exc) from exc
    finally:
        if own_backend:
            be.close()
    return state.finish()


class _SMCRun:
    """One SMC-ABC run's settings and state, and its named steps: :meth:`begin` (settings, run
    store), :meth:`population` (one population), :meth:`populations` (until the schedule stops),
    and the three ends (:meth:`finish`, :meth:`budget_stop`, :meth:`interrupted`)."""

    def __init__(
        self, model: Any, obs: np.ndarray, sched: Any, kernel: KernelOptions, run: RunOptions,
        root: np.random.SeedSequence, be: Backend, batch_size: int, scale_arr: np.ndarray | None,
        n_particles: int, max_simulations: int | None, hook: SMCRunHook,
    ) -> None:
        self.model, self.obs, self.sched, self.run, self.root, self.be = model, obs, sched, run, root, be
        self.batch_size, self.scale_arr, self.n_particles = batch_size, scale_arr, n_particles
        self.max_simulations, self.hook = max_simulations, hook
        self.kernel_scale, self.weighted_covariance = float(kernel.scale), bool(kernel.weighted_covariance)
        self.resample_threshold = float(kernel.resample_threshold)
        self.stall = max(10**6, 1000 * n_particles)
        if run.max_population_simulations is not None:
            self.stall = int(run.max_population_simulations)
        self.pops: list[_Diagnostics] = []
        self.hist: list[tuple[np.ndarray, np.ndarray]] = []
        self.particles: np.ndarray | None = None
        self.weights: np.ndarray | None = None
        self.dists: np.ndarray | None = None
        self.total_sims = 0
        self.span0: tuple[np.ndarray, int] | None = None
        self.adaptive = isinstance(sched, AdaptiveSchedule)
        self.tol = float(sched.initial())
        self.t = 0

    def begin(self) -> None:
        """The run's settings; register it with the run store, or restore the run it resumes."""
        root, scale_arr = self.root, self.scale_arr
        self.settings: dict[str, Any] = {
            "n_particles": self.n_particles,
            "schedule": repr(self.sched),
            "backend": self.be.name,
            "seed_entropy": str(root.entropy),
            "seed_spawn_key": list(root.spawn_key),
            "batch_size": int(self.batch_size),
            "kernel_scale": float(self.kernel_scale),
            "weighted_covariance": bool(self.weighted_covariance),
            "resample_threshold": float(self.resample_threshold),
            "scale": None if scale_arr is None else scale_arr.tolist(),
            "distance": "euclidean",
        }
        self.privacy, self.model_desc, self.names = release_facts(self.model)
        restored = self.hook.begin(self.model_desc, self.settings, self.obs, self.privacy)
        if self.hook.run_id is not None:
            self.settings["run_id"] = self.hook.run_id
        if restored is not None:
            (self.particles, self.weights, self.dists, self.pops, self.hist, self.total_sims, self.tol,
             self.t) = restored
            if hasattr(self.sched, "replay"):  # the adaptive schedule's state: rates and spreads so far
                self.sched.replay(self.pops[: self.t])

    def findings(self, complete: bool, stop: str) -> list[Any]:
        """The convergence and range checks (:mod:`dpinfer.inference.smc.convergence`), stored in
        ``settings["findings"]`` and issued as warnings."""
        root, obs, model = self.root, self.obs, self.model
        conflict_seed = np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (97,))
        span0 = self.span0
        found = list(range_findings(obs, *span0, model, conflict_seed)) if span0 is not None else []
        if "stalled" in stop and not found and span0 is None:  # a resumed run: no population 0 here
            found += stalled_findings(model, obs, root)
        found += shrinking_findings(self.pops, self.names) + stop_findings(stop, complete, self.adaptive)
        if self.particles is not None and self.weights is not None and self.pops:
            spread_seed = np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (96,))
            wide, facts = tolerance_findings(
                model, self.particles, self.weights, float(self.pops[-1].tolerance), self.scale_arr,
                spread_seed, int(obs.size),
            )
            found += wide
            self.settings.update(facts)
        self.settings["findings"] = [f.to_dict() for f in found]
        return found

    def partial(self, complete: bool, reason: str) -> _Result | None:
        if self.particles is None or self.weights is None or self.dists is None:
            return None
        return _Result(self.particles, self.weights, self.dists, list(self.pops), list(self.hist), self.names,
                       self.obs, self.settings, complete, reason, self.privacy, self.model_desc)

    def population(self) -> _Diagnostics:
        """Propose from the last population (the prior at t = 0), fill population ``t``, weight it."""
        start = time.perf_counter()
        t, root, n_particles = self.t, self.root, self.n_particles
        perturbation = None
        if self.particles is not None and self.weights is not None:
            # the proposal population (resampled copy if degenerate); the last completed
            # population itself is left untouched until this one completes
            perturbation = PerturbationKernel.build(
                self.particles,
                self.weights,
                resample_threshold=self.resample_threshold,
                kernel_scale=self.kernel_scale,
                weighted_covariance=self.weighted_covariance,
                resample_seed=np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (1, t)),
            )
        template = BatchTask(self.model, self.obs, self.tol, self.batch_size, perturbation, self.scale_arr)
        new_particles, new_dists, sims_used, sims_run, span = _fill_population(
            self.be, template, root, t, n_particles, self.total_sims, self.max_simulations, self.run.progress,
            self.stall,
        )
        if perturbation is None:
            self.span0 = (span, sims_used)  # the prior predictive's range (population 0)
            new_w = np.full(n_particles, 1.0 / n_particles)
        else:
            new_w = perturbation.importance_weights(self.model.prior, new_particles)
        particles, weights = new_particles, new_w
        self.particles, self.weights, self.dists = new_particles, new_w, new_dists
        self.total_sims += sims_used
        return _Diagnostics(
            t=t,
            tolerance=self.tol,
            n_simulations=sims_used,
            n_simulations_run=sims_run,
            acceptance_rate=n_particles / sims_used,
            ess=_ess(weights),
            resampled_before=perturbation is not None and perturbation.resampled,
            wall_time=time.perf_counter() - start,
            kernel_cov=None if perturbation is None else perturbation.cov.tolist(),
            n_simulations_total=self.total_sims,
            sd=np.sqrt(np.clip(np.diag(np.atleast_2d(weighted_cov(particles, weights))), 0, None)).tolist(),
        )

    def populations(self) -> None:
        """Populations until the schedule stops: record, checkpoint and report each."""
        run, sched = self.run, self.sched
        while True:
            diag = self.population()
            particles, weights, dists = self.particles, self.weights, self.dists
            assert particles is not None and weights is not None and dists is not None
            self.pops.append(diag)
            if run.keep_history:
                self.hist.append((particles.copy(), weights.copy()))
            if run.checkpoint is not None:
                snapshot = self.partial(False, f"checkpoint after population {self.t}")
                if snapshot is not None:
                    snapshot.save(run.checkpoint)
            if run.callback is not None:
                run.callback(diag)
            if hasattr(sched, "observe"):  # the adaptive schedule's spread check
                sched.observe(self.t, diag.sd, diag.ess)
            nxt = sched.next(self.t, self.tol, dists, weights, diag.acceptance_rate)
            if nxt is None:
                self.settings["schedule_stop"] = str(getattr(sched, "stop_reason", "") or "schedule finished")
                self.settings["backend"] = self.be.name
                return
            self.tol = float(nxt)
            self.t += 1
            self.hook.checkpoint(self.t, self.tol, particles, weights, dists, self.pops, self.hist,
                                 self.total_sims)

    def budget_stop(self, stop: _BudgetStop) -> _Result:
        """``max_simulations`` reached: the completed populations, as an incomplete result."""
        self.hook.end("finished", str(stop), len(self.pops))
        if not self.pops:
            raise SMCInterrupted(f"{stop}: not even the first population completed.", None) from None
        emit(self.findings(False, str(stop)), stacklevel=4)  # at smc_abc's caller
        res = self.partial(False, str(stop))
        assert res is not None
        return res

    def interrupted(self, exc: BaseException) -> SMCInterrupted:
        """Ctrl-C or a failed simulation: save what completed, and the exception to raise."""
        t, checkpoint = self.t, self.run.checkpoint
        ctrl_c = _is_ctrl_c(exc)
        cause = "interrupted (Ctrl-C)" if ctrl_c else f"{type(exc).__name__}: {exc}"
        res = self.partial(False, f"stopped during population {t}: {cause}")
        if res is not None and checkpoint is not None:
            res.save(checkpoint)
        self.hook.end("interrupted", f"during population {t}: {cause}")
        return SMCInterrupted(
            f"SMC-ABC {'was ' + cause if ctrl_c else 'stopped (' + cause + ')'} during population {t}; "
            f"{len(self.pops)} completed population(s) kept (the exception's .partial)",
            res,
            interrupted=ctrl_c,
        )

    def finish(self) -> _Result:
        """The schedule finished: warn on the findings, save, close the run record."""
        emit(self.findings(True, self.settings.get("schedule_stop", "")), stacklevel=4)  # smc_abc's caller
        result = self.partial(True, "")
        assert result is not None
        self.hook.end("finished", "", len(self.pops))
        if self.run.checkpoint is not None:
            result.save(self.run.checkpoint)
        return result


__all__ = ["SMCInterrupted", "smc_abc"]
