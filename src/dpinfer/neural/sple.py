"""SPLE: sequential private likelihood estimation (Xiong, Ju & Zhang 2025, §3.2, Algorithm 2).

A conditional flow ``q_φ(s_dp | θ)`` approximates the private-data likelihood
``p(s_dp | θ) = ∫ η(s_dp | s) p(s | θ) ds``; it is trained with the nested loss of eq. 5,
``-(1/N) Σ_i (1/M) Σ_m log q_φ(G(s_i, u_{i,m}) | θ_i)``, on the simulations of all rounds. The
posterior ``∝ q_φ(s_obs | θ)·p(θ)`` is sampled by MCMC (slice sampling by default, or adaptive
Metropolis; several chains, split R-hat recorded per round).

Each round's proposal is the current posterior: round ``r + 1`` simulates at MCMC draws of
``q_φ(s_obs | θ)·p(θ)`` after round ``r``. (The authors' public code never updates its proposal
after round 0 and re-simulates the prior draws, METHODS §2.5 and §4.4; set
``reproduce_authors_proposal=True`` to reproduce that behaviour.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidDataError
from .flows import ConditionalFlow
from .losses import nle_loss
from .mcmc import MCMC_METHODS
from .posterior import SPLEPosterior, _seed_int
from .sequential import SequentialEstimator, _check_int
from .training import LossFn


class SPLE(SequentialEstimator):
    """Sequential private likelihood estimation with nested RQMC and MCMC.

    Parameters are those of :class:`~dpinfer.neural.sequential.SequentialEstimator` plus

    mcmc_method
        ``"slice"`` (default) or ``"adaptive-metropolis"``.
    chains, warmup, thin
        MCMC chains (run together), warm-up steps per chain, thinning.
    posterior_draws
        Draws of the final MCMC run kept in ``posterior.draws``.
    reproduce_authors_proposal
        Re-simulate the round-0 prior draws in every round (the authors' code); default False.
    """

    kind = "sple"

    def __init__(
        self,
        model: Any,
        flow: Any = "nsf",
        rounds: int = 10,
        simulations_per_round: int = 1000,
        rqmc_points: int = 8,
        *,
        mcmc_method: str = "slice",
        chains: int = 20,
        warmup: int = 100,
        thin: int = 1,
        posterior_draws: int = 2000,
        reproduce_authors_proposal: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(model, flow, rounds, simulations_per_round, rqmc_points, **kwargs)
        if mcmc_method not in MCMC_METHODS:
            raise InvalidDataError(f"mcmc_method must be one of {MCMC_METHODS}, got {mcmc_method!r}.")
        self.mcmc_settings = {
            "method": mcmc_method,
            "chains": _check_int("chains", chains, 2),
            "warmup": _check_int("warmup", warmup, 0),
            "thin": _check_int("thin", thin, 1),
        }
        self.posterior_draws = _check_int("posterior_draws", posterior_draws, 4)
        self.reproduce_authors_proposal = bool(reproduce_authors_proposal)
        self._first_theta: np.ndarray | None = None

    def settings(self) -> dict[str, Any]:
        return {
            **super().settings(),
            "mcmc": self.mcmc_settings,
            "posterior_draws": self.posterior_draws,
            "reproduce_authors_proposal": self.reproduce_authors_proposal,
        }

    def _dims(self) -> tuple[int, int]:
        return self.model.obs_dim, self.model.theta_dim

    def _standardize(self, flow: ConditionalFlow, theta: np.ndarray, x: np.ndarray) -> None:
        flow.fit_standardization(x.reshape(-1, x.shape[-1]), theta)

    def _loss(self, round_index: int) -> LossFn:
        flow = self._flow
        return lambda th, x, lp, gen: nle_loss(flow, th, x)

    def _posterior(self, flow: ConditionalFlow, observed: np.ndarray) -> SPLEPosterior:
        self._flow = flow
        return SPLEPosterior(
            flow,
            self.model.prior,
            observed,
            tuple(self.model.param_names),
            settings=self.settings(),
            privacy=self.model.privacy_report(),
            model=self.model.describe(),
            mcmc_settings=self.mcmc_settings,
        )

    def _propose(self, posterior: Any, n: int, round_index: int) -> np.ndarray:
        if self.reproduce_authors_proposal:
            return self.model.prior.sample(n, np.random.default_rng(self._child(3, 0)))
        draws = posterior.draws
        if draws is None or draws.shape[0] < n:
            raise RuntimeError("internal: SPLE proposal draws missing.")  # pragma: no cover
        return draws[:n]

    def _end_of_round(self, posterior: Any, round_index: int, last: bool) -> dict[str, Any]:
        n = self.posterior_draws if last else self.simulations_per_round
        previous = posterior.draws
        posterior.draws = None
        posterior.run_mcmc(n, seed=_seed_int(self._child(4, round_index)), candidates=previous)
        return {"mcmc": dict(posterior.mcmc)}


__all__ = ["SPLE"]
