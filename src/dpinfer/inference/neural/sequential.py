"""The round engine shared by SPPE and SPLE (Xiong et al. 2025, §3.5, Algorithms 1-2).

Round ``r``:

1. draw ``N`` parameters from the proposal (the prior in round 0, the current posterior
   approximation afterwards, restricted to the prior support);
2. simulate each confidential summary ``s_i`` once and privatise it ``M`` times with a scrambled
   Sobol net pushed through the mechanism map ``G`` (nested RQMC; ``M = 1`` or ``qmc=False``
   gives Monte Carlo);
3. add the simulations to the pool of all rounds (5 % of each round held out for validation);
4. continue training the flow on the whole pool (:func:`dpinfer.inference.neural.training.train_flow`).

Reproducibility: one ``seed`` fixes the simulations (``spawn_key (1, r, batch)``), the network
initialisation and minibatches (``(2,)``), the proposals (``(3, r)``) and MCMC (``(4, r)``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ...diagnostics import checks
from ...diagnostics.conflict import prior_data_conflict
from ...errors import ConvergenceWarning, InvalidDataError
from ...execution.device import resolve_device
from ...sizes import check_allocation
from .dequantize import dequantize, mechanism_lattice
from .flows import ConditionalFlow, FlowConfig
from .posterior import NeuralPosterior
from .resume import RoundsHook
from .rqmc import check_points
from .run_options import NeuralRunOptions, refuse_run_keywords
from .training import (
    LossFn,
    RoundInfo,
    SimulationPool,
    TrainingConfig,
    simulate_round,
    timer,
    torch_threads,
    train_flow,
)


def check_int(name: str, value: Any, minimum: int) -> int:
    try:
        ok = int(value) == value and int(value) >= minimum
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InvalidDataError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


class SequentialEstimator:
    """Base class of :class:`~dpinfer.inference.neural.sppe.SPPE` and
    :class:`~dpinfer.inference.neural.sple.SPLE`.

    Parameters
    ----------
    model
        A :class:`~dpinfer.models.contract.PrivateDataModel` (prior, confidential simulator, mechanism).
    flow
        ``"nsf"`` (default: 5 transforms, 50 hidden, 2 residual blocks, 10 bins), ``"maf"``,
        ``"paper"`` (the paper's NSF, 8 transforms), a dict of
        :class:`~dpinfer.inference.neural.flows.FlowConfig` fields or a FlowConfig.
    rounds
        ``"auto"`` (default): rounds of ``simulations_per_round`` until a round no longer moves the
        posterior (its mean by at most ``stop_tolerance`` posterior sds in every coordinate and its
        sd by at most a factor ``exp(stop_tolerance)``; the per-round summaries
        ``shift_sd`` / ``sd_change`` of :meth:`_round_summary`) or until the next round would
        exceed the budget ``simulations``; at least two rounds when the budget allows (one round
        cannot be compared with anything). An integer R runs exactly R rounds (paper: 10).
    simulations_per_round
        N new simulations per round. Default: 1000 (the paper's), at most half the budget under
        ``rounds="auto"`` (so that two rounds can be compared), ``simulations // rounds`` when
        both ``rounds`` and ``simulations`` are integers.
    simulations
        The simulation budget: the most simulations all rounds together may use (``"auto"``
        rounds; default :attr:`default_budget` = 5000). With an integer ``rounds`` and no
        ``simulations_per_round`` it is split evenly over the rounds.
        ``rounds=10, simulations_per_round=1000`` reproduces the paper.
    stop_tolerance
        The ``"auto"`` stopping threshold in posterior sds (default 0.1).
    rqmc_points
        M = 2^m privatised copies of each confidential summary (nested RQMC).
    qmc
        Scrambled Sobol nets (True) or i.i.d. uniforms (False) for the ``M`` copies.
    training
        :class:`~dpinfer.inference.neural.training.TrainingConfig` or a dict of its fields.
    seed
        Simulation/training seed (never privacy noise).
    run
        :class:`~dpinfer.inference.neural.run_options.NeuralRunOptions`: run control (backend,
        n_workers, simulation_batch_size, device, progress, callback, epoch_callback, warn).
        Those keywords moved there; given directly they are refused with a message naming it.
    dequantize
        ``"auto"`` (default): when the mechanism's outputs live on a lattice (binomial, geometric,
        randomized response: ``mechanism.lattice``), train on simulated releases spread uniformly
        over their lattice cells (:mod:`dpinfer.inference.neural.dequantize`; the same posterior, and a
        likelihood SPLE can evaluate); ``False`` trains on the raw lattice values (the paper's
        code); ``True`` insists on a lattice.
    """

    kind = "sequential"
    #: this estimator's values of the ``"fast"`` training preset (:meth:`TrainingConfig.from_any`)
    fast_training: dict[str, Any] = {}
    #: the simulation budget of ``rounds="auto"`` when ``simulations`` is not given
    default_budget = 5000
    #: the last round moving the posterior mean by more than this many posterior sds (or its sd
    #: by more than this factor's exponential) is warned about: more rounds would change the answer
    move_warning = 0.25

    @staticmethod
    def _sizes(rounds: Any, per_round: Any, simulations: Any) -> tuple[int | str, int, int]:
        """``(rounds, simulations_per_round, budget)`` from the options (class docstring)."""
        budget = None if simulations is None else check_int("simulations", simulations, 20)
        if isinstance(rounds, str):
            if rounds != "auto":
                raise InvalidDataError(f"rounds must be 'auto' or an integer >= 1, got {rounds!r}.")
            total = budget if budget is not None else SequentialEstimator.default_budget
            n = (
                check_int("simulations_per_round", per_round, 20)
                if per_round is not None
                else max(20, min(1000, total // 2))
            )
            if n > total:
                raise InvalidDataError(
                    f"simulations_per_round={n} exceeds the simulation budget simulations={total}."
                )
            return "auto", n, total
        r = check_int("rounds", rounds, 1)
        if per_round is not None:
            n = check_int("simulations_per_round", per_round, 20)
        elif budget is not None:
            n = budget // r
            if n < 20:
                raise InvalidDataError(
                    f"simulations={budget} over rounds={r} leaves {n} per round; at least 20 are needed."
                )
        else:
            n = 1000
        return r, n, r * n

    @property
    def max_rounds(self) -> int:
        """The most rounds this estimator runs (``rounds`` or, under ``"auto"``, the budget's)."""
        if isinstance(self.rounds, int):
            return self.rounds
        return max(1, self.budget // self.simulations_per_round)

    def __init__(
        self,
        model: Any,
        flow: Any = "nsf",
        rounds: int | str = "auto",
        simulations_per_round: int | None = None,
        rqmc_points: int = 8,
        *,
        simulations: int | None = None,
        stop_tolerance: float = 0.1,
        qmc: bool = True,
        training: Any = None,
        seed: int | np.random.SeedSequence | None = None,
        dequantize: Any = "auto",
        run: NeuralRunOptions | None = None,
        **removed: Any,
    ) -> None:
        refuse_run_keywords(type(self).__name__, removed)
        run = NeuralRunOptions() if run is None else run
        if not isinstance(run, NeuralRunOptions):
            raise InvalidDataError(f"run must be a NeuralRunOptions, got {type(run).__name__}.")
        self.run_options = run
        for attr in ("prior", "mechanism", "simulate_confidential", "check_observed"):
            if not hasattr(model, attr):
                raise InvalidDataError(
                    f"model must be a dpinfer PrivateDataModel (prior, mechanism, simulate_confidential); "
                    f"it has no {attr!r}."
                )
        self.model = model
        self.flow_config = FlowConfig.from_any(flow)
        self.rounds, self.simulations_per_round, self.budget = self._sizes(
            rounds, simulations_per_round, simulations
        )
        try:
            tol = float(stop_tolerance)
        except (TypeError, ValueError):
            tol = math.nan
        if not tol > 0:
            raise InvalidDataError(f"stop_tolerance must be a positive number, got {stop_tolerance!r}.")
        self.stop_tolerance = tol
        self.warn = bool(run.warn)
        self._last_draws: np.ndarray | None = None  # the last round's summary draws
        self._prior_sims: np.ndarray | None = None  # round 0's releases (θ from the prior), one copy each
        check_points(rqmc_points)
        self.rqmc_points = int(rqmc_points)
        width = model.mechanism.out_dim + getattr(model.prior, "dim", 1)  # statistics and θ
        check_allocation(  # a round's simulations, each privatised M times
            f"simulations_per_round={self.simulations_per_round} x rqmc_points={self.rqmc_points}",
            self.simulations_per_round, self.rqmc_points, width, copies=3,
        )
        self.qmc = bool(qmc)
        self.training = TrainingConfig.from_any(training, self.fast_training)
        self.seed = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        self.backend = run.backend
        self.n_workers = run.n_workers
        self.simulation_batch_size = check_int("simulation_batch_size", run.simulation_batch_size, 1)
        self.progress = bool(run.progress)
        self.callback = run.callback
        self.epoch_callback = run.epoch_callback
        self.threads = self.training.threads
        self.device = resolve_device(run.device)
        if not (isinstance(dequantize, bool) or (isinstance(dequantize, str) and dequantize == "auto")):
            raise InvalidDataError(f"dequantize must be 'auto', True or False, got {dequantize!r}.")
        lattice = mechanism_lattice(model.mechanism)
        if dequantize is True and lattice is None:
            raise InvalidDataError(
                f"dequantize=True, but the mechanism {model.mechanism.name!r} declares no lattice "
                "(its outputs are continuous): leave dequantize='auto'."
            )
        self.lattice = lattice if dequantize is not False else None

    # -- hooks --------------------------------------------------------------------------------
    def _dims(self) -> tuple[int, int]:
        raise NotImplementedError

    def _standardize(self, flow: ConditionalFlow, theta: np.ndarray, x: np.ndarray) -> None:
        raise NotImplementedError

    def _loss(self, round_index: int) -> LossFn:
        raise NotImplementedError

    def _posterior(self, flow: ConditionalFlow, observed: np.ndarray) -> NeuralPosterior:
        raise NotImplementedError

    def _propose(self, posterior: NeuralPosterior, n: int, round_index: int) -> np.ndarray:
        raise NotImplementedError

    def _end_of_round(self, posterior: NeuralPosterior, round_index: int, last: bool) -> dict[str, Any]:
        return {}

    def _summary_draws(self, posterior: NeuralPosterior, round_index: int) -> np.ndarray | None:
        """Posterior draws after a round, for :meth:`_round_summary` (None: none available)."""
        return None

    def _round_summary(self, posterior: NeuralPosterior, round_index: int) -> dict[str, Any]:
        """The posterior mean and sd after this round and how far the round moved them: the
        largest mean shift in current posterior sds (``shift_sd``) and the largest
        ``|log(sd / previous sd)|`` (``sd_change``). Small values over several rounds say that
        more rounds will change little; a jump says that a round changed the answer."""
        draws = self._summary_draws(posterior, round_index)
        self._last_draws = draws
        if draws is None or draws.shape[0] < 2:
            return {}
        mean, sd = draws.mean(axis=0), draws.std(axis=0)
        out: dict[str, Any] = {"posterior_mean": mean.tolist(), "posterior_sd": sd.tolist()}
        prev = posterior.rounds[-1].extra if posterior.rounds else {}
        if "posterior_mean" in prev:
            pm, ps = np.asarray(prev["posterior_mean"]), np.asarray(prev["posterior_sd"])
            tiny = np.finfo(float).tiny
            out["shift_sd"] = float(np.max(np.abs(mean - pm) / np.maximum(sd, tiny)))
            out["sd_change"] = float(np.max(np.abs(np.log(np.maximum(sd, tiny) / np.maximum(ps, tiny)))))
        return out

    # -- helpers ------------------------------------------------------------------------------
    def _child(self, *key: int) -> np.random.SeedSequence:
        return np.random.SeedSequence(
            self.seed.entropy,
            spawn_key=tuple(self.seed.spawn_key) + tuple(key),
            pool_size=self.seed.pool_size,
        )

    def settings(self) -> dict[str, Any]:
        return {
            "method": self.kind,
            "flow": self.flow_config.to_dict(),
            "rounds": self.rounds,
            "simulations_per_round": self.simulations_per_round,
            "simulations": self.budget,
            "stop_tolerance": self.stop_tolerance,
            "rqmc_points": self.rqmc_points,
            "qmc": self.qmc,
            "training": self.training.to_dict(),
            "seed_entropy": str(self.seed.entropy),
            "dequantize": self.lattice is not None,
        }

    def check_observed(self, observed: Any) -> np.ndarray:
        """Validate the observed release (shape and the mechanism's range) before any work."""
        obs = self.model.check_observed(observed)
        if obs.shape != (self.model.obs_dim,):
            raise InvalidDataError(
                f"observed statistics must have length {self.model.obs_dim}, got shape {obs.shape}."
            )
        return obs

    # -- amortisation ---------------------------------------------------------------------------
    def append_simulations(self, theta: Any, x: Any) -> SequentialEstimator:
        """Add simulations to reuse: ``theta`` (n, dim) drawn from the **prior**, ``x`` their privatised
        statistics, (n, obs_dim) or (n, M', obs_dim) with ``M'`` copies per simulation.

        They join the round-0 pool of every later :meth:`fit` and are all :meth:`train` uses.
        ``M'`` must divide ``rqmc_points`` (a single copy is repeated: the nested loss over
        identical copies is the single-draw loss). Returns ``self``.
        """
        th = np.asarray(theta, dtype=np.float64)
        d, o = self.model.theta_dim, self.model.obs_dim
        if th.ndim == 1 and d == 1:
            th = th[:, None]
        xs = np.asarray(x, dtype=np.float64)
        if xs.ndim == 1 and o == 1:
            xs = xs[:, None]
        if xs.ndim == 2:
            xs = xs[:, None, :]
        n = th.shape[0] if th.ndim == 2 else -1
        if th.ndim != 2 or th.shape[1] != d or xs.ndim != 3 or xs.shape[0] != n or xs.shape[2] != o:
            raise InvalidDataError(
                f"append_simulations needs theta of shape (n, {d}) and x of shape (n, {o}) or "
                f"(n, M, {o}); got {np.shape(theta)} and {np.shape(x)}."
            )
        if not (np.all(np.isfinite(th)) and np.all(np.isfinite(xs))):
            raise InvalidDataError("appended simulations must be finite (no NaN or inf).")
        if self.rqmc_points % xs.shape[1]:
            raise InvalidDataError(
                f"appended x has {xs.shape[1]} copies per simulation, which does not divide "
                f"rqmc_points = {self.rqmc_points}."
            )
        if not np.all(self.model.prior.in_support(th)):
            raise InvalidDataError("appended parameters must lie in the prior's support.")
        xs = np.repeat(xs, self.rqmc_points // xs.shape[1], axis=1)
        self._appended = [*getattr(self, "_appended", []), (th, xs)]
        return self

    def _targets(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What the pool stores for parameters ``theta``: the flow's targets (θ here; SPPE may
        use z = T⁻¹(θ)) and their prior log density in that space."""
        theta = np.asarray(theta, dtype=np.float64)
        return theta, np.asarray(self.model.prior.log_prob(theta), dtype=np.float64)

    def _dequantize(self, x: np.ndarray, *key: int) -> np.ndarray:
        if self.lattice is None:
            return x
        return dequantize(x, self.lattice, np.random.default_rng(self._child(5, *key)))

    def _add_appended(self, pool: SimulationPool) -> None:
        for i, (th, x) in enumerate(getattr(self, "_appended", [])):
            xs = self._dequantize(x, 1, i)
            targets, logp = self._targets(th)
            pool.add(targets, xs, logp, self.training.validation_fraction)

    def train(self) -> NeuralPosterior:
        """One round on the appended simulations only: an amortised posterior with no observed
        release; evaluate it at any release with ``posterior.sample(n, x=...)``."""
        if not getattr(self, "_appended", []):
            raise InvalidDataError("train() uses appended simulations: call append_simulations first.")
        return self._run(None)

    # -- the algorithm ------------------------------------------------------------------------
    def fit(self, observed: Any, *, runs: Any = None, resume: str | None = None) -> NeuralPosterior:
        """Run all rounds and return the posterior given the observed release ``observed``.

        ``runs`` (a run store path or URL) records the run and checkpoints it after every round;
        ``resume=RUN_ID`` continues that run to the posterior an uninterrupted run gives
        (:mod:`dpinfer.inference.neural.resume`); the run id is ``posterior.settings["run_id"]``.
        """
        return self._run(self.check_observed(observed), runs, resume)

    def _epoch_report(self, round_index: int) -> Callable[[int, float], None] | None:
        ecb = self.epoch_callback
        if ecb is None:
            return None
        return lambda epoch, loss: ecb(round_index, epoch, loss)

    def _converged(self, info: RoundInfo) -> bool:
        """Whether round ``info`` moved the posterior by at most ``stop_tolerance`` (mean shift in
        posterior sds and ``|log(sd / previous sd)|``, largest over the coordinates)."""
        shift, change = info.extra.get("shift_sd"), info.extra.get("sd_change")
        if shift is None or change is None:
            return False
        return bool(shift <= self.stop_tolerance and change <= self.stop_tolerance)

    def _run(self, obs: np.ndarray | None, runs: Any = None, resume: str | None = None) -> NeuralPosterior:
        rounds = self.max_rounds if obs is not None else 1
        auto = obs is not None and self.rounds == "auto"
        stopped = "rounds" if not auto else "budget"
        found: list[Any] = []
        self._last_draws = None
        self._prior_sims = None
        hook = RoundsHook(runs, resume, self.kind)
        with torch_threads(self.threads), torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(self._child(2).generate_state(1)[0]))
            gen = torch.Generator(device=self.device).manual_seed(
                int(self._child(2, 1).generate_state(1)[0])
            )
            features, context = self._dims()
            flow = ConditionalFlow(self.flow_config, features, context).to(self.device)
            posterior = self._posterior(flow, np.full(self.model.obs_dim, np.nan) if obs is None else obs)
            posterior.settings["amortized"] = rounds == 1
            pool = SimulationPool()
            self._add_appended(pool)
            first = hook.begin(self.settings(), posterior, gen, pool)
            bar = None
            if self.progress and sys.stderr.isatty():
                from tqdm import tqdm

                bar = tqdm(total=rounds, desc=self.kind.upper(), unit="round")
            try:
                for r in range(first, rounds):
                    info = self._round(r, rounds, obs, pool, posterior, flow, gen)
                    posterior.rounds.append(info)
                    if bar is not None:
                        bar.update(1)
                        bar.set_postfix(sims=info.n_simulations_total, epochs=info.epochs)
                    if self.callback is not None:
                        self.callback(info, posterior)
                    if auto and self._converged(info):
                        stopped = "converged"
                        break
                    if r + 1 < rounds:
                        hook.checkpoint(r + 1, posterior, gen, pool)
                if obs is not None:
                    posterior.settings["stopped"] = stopped
                    found = self.diagnostics(posterior, obs, pool)
                    posterior.settings["diagnostics"] = [f.to_dict() for f in found]
            except BaseException as exc:
                hook.end("interrupted", f"{type(exc).__name__}: {exc}")
                raise
            finally:
                if bar is not None:
                    bar.close()
        hook.end("finished", "", len(posterior.rounds))
        if obs is not None and self.warn:
            checks.emit(found, stacklevel=3)
        return posterior

    def _round(
        self, r: int, rounds: int, obs: np.ndarray | None, pool: SimulationPool, posterior: NeuralPosterior,
        flow: ConditionalFlow, gen: torch.Generator,
    ) -> RoundInfo:
        """Round ``r``: simulate (from the proposal of the posterior so far), train the flow on
        the pool, summarise the round."""
        t0 = timer()
        n_new = 0
        if obs is not None:
            theta = self._simulate(pool, posterior, r)
            n_new = theta.shape[0]
        t1 = timer()
        if r == 0:
            self._standardize(flow, *pool.arrays())
        train, val = pool.tensors(self.device)
        fit = train_flow(flow, self._loss(r), train, val, self.training, gen, self._epoch_report(r))
        t2 = timer()
        extra = self._end_of_round(posterior, r, r == rounds - 1) if obs is not None else {}
        if obs is not None:
            extra.update(self._round_summary(posterior, r))
        if fit["epoch_cap"]:
            extra["epoch_cap"] = True
            extra["first_validation_loss"] = float(fit["first_validation_loss"])
        t3 = timer()
        return RoundInfo(
            round=r,
            n_simulations=n_new,
            n_simulations_total=pool.n_simulations,
            epochs=int(fit["epochs"]),
            best_validation_loss=float(fit["best_validation_loss"]),
            train_loss=float(fit["train_loss"]),
            simulation_time=t1 - t0,
            training_time=(t2 - t1) + (t3 - t2),
            extra=extra,
        )

    # -- diagnostics --------------------------------------------------------------------------
    def diagnostics(
        self, posterior: NeuralPosterior, observed: np.ndarray, pool: SimulationPool
    ) -> list[Any]:
        """The findings a careful user needs after a fit (:mod:`dpinfer.diagnostics.checks`):

        * training stopped at the epoch cap while the validation loss was still falling;
        * the last round moved the posterior by more than :attr:`move_warning` posterior sds
          (or changed its sd by more than the factor ``exp(move_warning)``), or, under
          ``rounds="auto"``, the budget ran out before a round moved it by at most
          ``stop_tolerance`` (the stop rule never fired);
        * posterior mass piled on a bound of the prior's support;
        * the observed release far in the tail of the prior predictive (round 0's releases, θ from
          the prior; :func:`~dpinfer.diagnostics.conflict.prior_data_conflict`, which simulates
          its own when round 0 is too small to decide, seed ``spawn_key (97,)``);
        * and each estimator's own (SPLE: R-hat and ESS of its MCMC, :meth:`_own_diagnostics`).
        """
        found: list[Any] = []
        capped = [info for info in posterior.rounds if info.extra.get("epoch_cap")]
        if capped:
            rounds = ", ".join(
                f"{i.round + 1} ({i.extra.get('first_validation_loss', math.nan):.3g} -> "
                f"{i.best_validation_loss:.3g})"
                for i in capped
            )
            found.append(checks.Finding(
                ConvergenceWarning,
                f"training stopped at the epoch cap (max_epochs={self.training.max_epochs}) while the "
                f"validation loss was still falling (it had improved within the last "
                f"{self.training.patience} epochs, so early stopping never fired), in round(s) {rounds} "
                "(validation loss at the first -> best epoch): the flow is under-trained and the "
                "posterior may be wrong; raise "
                "training={'max_epochs': ...} or leave it at the preset's default (early stopping on "
                "the validation loss).",
            ))
        last = posterior.rounds[-1] if posterior.rounds else None
        if last is not None and "shift_sd" in last.extra:
            shift, change = float(last.extra["shift_sd"]), float(last.extra["sd_change"])
            if shift > self.move_warning or change > self.move_warning:
                found.append(checks.Finding(
                    ConvergenceWarning,
                    f"the last round (round {last.round + 1}) moved the posterior mean by {shift:.2f} "
                    f"posterior sd and changed its sd by a factor {math.exp(change):.2f} (more than "
                    f"{self.move_warning} sd / a factor {math.exp(self.move_warning):.2f}): the rounds "
                    "have not settled and more simulations may change the answer; raise the budget "
                    "(simulations=...) with rounds='auto', or the rounds.",
                ))
            elif posterior.settings.get("stopped") == "budget" and max(shift, change) > self.stop_tolerance:
                found.append(checks.Finding(
                    ConvergenceWarning,
                    f"rounds='auto' spent its budget of {self.budget} simulations before a round "
                    f"left the posterior in place: the last round (round {last.round + 1}) moved its "
                    f"mean by {shift:.2f} posterior sd and its sd by a factor {math.exp(change):.2f}, "
                    f"more than stop_tolerance={self.stop_tolerance:g} allows, so more simulations "
                    "may still change the answer by about that much; raise simulations=... to let "
                    "the rounds settle.",
                ))
        draws = self._last_draws
        if draws is not None and draws.shape[0] >= 2:
            lo, hi = self.model.prior.support
            found += checks.check_prior_bounds(draws, lo, hi, posterior.param_names)
        if observed is not None:
            conflict, _ = prior_data_conflict(
                self.model, observed, simulated=self._prior_sims, seed=self._child(97)
            )
            found += conflict
        found += self._own_diagnostics(posterior)
        return found

    def _own_diagnostics(self, posterior: NeuralPosterior) -> list[Any]:
        return []

    def _simulate(self, pool: SimulationPool, posterior: NeuralPosterior | None, r: int) -> np.ndarray:
        """Round ``r``'s parameters (prior, then proposal) and simulations, added to ``pool``."""
        if r == 0:
            rng = np.random.default_rng(self._child(3, 0))
            theta = self.model.prior.sample(self.simulations_per_round, rng)
        else:
            assert posterior is not None, "rounds after the first propose from the last posterior"
            theta = self._propose(posterior, self.simulations_per_round, r)
        theta = np.asarray(theta, dtype=np.float64)
        if posterior is not None:  # the region the simulations support (issue 39 item 6)
            posterior.record_simulated(theta)
        _, x = simulate_round(
            self.model,
            theta,
            self.rqmc_points,
            self.seed,
            r,
            qmc_points=self.qmc,
            backend=self.backend,
            batch_size=self.simulation_batch_size,
            n_workers=self.n_workers,
        )
        if r == 0:  # the prior predictive (one release per θ: the copies share their θ)
            self._prior_sims = np.asarray(x, dtype=np.float64)[:, 0, :]
        x = self._dequantize(x, 0, r)
        targets, logp = self._targets(theta)
        pool.add(targets, x, logp, self.training.validation_fraction)
        return theta


__all__ = ["SequentialEstimator"]
