"""SPPE / SPLE runs that resume: the round engine's hook into a run store.

``SPPE(...).fit(observed, runs="runs.db")`` records the run in a
:class:`~dpinfer.execution.runstore.RunStore` (model, settings, seed, observed release, its
privacy report, wall/CPU times) and checkpoints after every round the state the next round
starts from: the flow's weights and standardisation, the pool of simulations (training and
validation parts), the state of the training generator and of torch's global generator, the
round diagnostics and the posterior's own state (SPLE: the MCMC draws the next proposal takes).
``fit(observed, runs=..., resume=RUN_ID)`` continues from there. Round ``r`` draws its
simulations from ``spawn_key (1, r, ·)``, its proposals from ``(3, r)`` and MCMC from ``(4, r)``,
and training continues the restored generators, so the resumed posterior is bit for bit the one
an uninterrupted run gives (with the same torch threads; wall times differ).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
import torch

from ...errors import InvalidDataError
from ...execution.runstore import Run, as_run_store
from .training import RoundInfo, SimulationPool


class RoundsHook:
    """Recording (``runs``) and resuming (``resume``) one fit; inert without ``runs``."""

    def __init__(self, runs: Any, resume: str | None, kind: str) -> None:
        if resume is not None and runs is None:
            raise InvalidDataError("resume= needs runs= (the run store that holds the run to continue).")
        self.store = None if runs is None else as_run_store(runs)
        self.resume, self.kind = resume, kind
        self.run: Run | None = None

    def begin(
        self, settings: dict[str, Any], posterior: Any, gen: torch.Generator, pool: SimulationPool
    ) -> int:
        """Record a new run or reopen the one to resume (restoring ``posterior``, ``gen``, torch's
        generator and ``pool`` in place); the first round still to run."""
        if self.store is None:
            return 0
        describe = {"model": posterior.model, "settings": settings, "observed": posterior.observed.tolist()}
        if self.resume is None:
            privacy = None if posterior.privacy is None else posterior.privacy.to_dict()
            self.run = self.store.start(self.kind, seed=settings["seed_entropy"], privacy=privacy, **describe)
            posterior.settings["run_id"] = self.run.id
            return 0
        self.run = self.store.resume(self.resume, self.kind, **describe)
        posterior.settings["run_id"] = self.run.id
        latest = self.run.latest()
        if latest is None:
            return 0
        s = latest[1]
        posterior.flow.load_state_dict({k: torch.as_tensor(v) for k, v in s["flow"].items()})
        gen.set_state(torch.as_tensor(s["generator"]))
        torch.set_rng_state(torch.as_tensor(s["torch_rng"]))
        pool.train = [tuple(p) for p in s["train"]]
        pool.validation = [tuple(p) for p in s["validation"]]
        posterior.rounds[:] = [RoundInfo(**d) for d in s["rounds"]]
        if "draws" in s:  # SPLE: the proposal of the next round
            posterior.draws, posterior.mcmc = s["draws"], s["mcmc"]
        return int(s["next_round"])

    def checkpoint(self, next_round: int, posterior: Any, gen: torch.Generator, pool: SimulationPool) -> None:
        """The state round ``next_round`` starts from."""
        if self.run is None:
            return
        state: dict[str, Any] = {
            "next_round": next_round,
            "flow": {k: v.detach().cpu().numpy() for k, v in posterior.flow.state_dict().items()},
            "generator": gen.get_state().numpy(),
            "torch_rng": torch.get_rng_state().numpy(),
            "train": [list(p) for p in pool.train],
            "validation": [list(p) for p in pool.validation],
            "rounds": [asdict(r) for r in posterior.rounds],
        }
        if getattr(posterior, "draws", None) is not None:
            state["draws"] = np.asarray(posterior.draws)
            state["mcmc"] = posterior.mcmc
        self.run.checkpoint(next_round, state)

    def end(self, status: str, note: str = "", rounds: int | None = None) -> None:
        """Mark the run ``finished`` or ``interrupted``."""
        if self.run is not None:
            self.run.end(status, note, rounds)
