"""SPLE: sequential private likelihood estimation (Xiong, Ju & Zhang 2025, §3.2, Algorithm 2).

A conditional flow ``q_φ(s_dp | θ)`` approximates the private-data likelihood
``p(s_dp | θ) = ∫ η(s_dp | s) p(s | θ) ds``; it is trained with the nested loss of eq. 5,
``-(1/N) Σ_i (1/M) Σ_m log q_φ(G(s_i, u_{i,m}) | θ_i)``, on the simulations of all rounds. The
posterior ``∝ q_φ(s_obs | θ)·p(θ)`` is sampled by MCMC (slice sampling by default, or adaptive
Metropolis; several chains, split R-hat recorded per round).

Each round's proposal is the current posterior: round ``r + 1`` simulates at MCMC draws of
``q_φ(s_obs | θ)·p(θ)`` after round ``r``. (The authors' public code never updates its proposal
after round 0 and re-simulates the prior draws, the authors' code of Xiong, Ju & Zhang (2025); set
``reproduce_authors_proposal=True`` to reproduce that behaviour.)

The result, :class:`SPLEPosterior`, evaluates the unnormalised ``log q_φ(s_obs | θ) + log p(θ)``
and samples it by MCMC (several chains started near the stored draws; R-hat reported).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ...diagnostics import checks
from ...errors import ConvergenceWarning, InvalidDataError
from ...sizes import check_allocation
from .flows import ConditionalFlow
from .losses import nle_loss
from .mcmc import MCMC_METHODS, run_mcmc
from .posterior import NeuralPosterior, seed_int
from .sequential import SequentialEstimator, check_int
from .training import LossFn, torch_threads


def rhat_threshold(chains: int, per_chain: int, ess: Any) -> float:
    """The R-hat above which the chains disagree beyond what stationary chains show.

    Vehtari et al. (2021) recommend 1.01 for a few long chains. SPLE runs several short chains (20
    chains of 100 draws by default), where R-hat of well-mixed chains is both biased upward and noisy:
    with ``m = 2C`` half-chains of ``h`` draws and integrated autocorrelation time ``τ = C·n/ESS``,
    ``E R̂ ≈ 1 + (τ - 1)/(2h)`` and ``sd R̂ ≈ sqrt(2/(m - 1))·τ/(2h)`` (the between-chain variance
    is a fraction ``τ/h`` of the total and is estimated from ``m`` means). The threshold is
    ``max(1.01, E R̂ + 3 sd R̂)``: Vehtari's 1.01 for long chains, wider for short ones.
    """
    h = int(per_chain) // 2
    if h < 2 or ess is None:
        return 1.01
    n_total = int(chains) * int(per_chain)
    e = np.asarray(ess, dtype=np.float64)
    e = e[np.isfinite(e) & (e > 0)]
    if e.size == 0:
        return 1.01
    tau = n_total / float(e.min())
    m = 2 * int(chains)
    bias = max(tau - 1.0, 0.0) / (2 * h)
    sd = np.sqrt(2.0 / (m - 1)) * tau / (2 * h)
    return float(max(1.01, 1.0 + bias + 3.0 * sd))


class SPLEPosterior(NeuralPosterior):
    """``p(θ | s_obs) ∝ q_φ(s_obs | θ)·p(θ)``, sampled by MCMC.

    ``draws`` holds the draws of the fit's last MCMC run (after :meth:`SPLE.fit`: the run that made
    the final round's proposal, ``mcmc`` its diagnostics including R-hat). :meth:`sample` and the
    summaries built on it (``mean``, ``sd``, ``interval``, ``summary``, ``to_arviz``) run fresh
    chains started from those draws and leave them as they are, so the same ``n`` and integer
    ``seed`` give the same draws on every call; the last such run is remembered, so ``mean()``,
    ``sd()`` and ``interval()`` with their default ``n`` and ``seed`` share one MCMC run.
    """

    kind = "sple"

    def __init__(self, *args: Any, mcmc_settings: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mcmc_settings = dict(mcmc_settings or {})
        self.draws: np.ndarray | None = None
        self.mcmc: dict[str, Any] = {}
        # the last sample() run: (its start draws, the observed release, n, seed) and its draws
        self._last_sample: tuple[tuple[Any, ...], np.ndarray] | None = None

    def log_likelihood(self, theta: Any) -> np.ndarray:
        """``log q_φ(s_obs | θ)``."""
        th = self._check_theta(theta)
        with torch.inference_mode():
            x = self._tensor(self.observed).expand(th.shape[0], -1)
            return self.flow.log_prob(x, self._tensor(th)).double().cpu().numpy()

    def log_prob(self, theta: Any, x: Any = None) -> np.ndarray:
        """Unnormalised ``log q_φ(s_obs | θ) + log p(θ)`` (``-inf`` outside the prior support and
        outside the simulated range, :meth:`simulated`: the likelihood flow is not trusted where no
        simulation was made)."""
        if x is not None:
            return self.at(x).log_prob(theta)
        self._require_observed()
        th = self._check_theta(theta)
        lp = np.asarray(self.prior.log_prob(th), dtype=np.float64)
        out = np.full(th.shape[0], -np.inf)
        ok = np.isfinite(lp) & self.simulated(th)
        if ok.any():
            out[ok] = self.log_likelihood(th[ok]) + lp[ok]
        return out

    def _initial_states(
        self, n_chains: int, rng: np.random.Generator, candidates: np.ndarray | None
    ) -> np.ndarray:
        cand = (
            candidates
            if candidates is not None and len(candidates) >= n_chains
            else self.prior.sample(max(50 * n_chains, 1000), rng)
        )
        lp = self.log_prob(cand)
        ok = np.isfinite(lp)
        if not ok.any():
            raise RuntimeError("no candidate starting point has positive posterior density.")
        if candidates is None or len(candidates) < n_chains:
            # prior draws: importance weights ∝ likelihood, so the chains start in the bulk
            lp = lp - np.asarray(self.prior.log_prob(cand))
            w = np.where(ok, np.exp(lp - lp[ok].max()), 0.0)
        else:  # draws from the previous posterior: pick uniformly
            w = ok.astype(np.float64)
        idx = rng.choice(cand.shape[0], size=n_chains, replace=bool(ok.sum() < n_chains), p=w / w.sum())
        return cand[idx]

    def run_mcmc(self, n: int, seed: Any = None, candidates: np.ndarray | None = None) -> np.ndarray:
        """Run the chains for ``n`` draws; store them in ``draws`` and diagnostics in ``mcmc``."""
        res, chains = self._chains(n, seed, candidates)
        self.draws = res.draws
        self.mcmc = {
            "method": res.method,
            "chains": chains,
            "rhat": res.rhat.tolist(),
            "max_rhat": float(np.nanmax(res.rhat)),
            "ess": None if res.ess is None else res.ess.tolist(),
            "ess_tail": None if res.ess_tail is None else res.ess_tail.tolist(),
            "draws_per_chain": int(res.chains.shape[0]),
            "acceptance_rate": res.acceptance_rate,
            "log_prob_calls": res.n_log_prob_calls,
        }
        return res.draws

    def _chains(self, n: int, seed: Any, candidates: np.ndarray | None) -> tuple[Any, int]:
        """(the MCMC result of ``n`` draws, the number of chains), changing nothing stored."""
        s = self.mcmc_settings
        rng = np.random.default_rng(seed_int(seed))
        init = self._initial_states(int(s.get("chains", 10)), rng, candidates)
        scale = init.std(axis=0)
        if candidates is not None and len(candidates) > 2:
            scale = np.asarray(candidates).std(axis=0)
        scale = np.where(scale > 0, scale, 0.1)
        with torch.inference_mode(), torch_threads(self.threads), self.flow.frozen():
            res = run_mcmc(
                self.log_prob,
                init,
                int(n),
                method=s.get("method", "slice"),
                warmup=int(s.get("warmup", 200)),
                thin=int(s.get("thin", 1)),
                seed=rng,
                scale=scale,
            )
        return res, int(init.shape[0])

    def sample(self, n: int, seed: Any = None, x: Any = None) -> np.ndarray:
        """``n`` MCMC draws of fresh chains started from the fit's draws (``draws``, unchanged);
        the same ``n`` and integer ``seed`` give the same draws. ``x``: another observed release
        (:meth:`at`; chains then start from likelihood-weighted prior draws)."""
        if x is not None:
            return self.at(x).sample(n, seed)
        check_allocation(f"sample({n})", n, len(self.param_names), copies=4)
        return self._fresh_draws(int(n), seed).copy()

    def _fresh_draws(self, n: int, seed: Any) -> np.ndarray:
        """The draws of :meth:`sample`; the last run is reused for the same start draws, ``n`` and
        integer seed (a seed of ``None`` or a generator always runs new chains)."""
        fixed = isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)
        key = (np.asarray(self.observed, dtype=np.float64).tobytes(), n, int(seed)) if fixed else None
        last = getattr(self, "_last_sample", None)  # absent on an object built without __init__
        if key is not None and last is not None and last[0][0] is self.draws and last[0][1:] == key:
            return last[1]
        res, _ = self._chains(n, seed, self.draws)
        draws = np.asarray(res.draws)
        draws.setflags(write=False)
        if key is not None:
            self._last_sample = ((self.draws, *key), draws)
        return draws

    def _arviz_draws(self, n_draws: int, seed: Any) -> np.ndarray:
        """Exactly ``n_draws`` draws as real chains: the most chains (up to the sampler's) that
        divide ``n_draws``, each run for ``n_draws / chains`` steps after warm-up."""
        n_draws = int(n_draws)
        C = int(self.mcmc_settings.get("chains", 10))
        used = max(c for c in range(1, min(C, n_draws) + 1) if n_draws % c == 0)
        per = n_draws // used
        res, C = self._chains(per * C, seed, self.draws)
        return np.asarray(res.draws)[: per * C].reshape(per, C, self.dim)[:, :used].transpose(1, 0, 2)

    def _fields(self) -> dict[str, Any]:
        return {**super()._fields(), "mcmc_settings": self.mcmc_settings, "mcmc": self.mcmc}

    def _extra_state(self) -> dict[str, Any]:
        return {} if self.draws is None else {"draws": torch.as_tensor(self.draws)}

    def _restore(self, state: dict[str, Any], meta: dict[str, Any]) -> None:
        self._last_sample = None  # at(x) copies the object: the copy's draws start afresh
        self.mcmc_settings = dict(meta.get("mcmc_settings", {}))
        self.mcmc = meta.get("mcmc", {})
        self.draws = state["draws"].numpy() if "draws" in state else None


class SPLE(SequentialEstimator):
    """Sequential private likelihood estimation with nested RQMC and MCMC.

    Parameters are those of :class:`~dpinfer.inference.neural.sequential.SequentialEstimator` plus

    mcmc_method
        ``"slice"`` (default) or ``"adaptive-metropolis"``.
    chains, warmup, thin
        MCMC chains (run together: one flow evaluation serves all, so many short chains cost
        little more than a few long ones; default 100), warm-up steps per chain (default 50; the
        chains start at the previous round's draws or likelihood-weighted prior draws), thinning.
    posterior_draws
        Draws of the final MCMC run kept in ``posterior.draws``.
    reproduce_authors_proposal
        Re-simulate the round-0 prior draws in every round (the authors' code); default False.

    SPLE's ``"fast"`` training keeps all ``M`` copies in every step and patience 5: its likelihood
    loss conditions the flow once per θ whatever the number of copies, so one copy per step saved
    little and slowed its convergence (one round of 3000 Gaussian-mean simulations: 40 epochs and
    1.3× sbi NLE's CPU time with one copy and patience 10, against 13 epochs and 0.7× with
    patience 5; ``benchmarks/neural_vs_sbi.py``).
    """

    kind = "sple"
    fast_training = {"copies_per_step": None, "patience": 5}

    def __init__(
        self,
        model: Any,
        flow: Any = "nsf",
        rounds: int | str = "auto",
        simulations_per_round: int | None = None,
        rqmc_points: int = 8,
        *,
        mcmc_method: str = "slice",
        chains: int = 20,
        warmup: int = 50,
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
            "chains": check_int("chains", chains, 2),
            "warmup": check_int("warmup", warmup, 0),
            "thin": check_int("thin", thin, 1),
        }
        self.posterior_draws = check_int("posterior_draws", posterior_draws, 4)
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
        flow.fit_standardization(x.reshape(-1, x.shape[-1]), np.repeat(theta, x.shape[1], axis=0))

    def _loss(self, round_index: int) -> LossFn:
        flow = self._flow
        return lambda th, x, lp, gen: nle_loss(flow, th, x)

    def _posterior(self, flow: ConditionalFlow, observed: np.ndarray) -> SPLEPosterior:
        self._flow = flow
        return SPLEPosterior.from_model(
            flow, self.model, observed, self.settings(), mcmc_settings=self.mcmc_settings
        )

    def _propose(self, posterior: Any, n: int, round_index: int) -> np.ndarray:
        if self.reproduce_authors_proposal:
            return self.model.prior.sample(n, np.random.default_rng(self._child(3, 0)))
        draws = posterior.draws
        if draws is None or draws.shape[0] < n:
            raise RuntimeError("internal: SPLE proposal draws missing.")  # pragma: no cover
        return draws[:n]

    def _summary_draws(self, posterior: Any, round_index: int) -> np.ndarray | None:
        return posterior.draws

    #: the final MCMC run's effective sample size below this (any coordinate) is warned about
    min_ess = 400.0

    def _own_diagnostics(self, posterior: Any) -> list[Any]:
        """Split R-hat above 1.01 (Vehtari et al. 2021) or an effective sample size below
        :attr:`min_ess` (their recommendation for reliable summaries) of the final MCMC run."""
        mcmc = posterior.mcmc or {}
        found: list[Any] = []
        ess = mcmc.get("ess")
        if mcmc.get("rhat") is not None:
            # the rank-normalised R-hat also compares the chains' spreads, whose autocorrelation the
            # tail ESS measures: the threshold takes the smaller of the two
            tail = mcmc.get("ess_tail")
            slow = ess if tail is None or ess is None else np.minimum(ess, tail).tolist()
            threshold = rhat_threshold(mcmc.get("chains", 2), mcmc.get("draws_per_chain", 0), slow)
            found += checks.check_rhat(mcmc["rhat"], posterior.param_names, threshold)
        if ess is not None:
            low = [
                f"{name} ({e:.0f})" for name, e in zip(posterior.param_names, ess, strict=False)
                if not e >= self.min_ess
            ]
            if low:
                found.append(checks.Finding(
                    ConvergenceWarning,
                    f"the MCMC of the final round has an effective sample size below {self.min_ess:.0f} "
                    f"for {', '.join(low)} (of {posterior.draws.shape[0]} draws): its draws are strongly "
                    "autocorrelated and posterior summaries are noisy; raise posterior_draws or warmup, "
                    "or sample more with posterior.sample(n).",
                ))
        return found

    def _end_of_round(self, posterior: Any, round_index: int, last: bool) -> dict[str, Any]:
        if self.rounds == "auto":  # any round may be the last: keep enough draws for both uses
            n = max(self.posterior_draws, self.simulations_per_round)
        else:
            n = self.posterior_draws if last else self.simulations_per_round
        previous = posterior.draws
        posterior.draws = None
        posterior.run_mcmc(n, seed=seed_int(self._child(4, round_index)), candidates=previous)
        return {"mcmc": dict(posterior.mcmc)}


__all__ = ["SPLE", "SPLEPosterior"]
