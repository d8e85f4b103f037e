"""Adaptive SMC-ABC (Beaumont, Cornuet, Marin & Robert 2009) for privatised statistics.

The simulator is the *private-data* simulator ``θ -> G(S(x), u)``: the confidential simulator
followed by the known release mechanism with fresh uniforms, so the ABC posterior targets
``p(θ | s_dp)`` (Xiong, Ju & Zhang 2025, §3.1 and Algorithm 3).

Population ``t`` (tolerance ``ε_t``):

* ``t = 0``: draw ``θ`` from the prior, keep those with ``||s_dp(θ) - s_obs||₂ <= ε_0``;
  weights uniform.
* ``t > 0``: draw an ancestor ``θ_j`` with probability ``w_j``, perturb
  ``θ* = θ_j + L z`` (``L Lᵀ = Σ``, ``z ~ N(0, I)``), redraw until ``θ*`` is in the prior support,
  simulate and keep it if its distance is ``<= ε_t``; weight
  ``w_i ∝ π(θ_i) / Σ_j w_j K_Σ(θ_i - θ_j)`` (Beaumont et al. 2009, Algorithm "PMC-ABC").
  ``Σ`` is twice the weighted covariance of the previous population (Beaumont et al. 2009);
  the authors' code uses the *unweighted* covariance with factor 1 (set
  ``kernel_scale=1.0, weighted_covariance=False`` to reproduce it).
* Resampling: multinomial when ``ESS = 1/Σ w² < resample_threshold·N`` (authors: 0.5).

Tolerance schedules: :class:`GeometricSchedule` (the authors' ``1.0·0.7^k`` until ``ε <= 0.2``,
six populations ending at 0.168), :class:`QuantileSchedule` (next ε = a weighted quantile of the
current distances; Del Moral et al. 2012 style), or an explicit list of tolerances.

Reproducibility: batch ``j`` of population ``t`` draws all its randomness from
``SeedSequence(seed, spawn_key=(0, t, j))`` and the population keeps the first ``n_particles``
accepted proposals in batch order, so a seed (and ``batch_size``) fixes the result on every
backend and worker count.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ..errors import InvalidDataError
from ..execution import Backend, batch_seeds, get_backend
from ..privacy import PrivacyReport

# ----------------------------------------------------------------------------------------------
# tolerance schedules
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GeometricSchedule:
    """``ε_k = start·factor^k``, run while the previous tolerance exceeds ``stop``.

    The default is the authors' schedule (``smc_abc.py``): 1.0, 0.7, 0.49, 0.343, 0.2401, 0.16807.
    """

    start: float = 1.0
    factor: float = 0.7
    stop: float = 0.2
    max_populations: int = 100

    def __post_init__(self) -> None:
        if not (self.start > 0 and 0 < self.factor < 1 and self.stop >= 0):
            raise InvalidDataError("GeometricSchedule needs start > 0, 0 < factor < 1 and stop >= 0.")

    def initial(self) -> float:
        return float(self.start)

    def next(
        self, t: int, tolerance: float, distances: np.ndarray, weights: np.ndarray, acceptance_rate: float
    ) -> float | None:
        if tolerance <= self.stop or t + 1 >= self.max_populations:
            return None
        return tolerance * self.factor


@dataclass(frozen=True)
class QuantileSchedule:
    """Adaptive tolerances: ``ε_{t+1}`` = the weighted ``alpha``-quantile of population t's distances.

    Population 0 is the prior (``ε_0 = ∞``, every draw accepted). Stops after ``max_populations``,
    when ``ε`` reaches ``min_tolerance`` or when the acceptance rate fell below
    ``min_acceptance_rate``.
    """

    alpha: float = 0.5
    min_tolerance: float = 0.0
    max_populations: int = 10
    min_acceptance_rate: float = 0.0

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise InvalidDataError(f"alpha must be in (0, 1), got {self.alpha}.")
        if self.max_populations < 1:
            raise InvalidDataError("max_populations must be >= 1.")

    def initial(self) -> float:
        return math.inf

    def next(
        self, t: int, tolerance: float, distances: np.ndarray, weights: np.ndarray, acceptance_rate: float
    ) -> float | None:
        if t + 1 >= self.max_populations or tolerance <= self.min_tolerance:
            return None
        if t > 0 and acceptance_rate < self.min_acceptance_rate:
            return None
        q = weighted_quantile(distances, weights, self.alpha)
        return float(max(q, self.min_tolerance))


@dataclass(frozen=True)
class FixedSchedule:
    """An explicit decreasing list of tolerances."""

    tolerances: tuple[float, ...]

    def __post_init__(self) -> None:
        tol = tuple(float(t) for t in self.tolerances)
        if not tol or any(t <= 0 for t in tol) or any(b > a for a, b in zip(tol, tol[1:], strict=False)):
            raise InvalidDataError(
                "FixedSchedule needs a non-empty, non-increasing list of positive tolerances."
            )
        object.__setattr__(self, "tolerances", tol)

    def initial(self) -> float:
        return self.tolerances[0]

    def next(
        self, t: int, tolerance: float, distances: np.ndarray, weights: np.ndarray, acceptance_rate: float
    ) -> float | None:
        return self.tolerances[t + 1] if t + 1 < len(self.tolerances) else None


def make_schedule(schedule: Any) -> Any:
    """``"paper"``/``"geometric"``, ``"adaptive"``/``"quantile"``, a list of tolerances or a schedule."""
    if schedule in ("paper", "geometric"):
        return GeometricSchedule()
    if schedule in ("adaptive", "quantile"):
        return QuantileSchedule()
    if isinstance(schedule, (GeometricSchedule, QuantileSchedule, FixedSchedule)):
        return schedule
    if isinstance(schedule, Sequence) and not isinstance(schedule, str):
        return FixedSchedule(tuple(schedule))
    if hasattr(schedule, "initial") and hasattr(schedule, "next"):
        return schedule
    raise InvalidDataError(
        f"unknown schedule {schedule!r}: use 'paper', 'adaptive', a list of tolerances or a schedule object."
    )


# ----------------------------------------------------------------------------------------------
# weighted statistics
# ----------------------------------------------------------------------------------------------


def weighted_quantile(x: np.ndarray, w: np.ndarray, q: Any) -> np.ndarray:
    """Quantile(s) of ``x`` under normalised weights ``w`` (inverse of the weighted ECDF,
    interpolated at mid-points)."""
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    xs, ws = x[order], w[order] / w.sum()
    cum = np.cumsum(ws) - 0.5 * ws
    return np.interp(q, cum, xs)


def weighted_cov(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted covariance ``Σ w_i (x_i - m)(x_i - m)ᵀ`` with normalised weights."""
    w = w / w.sum()
    m = w @ x
    d = x - m
    return (d * w[:, None]).T @ d


def ess(w: np.ndarray) -> float:
    """Effective sample size ``1/Σ w²`` of normalised weights."""
    w = np.asarray(w, dtype=np.float64)
    w = w / w.sum()
    return float(1.0 / np.sum(w**2))


# ----------------------------------------------------------------------------------------------
# batch worker
# ----------------------------------------------------------------------------------------------


@dataclass
class _BatchTask:
    model: Any
    observed: np.ndarray
    tolerance: float
    batch_size: int
    seed: np.random.SeedSequence
    particles: np.ndarray | None
    weights: np.ndarray | None
    chol: np.ndarray | None
    scale: np.ndarray | None


def _population_batch(task: _BatchTask) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Propose, simulate and test ``batch_size`` particles.

    Returns the accepted θ, their distances, their positions in the batch and the number of
    simulations (= batch_size).
    """
    rng = np.random.default_rng(task.seed)
    prior = task.model.prior
    m = task.batch_size
    if task.particles is None:
        theta = prior.sample(m, rng)
    else:
        n, d = task.particles.shape
        theta = np.empty((m, d))
        todo = np.arange(m)
        for _ in range(10_000):
            idx = rng.choice(n, size=todo.size, p=task.weights)
            prop = task.particles[idx] + rng.standard_normal((todo.size, d)) @ task.chol.T
            ok = prior.in_support(prop)
            theta[todo[ok]] = prop[ok]
            todo = todo[~ok]
            if todo.size == 0:
                break
        else:  # pragma: no cover - pathological priors only
            raise RuntimeError("could not perturb particles into the prior support in 10000 attempts.")
    s_dp = task.model.simulate(theta, rng)
    diff = s_dp - task.observed
    if task.scale is not None:
        diff = diff / task.scale
    dist = np.sqrt(np.sum(diff**2, axis=1))
    acc = np.nonzero(dist <= task.tolerance)[0]
    return theta[acc], dist[acc], acc, m


# ----------------------------------------------------------------------------------------------
# results
# ----------------------------------------------------------------------------------------------


@dataclass
class PopulationDiagnostics:
    """Per-population facts: tolerance, simulations, acceptance rate, ESS, resampling, time."""

    t: int
    tolerance: float
    n_simulations: int
    n_simulations_run: int
    acceptance_rate: float
    ess: float
    resampled_before: bool
    wall_time: float
    kernel_cov: list[list[float]] | None = None


class WeightedSample:
    """Summaries of a weighted sample: ``particles`` (n, dim) with normalised ``weights`` (n,)."""

    particles: np.ndarray
    weights: np.ndarray
    param_names: tuple[str, ...]

    @property
    def ess(self) -> float:
        return ess(self.weights)

    def mean(self) -> np.ndarray:
        return self.weights @ self.particles

    def cov(self) -> np.ndarray:
        return weighted_cov(self.particles, self.weights)

    def sd(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov()))

    def quantile(self, q: Any) -> np.ndarray:
        """Weighted marginal quantiles, shape ``(len(q), dim)``."""
        q = np.atleast_1d(q)
        w = self.weights
        return np.stack(
            [weighted_quantile(self.particles[:, i], w, q) for i in range(self.particles.shape[1])], axis=1
        )

    def interval(self, level: float = 0.95) -> np.ndarray:
        """Equal-tailed marginal credible intervals, shape ``(dim, 2)``."""
        return self.quantile([0.5 - level / 2, 0.5 + level / 2]).T

    def sample(self, n: int, seed: Any = 0) -> np.ndarray:
        """Equal-weight draws by multinomial resampling of the particles (keep ``n`` below the ESS)."""
        rng = np.random.default_rng(seed)
        w = self.weights
        return self.particles[rng.choice(w.size, size=int(n), p=w)]

    def to_arviz(self, n_draws: int | None = None, seed: int = 0) -> Any:
        """An ``arviz.InferenceData`` of equal-weight draws (multinomial resampling).

        arviz is optional and imported here.
        """
        try:
            import arviz as az
        except ImportError as exc:
            raise ImportError("to_arviz() needs arviz: pip install arviz") from exc
        draws = self.sample(n_draws or self.weights.size, seed)
        return az.from_dict(posterior={name: draws[None, :, i] for i, name in enumerate(self.param_names)})


@dataclass
class SMCABCResult(WeightedSample):
    """The output of :func:`smc_abc`.

    Attributes
    ----------
    particles, weights, distances
        The final population (weights normalised).
    populations
        :class:`PopulationDiagnostics` of every completed population.
    history
        ``(particles, weights)`` of every completed population.
    n_simulations
        Simulations the result depends on (deterministic for a seed); ``n_simulations_run``
        also counts speculative batches that were computed in parallel and discarded.
    complete
        False if the run stopped early (``stop_reason`` says why).
    privacy
        The privacy report of the release analysed (inference is post-processing: no budget).
    """

    particles: np.ndarray
    weights: np.ndarray
    distances: np.ndarray
    populations: list[PopulationDiagnostics]
    history: list[tuple[np.ndarray, np.ndarray]]
    param_names: tuple[str, ...]
    observed: np.ndarray
    settings: dict[str, Any]
    complete: bool = True
    stop_reason: str = ""
    privacy: PrivacyReport | None = None
    model: dict[str, Any] = field(default_factory=dict)

    @property
    def n_simulations(self) -> int:
        return int(sum(p.n_simulations for p in self.populations))

    @property
    def n_simulations_run(self) -> int:
        return int(sum(p.n_simulations_run for p in self.populations))

    @property
    def tolerance(self) -> float:
        return self.populations[-1].tolerance

    def summary(self) -> str:
        lines = [
            f"SMC-ABC: {len(self.populations)} populations, {self.n_simulations} simulations, "
            f"final tolerance {self.tolerance:.4g}, ESS {self.ess:.0f}"
            + ("" if self.complete else f" [INCOMPLETE: {self.stop_reason}]")
        ]
        mean, ci = self.mean(), self.interval()
        for i, name in enumerate(self.param_names):
            lines.append(f"  {name:>12s}: {mean[i]: .4f}  95% CI ({ci[i, 0]: .4f}, {ci[i, 1]: .4f})")
        return "\n".join(lines)

    # -- persistence --------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write an ``.npz`` file (arrays + JSON metadata)."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_suffix(path.suffix + ".npz") if path.suffix else path.with_suffix(".npz")
        meta = {
            "populations": [asdict(p) for p in self.populations],
            "param_names": list(self.param_names),
            "settings": self.settings,
            "complete": self.complete,
            "stop_reason": self.stop_reason,
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
            "model": self.model,
        }
        arrays = {
            "particles": self.particles,
            "weights": self.weights,
            "distances": self.distances,
            "observed": self.observed,
        }
        for t, (p, w) in enumerate(self.history):
            arrays[f"hist_particles_{t}"] = p
            arrays[f"hist_weights_{t}"] = w
        np.savez_compressed(path, meta=np.array(json.dumps(meta)), **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path) -> SMCABCResult:
        """Read a result written by :meth:`save`."""
        with np.load(Path(path), allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            hist = []
            t = 0
            while f"hist_particles_{t}" in z:
                hist.append((z[f"hist_particles_{t}"], z[f"hist_weights_{t}"]))
                t += 1
            return cls(
                particles=z["particles"],
                weights=z["weights"],
                distances=z["distances"],
                populations=[PopulationDiagnostics(**p) for p in meta["populations"]],
                history=hist,
                param_names=tuple(meta["param_names"]),
                observed=z["observed"],
                settings=meta["settings"],
                complete=meta["complete"],
                stop_reason=meta["stop_reason"],
                privacy=None if meta["privacy"] is None else PrivacyReport.from_dict(meta["privacy"]),
                model=meta.get("model", {}),
            )


class SMCInterrupted(RuntimeError):
    """An SMC-ABC run stopped before finishing; ``partial`` holds the completed populations
    (``complete=False``) or None if not even the first population finished."""

    def __init__(self, message: str, partial: SMCABCResult | None) -> None:
        super().__init__(message)
        self.partial = partial


# ----------------------------------------------------------------------------------------------
# the algorithm
# ----------------------------------------------------------------------------------------------


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
    return obs


def smc_abc(
    model: Any,
    observed: Any,
    n_particles: int = 2000,
    schedule: Any = "paper",
    backend: Any = "processes",
    seed: int | np.random.SeedSequence | None = None,
    *,
    batch_size: int = 1000,
    kernel_scale: float = 2.0,
    weighted_covariance: bool = True,
    resample_threshold: float = 0.5,
    scale: Any = None,
    max_simulations: int | None = None,
    n_workers: int | None = None,
    progress: bool = False,
    checkpoint: str | Path | None = None,
    keep_history: bool = True,
    callback: Callable[[PopulationDiagnostics], None] | None = None,
) -> SMCABCResult:
    """Adaptive SMC-ABC posterior of ``θ`` given the privatised statistic ``observed``.

    Parameters
    ----------
    model
        A :class:`~dpinfer.models.base.PrivateDataModel` (or any object with ``prior`` and a
        batched ``simulate(theta, rng)``).
    observed
        The observed private statistic ``s_dp``.
    n_particles
        Particles per population (authors: 2000).
    schedule
        ``"paper"`` (1.0·0.7^k down to 0.2), ``"adaptive"`` (median of the distances), a list of
        tolerances, or a schedule object.
    backend
        ``"serial"``, ``"processes"``, ``"dask"``, a scheduler address, a Dask client or a
        :class:`~dpinfer.execution.Backend`. The processes backend pickles the model by reference:
        a model class defined in ``__main__`` (a notebook or an unguarded script) needs
        ``"serial"`` or Dask (cloudpickle), and scripts need an ``if __name__ == "__main__":`` guard.
    seed
        Fixes every simulation (with ``batch_size``), whatever the backend.
    batch_size
        Proposals per batch (the unit of parallel work).
    kernel_scale, weighted_covariance
        Perturbation covariance = ``kernel_scale`` × (weighted) covariance of the previous
        population. Beaumont et al. (2009): 2 and weighted (default); authors' code: 1, unweighted.
    resample_threshold
        Resample (multinomial) when ESS < ``resample_threshold·n_particles``.
    scale
        Optional per-coordinate scale of the Euclidean distance (None: unscaled, as the authors).
    max_simulations
        Stop before a population would exceed this total; the last complete population is
        returned with ``complete=False`` and a ``stop_reason``.
    progress
        Show a tqdm bar per population (off when not a TTY).
    checkpoint
        If given, the result so far is saved there after each population.

    Raises
    ------
    SMCInterrupted
        On KeyboardInterrupt or an error in a simulation: carries the completed populations.
    """
    from tqdm.auto import tqdm

    n_particles = int(n_particles)
    obs = _check_inputs(model, observed, n_particles, batch_size)
    sched = make_schedule(schedule)
    if not (kernel_scale > 0 and 0 <= resample_threshold <= 1):
        raise InvalidDataError("kernel_scale must be > 0 and resample_threshold in [0, 1].")
    scale_arr = None if scale is None else np.broadcast_to(np.asarray(scale, float), obs.shape).copy()
    if scale_arr is not None and np.any(scale_arr <= 0):
        raise InvalidDataError("distance scale must be positive.")
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    own_backend = not isinstance(backend, Backend)
    be = get_backend(backend, n_workers)
    settings = {
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
    try:
        privacy = model.privacy_report() if hasattr(model, "privacy_report") else None
    except Exception:  # noqa: BLE001 - a user model without a mechanism report
        privacy = None
    model_desc = model.describe() if hasattr(model, "describe") else {"model": type(model).__name__}
    names = tuple(getattr(model, "param_names", tuple(f"theta{i}" for i in range(model.prior.dim))))

    pops: list[PopulationDiagnostics] = []
    hist: list[tuple[np.ndarray, np.ndarray]] = []
    particles = weights = dists = None
    total_sims = 0

    def partial(complete: bool, reason: str) -> SMCABCResult | None:
        if particles is None:
            return None
        return SMCABCResult(
            particles,
            weights,
            dists,
            list(pops),
            list(hist),
            names,
            obs,
            settings,
            complete,
            reason,
            privacy,
            model_desc,
        )

    tol = float(sched.initial())
    t = 0
    stop_reason = ""
    try:
        while True:
            start = time.perf_counter()
            resampled = False
            chol = cov = None
            # the proposal population (resampled copy if degenerate); the last completed
            # population itself is left untouched until this one completes
            src_p, src_w = particles, weights
            if particles is not None:
                if ess(weights) < resample_threshold * n_particles:
                    rs = np.random.default_rng(
                        np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (1, t))
                    )
                    idx = rs.choice(n_particles, size=n_particles, p=weights)
                    src_p = particles[idx]
                    src_w = np.full(n_particles, 1.0 / n_particles)
                    resampled = True
                base = weighted_cov(src_p, src_w) if weighted_covariance else np.cov(src_p.T, ddof=1)
                cov = kernel_scale * np.atleast_2d(base)
                cov = cov + 1e-12 * np.trace(cov) / cov.shape[0] * np.eye(cov.shape[0])
                chol = np.linalg.cholesky(cov)
            acc_theta: list[np.ndarray] = []
            acc_dist: list[np.ndarray] = []
            n_acc = 0
            sims_used = 0
            sims_run = 0
            next_batch = 0
            rate_guess = None
            bar = tqdm(
                total=n_particles, desc=f"population {t} (eps {tol:.4g})", disable=not progress, leave=False
            )
            done = False
            while not done:
                remaining = n_particles - n_acc
                if rate_guess is None or rate_guess <= 0:
                    wave = be.n_workers
                else:
                    need = math.ceil(1.2 * remaining / (rate_guess * batch_size))
                    wave = int(min(max(need, be.n_workers), 8 * be.n_workers))
                wave = max(wave, 1)
                if max_simulations is not None and total_sims + sims_used + batch_size > max_simulations:
                    bar.close()
                    raise _BudgetStop(f"max_simulations={max_simulations} reached during population {t}")
                seeds = batch_seeds(root, (0, t), wave, start=next_batch)
                tasks = [
                    _BatchTask(model, obs, tol, int(batch_size), s, src_p, src_w, chol, scale_arr)
                    for s in seeds
                ]
                results = be.map(_population_batch, tasks)
                next_batch += wave
                for th, di, pos, m in results:
                    sims_run += m
                    if done:
                        continue
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
                rate_guess = n_acc / max(sims_used, 1)
                if max_simulations is not None and total_sims + sims_used > max_simulations and not done:
                    raise _BudgetStop(f"max_simulations={max_simulations} reached during population {t}")
            bar.close()
            new_particles = np.concatenate(acc_theta)[:n_particles]
            new_dists = np.concatenate(acc_dist)[:n_particles]
            if particles is None:
                new_w = np.full(n_particles, 1.0 / n_particles)
            else:
                new_w = _pmc_weights(model.prior, new_particles, src_p, src_w, chol)
            particles, weights, dists = new_particles, new_w, new_dists
            total_sims += sims_used
            diag = PopulationDiagnostics(
                t=t,
                tolerance=tol,
                n_simulations=sims_used,
                n_simulations_run=sims_run,
                acceptance_rate=n_particles / sims_used,
                ess=ess(weights),
                resampled_before=resampled,
                wall_time=time.perf_counter() - start,
                kernel_cov=None if cov is None else cov.tolist(),
            )
            pops.append(diag)
            if keep_history:
                hist.append((particles.copy(), weights.copy()))
            if checkpoint is not None:
                partial(False, f"checkpoint after population {t}").save(checkpoint)
            if callback is not None:
                callback(diag)
            nxt = sched.next(t, tol, dists, weights, diag.acceptance_rate)
            if nxt is None:
                break
            tol = float(nxt)
            t += 1
    except _BudgetStop as stop:
        stop_reason = str(stop)
        res = partial(False, stop_reason)
        if res is None:
            raise SMCInterrupted(f"{stop_reason}: not even the first population completed.", None) from None
        return res
    except (KeyboardInterrupt, Exception) as exc:
        res = partial(False, f"interrupted during population {t}: {type(exc).__name__}: {exc}")
        if res is not None and checkpoint is not None:
            res.save(checkpoint)
        raise SMCInterrupted(
            f"SMC-ABC stopped during population {t} ({type(exc).__name__}: {exc}); "
            f"{len(pops)} completed population(s) are in .partial",
            res,
        ) from exc
    finally:
        if own_backend:
            be.close()
    result = partial(True, "")
    assert result is not None
    if checkpoint is not None:
        result.save(checkpoint)
    return result


class _BudgetStop(Exception):
    pass


def _pmc_weights(
    prior: Any, new: np.ndarray, old: np.ndarray, old_w: np.ndarray, chol: np.ndarray
) -> np.ndarray:
    """``w_i ∝ π(θ_i) / Σ_j w_j N(θ_i; θ_j, Σ)`` (kernel constants cancel), normalised."""
    log_prior = prior.log_prob(new)
    log_old_w = np.log(old_w)
    log_den = np.empty(new.shape[0])
    inv = np.linalg.inv(chol)
    zn = new @ inv.T
    zo = old @ inv.T
    for a in range(0, new.shape[0], 512):
        diff = zn[a : a + 512, None, :] - zo[None, :, :]
        log_den[a : a + 512] = logsumexp(log_old_w[None, :] - 0.5 * np.sum(diff**2, axis=2), axis=1)
    lw = log_prior - log_den
    lw -= lw.max()
    w = np.exp(lw)
    return w / w.sum()
