"""SMC-ABC runs that resume: :func:`~dpinfer.inference.smc.smc_abc.smc_abc`'s hook into a run store.

``smc_abc(..., runs="runs.db")`` records the run (model, settings, seed, observed release, its
privacy report, wall/CPU times) in a :class:`~dpinfer.execution.runstore.RunStore` and
checkpoints after every completed population the state the next one starts from: the population
(particles, weights, distances), the diagnostics and history so far, the simulation count, the
next tolerance and its index. ``smc_abc(..., runs="runs.db", resume=RUN_ID)`` continues from
there. Population ``t`` draws everything from ``SeedSequence(seed, spawn_key=(0, t, j))`` and
``(1, t)`` and the schedules are functions of the last population only, so the resumed run
produces bit for bit the particles, weights and distances of an uninterrupted one (wall times
differ). Without ``seed``, a resumed run takes the recorded one.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from ...errors import InvalidDataError
from ...execution.runstore import Run, as_run_store
from .result import PopulationDiagnostics

KIND = "smc-abc"
# settings that do not change the result: a run may be resumed on another backend
_IGNORE = ("backend",)


class SMCRunHook:
    """Recording (``runs``) and resuming (``resume``) one :func:`smc_abc` run; inert without ``runs``."""

    def __init__(self, runs: Any, resume: str | None) -> None:
        if resume is not None and runs is None:
            raise InvalidDataError("resume= needs runs= (the run store that holds the run to continue).")
        self.store = None if runs is None else as_run_store(runs)
        self.resume = resume
        self.run: Run | None = None

    @property
    def run_id(self) -> str | None:
        return None if self.run is None else self.run.id

    def seed(self, seed: Any) -> Any:
        """``seed``, or the recorded seed of the run being resumed when none is given."""
        if self.store is None or self.resume is None or seed is not None:
            return seed
        settings = self.store.run(self.resume)["settings"]
        entropy, key = int(settings["seed_entropy"]), tuple(settings["seed_spawn_key"])
        return np.random.SeedSequence(entropy, spawn_key=key)

    def begin(
        self, model: dict[str, Any], settings: dict[str, Any], observed: np.ndarray, privacy: Any
    ) -> Any:
        """Record a new run, or check and reopen the one to resume; the state to continue from
        (``(particles, weights, dists, pops, hist, total_sims, tol, t)``) or None."""
        if self.store is None:
            return None
        if self.resume is None:
            self.run = self.store.start(
                KIND, model=model, settings=settings, seed=settings["seed_entropy"],
                observed=observed.tolist(), privacy=None if privacy is None else privacy.to_dict(),
            )
            return None
        self.run = self.store.resume(
            self.resume, KIND, model=model, settings=settings, observed=observed.tolist(), ignore=_IGNORE
        )
        latest = self.run.latest()
        if latest is None:
            return None
        s = latest[1]
        pops = [PopulationDiagnostics(**d) for d in s["pops"]]
        hist = [tuple(h) for h in s["hist"]]
        return (s["particles"], s["weights"], s["dists"], pops, hist, int(s["total_sims"]),
                float(s["tol"]), int(s["t"]))

    def checkpoint(self, t: int, tol: float, particles: np.ndarray, weights: np.ndarray, dists: np.ndarray,
                   pops: list[PopulationDiagnostics], hist: list[Any], total_sims: int) -> None:
        """The state population ``t`` (tolerance ``tol``) starts from, after ``t - 1`` completed."""
        if self.run is None:
            return
        self.run.checkpoint(t, {
            "t": t, "tol": tol, "particles": particles, "weights": weights, "dists": dists,
            "pops": [asdict(p) for p in pops], "hist": [list(h) for h in hist], "total_sims": total_sims,
        })

    def end(self, status: str, note: str = "", populations: int | None = None) -> None:
        """Mark the run ``finished`` or ``interrupted``."""
        if self.run is not None:
            self.run.end(status, note, populations)
