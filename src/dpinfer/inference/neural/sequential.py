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

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ...errors import InvalidDataError
from ...execution.device import resolve_device
from ...sizes import check_allocation
from .dequantize import dequantize, mechanism_lattice
from .flows import ConditionalFlow, FlowConfig
from .posterior import NeuralPosterior
from .resume import RoundsHook
from .rqmc import check_points
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
        ``"nsf"`` (default: 8 transforms, 50 hidden, 2 residual blocks, 10 bins), ``"maf"``, a dict
        of :class:`~dpinfer.inference.neural.flows.FlowConfig` fields or a FlowConfig.
    rounds
        Number of rounds R (>= 1; paper: 10).
    simulations_per_round
        N new simulations per round (paper: 1000).
    rqmc_points
        M = 2^m privatised copies of each confidential summary (nested RQMC).
    qmc
        Scrambled Sobol nets (True) or i.i.d. uniforms (False) for the ``M`` copies.
    training
        :class:`~dpinfer.inference.neural.training.TrainingConfig` or a dict of its fields.
    seed
        Simulation/training seed (never privacy noise).
    backend, n_workers, simulation_batch_size
        Where the simulations run (:mod:`dpinfer.execution`); results do not depend on them.
    progress
        Show a per-round progress bar (only on a TTY).
    callback
        ``callback(info, posterior)`` after every round (``posterior`` is live: use it at once).
    device
        ``"cpu"`` (default), ``"cuda"`` or ``"auto"`` (CUDA when available): where the flow is
        trained and the posterior sampled (:func:`dpinfer.execution.device.resolve_device`; an
        unavailable ``"cuda"`` raises DeviceUnavailableError at construction). The network
        initialisation is drawn on the CPU, so one seed gives the same initial flow on every
        device; minibatches and atoms come from a generator on the device, so results agree
        across devices in distribution, not bit for bit.
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

    def __init__(
        self,
        model: Any,
        flow: Any = "nsf",
        rounds: int = 10,
        simulations_per_round: int = 1000,
        rqmc_points: int = 8,
        *,
        qmc: bool = True,
        training: Any = None,
        seed: int | np.random.SeedSequence | None = None,
        backend: Any = "serial",
        n_workers: int | None = None,
        simulation_batch_size: int = 500,
        progress: bool = False,
        callback: Callable[[RoundInfo, NeuralPosterior], None] | None = None,
        device: Any = "cpu",
        dequantize: Any = "auto",
    ) -> None:
        for attr in ("prior", "mechanism", "simulate_confidential", "check_observed"):
            if not hasattr(model, attr):
                raise InvalidDataError(
                    f"model must be a dpinfer PrivateDataModel (prior, mechanism, simulate_confidential); "
                    f"it has no {attr!r}."
                )
        self.model = model
        self.flow_config = FlowConfig.from_any(flow)
        self.rounds = check_int("rounds", rounds, 1)
        self.simulations_per_round = check_int("simulations_per_round", simulations_per_round, 20)
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
        self.backend = backend
        self.n_workers = n_workers
        self.simulation_batch_size = check_int("simulation_batch_size", simulation_batch_size, 1)
        self.progress = bool(progress)
        self.callback = callback
        self.threads = self.training.threads
        self.device = resolve_device(device)
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

    def _run(self, obs: np.ndarray | None, runs: Any = None, resume: str | None = None) -> NeuralPosterior:
        rounds = self.rounds if obs is not None else 1
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
                    t0 = timer()
                    n_new = 0
                    if obs is not None:
                        theta = self._simulate(pool, posterior, r)
                        n_new = theta.shape[0]
                    t1 = timer()
                    if r == 0:
                        self._standardize(flow, *pool.arrays())
                    train, val = pool.tensors(self.device)
                    fit = train_flow(flow, self._loss(r), train, val, self.training, gen)
                    t2 = timer()
                    extra = self._end_of_round(posterior, r, r == rounds - 1) if obs is not None else {}
                    if obs is not None:
                        extra.update(self._round_summary(posterior, r))
                    t3 = timer()
                    info = RoundInfo(
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
                    posterior.rounds.append(info)
                    if bar is not None:
                        bar.update(1)
                        bar.set_postfix(sims=info.n_simulations_total, epochs=info.epochs)
                    if self.callback is not None:
                        self.callback(info, posterior)
                    if r + 1 < rounds:
                        hook.checkpoint(r + 1, posterior, gen, pool)
            except BaseException as exc:
                hook.end("interrupted", f"{type(exc).__name__}: {exc}")
                raise
            finally:
                if bar is not None:
                    bar.close()
        hook.end("finished", "", rounds)
        return posterior

    def _simulate(self, pool: SimulationPool, posterior: NeuralPosterior, r: int) -> np.ndarray:
        """Round ``r``'s parameters (prior, then proposal) and simulations, added to ``pool``."""
        if r == 0:
            rng = np.random.default_rng(self._child(3, 0))
            theta = self.model.prior.sample(self.simulations_per_round, rng)
        else:
            theta = self._propose(posterior, self.simulations_per_round, r)
        theta = np.asarray(theta, dtype=np.float64)
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
        x = self._dequantize(x, 0, r)
        targets, logp = self._targets(theta)
        pool.add(targets, x, logp, self.training.validation_fraction)
        return theta


__all__ = ["SequentialEstimator"]
