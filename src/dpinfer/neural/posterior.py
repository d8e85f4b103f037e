"""Posterior objects returned by SPPE and SPLE: sampling, densities, persistence, arviz.

* :class:`SPPEPosterior`: the posterior flow ``q_φ(θ | s_obs)`` restricted to the prior support
  (sampling by rejection; ``log_prob`` renormalised by the estimated in-support mass).
* :class:`SPLEPosterior`: ``p(θ | s_obs) ∝ q_φ(s_obs | θ)·p(θ)`` with the likelihood flow; sampling
  by MCMC (several chains, R-hat reported), ``log_prob`` unnormalised unless a normalising
  constant was estimated.

Both carry ``.privacy`` (the report of the release analysed; inference is post-processing and
spends no budget), the per-round diagnostics and the simulation count. ``save`` writes a
``torch.save`` file holding only tensors, numbers and strings (loadable with
``weights_only=True``); the prior is stored as JSON when it is a Gaussian prior, otherwise pass
``prior=`` (or ``model=``) to :meth:`load`.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import InvalidDataError
from ..models.priors import GaussianPrior, Prior
from ..privacy import PrivacyReport
from .flows import ConditionalFlow, FlowConfig
from .mcmc import run_mcmc
from .training import RoundInfo, torch_threads


def _seed_int(seed: Any) -> int:
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1)[0])
    if isinstance(seed, np.random.SeedSequence):
        return int(seed.generate_state(1)[0])
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, 2**31 - 1))
    return int(np.random.SeedSequence(seed).generate_state(1)[0])


def prior_to_dict(prior: Prior) -> dict[str, Any] | None:
    """A JSON description of a Gaussian prior (None for other priors)."""
    if isinstance(prior, GaussianPrior):
        return {"type": "gaussian", "mean": prior.mean.tolist(), "cov": prior.cov.tolist()}
    return None


def prior_from_dict(spec: dict[str, Any] | None) -> Prior | None:
    if spec is None:
        return None
    if spec.get("type") == "gaussian":
        return GaussianPrior(spec["mean"], spec["cov"])
    raise InvalidDataError(f"unknown stored prior type {spec.get('type')!r}.")


class NeuralPosterior:
    """Shared machinery: moments from draws, arviz export, persistence."""

    kind = "neural"

    def __init__(
        self,
        flow: ConditionalFlow,
        prior: Prior,
        observed: np.ndarray,
        param_names: tuple[str, ...],
        rounds: list[RoundInfo] | None = None,
        settings: dict[str, Any] | None = None,
        privacy: PrivacyReport | None = None,
        model: dict[str, Any] | None = None,
    ) -> None:
        self.flow = flow
        self.prior = prior
        self.observed = np.asarray(observed, dtype=np.float64).reshape(-1)
        self.param_names = tuple(param_names)
        self.rounds = list(rounds or [])
        self.settings = dict(settings or {})
        self.privacy = privacy
        self.model = dict(model or {})
        self.threads: int | None = 1  # torch intra-op threads while sampling (1: fastest for small flows)

    @property
    def dim(self) -> int:
        return len(self.param_names)

    @property
    def n_simulations(self) -> int:
        return self.rounds[-1].n_simulations_total if self.rounds else 0

    def sample(self, n: int, seed: Any = None) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def log_prob(self, theta: Any) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_theta(self, theta: Any) -> np.ndarray:
        arr = np.asarray(theta, dtype=np.float64)
        if arr.ndim == 1 and arr.shape[0] == self.dim:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise InvalidDataError(f"theta must have shape (n, {self.dim}), got {np.shape(theta)}.")
        return arr

    def mean(self, n: int = 4000, seed: Any = 0) -> np.ndarray:
        return self.sample(n, seed).mean(axis=0)

    def interval(self, level: float = 0.95, n: int = 4000, seed: Any = 0) -> np.ndarray:
        """Equal-tailed marginal credible intervals from ``n`` draws, shape (dim, 2)."""
        return np.quantile(self.sample(n, seed), [0.5 - level / 2, 0.5 + level / 2], axis=0).T

    def summary(self, n: int = 4000, seed: Any = 0) -> str:
        draws = self.sample(n, seed)
        lo, hi = np.quantile(draws, [0.025, 0.975], axis=0)
        lines = [f"{self.kind.upper()}: {len(self.rounds)} rounds, {self.n_simulations} simulations"]
        for i, name in enumerate(self.param_names):
            lines.append(f"  {name:>12s}: {draws[:, i].mean(): .4f}  95% CI ({lo[i]: .4f}, {hi[i]: .4f})")
        return "\n".join(lines)

    def to_arviz(self, n_draws: int = 4000, seed: Any = 0) -> Any:
        """An ``arviz.InferenceData`` of ``n_draws`` posterior draws (arviz imported lazily)."""
        try:
            import arviz as az
        except ImportError as exc:
            raise ImportError("to_arviz() needs arviz, an optional dependency: pip install arviz") from exc
        draws = self._arviz_draws(n_draws, seed)
        return az.from_dict(posterior={name: draws[..., i] for i, name in enumerate(self.param_names)})

    def _arviz_draws(self, n_draws: int, seed: Any) -> np.ndarray:
        return self.sample(n_draws, seed)[None, :, :]

    # -- persistence --------------------------------------------------------------------------
    def _meta(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "param_names": list(self.param_names),
            "observed": self.observed.tolist(),
            "rounds": [asdict(r) for r in self.rounds],
            "settings": self.settings,
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
            "model": self.model,
            "prior": prior_to_dict(self.prior),
            "flow": {
                "config": self.flow.config.to_dict(),
                "features": self.flow.features,
                "context": self.flow.context,
            },
        }

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def save(self, path: str | Path) -> Path:
        """Write the flow weights and metadata (``.pt``)."""
        path = Path(path)
        if path.suffix != ".pt":
            path = path.with_name(path.name + ".pt")
        state = {
            "meta": json.dumps(self._meta()),
            "state_dict": self.flow.state_dict(),
            **self._extra_state(),
        }
        torch.save(state, path)
        return path

    @classmethod
    def load(cls, path: str | Path, prior: Prior | None = None, model: Any = None) -> NeuralPosterior:
        """Read a posterior written by :meth:`save` (``prior``/``model`` needed for non-Gaussian priors)."""
        state = torch.load(Path(path), weights_only=True)
        meta = json.loads(state["meta"])
        if prior is None and model is not None:
            prior = model.prior
        if prior is None:
            prior = prior_from_dict(meta["prior"])
        if prior is None:
            raise InvalidDataError(
                f"{path}: the prior is not a Gaussian prior and was not stored; "
                "pass prior= or model= to load()."
            )
        fl = meta["flow"]
        flow = ConditionalFlow(FlowConfig(**fl["config"]), fl["features"], fl["context"])
        flow.load_state_dict(state["state_dict"])
        flow.eval()
        kind = meta["kind"]
        klass = {"sppe": SPPEPosterior, "sple": SPLEPosterior}[kind]
        if cls is not NeuralPosterior and klass is not cls:
            raise InvalidDataError(f"{path} holds a {kind} posterior, not a {cls.kind} one.")
        obj = klass.__new__(klass)
        NeuralPosterior.__init__(
            obj,
            flow,
            prior,
            np.asarray(meta["observed"]),
            tuple(meta["param_names"]),
            [RoundInfo(**r) for r in meta["rounds"]],
            meta["settings"],
            None if meta["privacy"] is None else PrivacyReport.from_dict(meta["privacy"]),
            meta["model"],
        )
        obj._restore(state, meta)
        return obj

    def _restore(self, state: dict[str, Any], meta: dict[str, Any]) -> None:
        return None


class SPPEPosterior(NeuralPosterior):
    """``q_φ(θ | s_obs)`` restricted to the prior support."""

    kind = "sppe"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._log_mass: float | None = None

    def _restore(self, state: dict[str, Any], meta: dict[str, Any]) -> None:
        self._log_mass = None

    def _context(self) -> torch.Tensor:
        return torch.as_tensor(self.observed, dtype=torch.float32)

    def _raw_sample(self, n: int) -> np.ndarray:
        with torch.no_grad():
            return self.flow.sample(n, self._context()).double().numpy()

    def sample(self, n: int, seed: Any = None, max_tries: int = 1000) -> np.ndarray:
        """``n`` draws (rejection into the prior support), shape (n, dim)."""
        n = int(n)
        out: list[np.ndarray] = []
        got = tried = 0
        with torch_threads(self.threads), torch.random.fork_rng(devices=[]):
            torch.manual_seed(_seed_int(seed))
            for _ in range(max_tries):
                batch = max(2 * (n - got), 256)
                th = self._raw_sample(batch)
                ok = np.isfinite(th).all(axis=1) & self.prior.in_support(th)
                tried += batch
                out.append(th[ok])
                got += int(ok.sum())
                if got >= n:
                    break
                if tried >= 10_000 and got < 1e-4 * tried:
                    break
        if got < n:
            raise RuntimeError(
                f"the posterior flow puts almost no mass inside the prior support ({got} of {tried} draws); "
                "train longer or with more simulations."
            )
        return np.concatenate(out)[:n]

    def log_mass_in_support(self, n: int = 20000, seed: Any = 12345) -> float:
        """``log P_q(θ ∈ support)`` estimated from ``n`` flow draws (cached)."""
        if self._log_mass is None:
            with torch_threads(self.threads), torch.random.fork_rng(devices=[]):
                torch.manual_seed(_seed_int(seed))
                th = self._raw_sample(n)
            frac = float(np.mean(self.prior.in_support(th)))
            self._log_mass = math.log(max(frac, 1.0 / n))
        return self._log_mass

    def log_prob(self, theta: Any) -> np.ndarray:
        """``log q(θ | s_obs) - log P_q(support)`` inside the prior support, ``-inf`` outside."""
        th = self._check_theta(theta)
        with torch.no_grad():
            lq = (
                self.flow.log_prob(
                    torch.as_tensor(th, dtype=torch.float32), self._context().expand(th.shape[0], -1)
                )
                .double()
                .numpy()
            )
        inside = self.prior.in_support(th)
        return np.where(inside, lq - self.log_mass_in_support(), -np.inf)


class SPLEPosterior(NeuralPosterior):
    """``p(θ | s_obs) ∝ q_φ(s_obs | θ)·p(θ)``, sampled by MCMC.

    ``draws`` holds the draws of the last MCMC run (after :meth:`SPLE.fit`: the run that made the
    final round's proposal, ``mcmc`` its diagnostics including R-hat).
    """

    kind = "sple"

    def __init__(self, *args: Any, mcmc_settings: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mcmc_settings = dict(mcmc_settings or {})
        self.draws: np.ndarray | None = None
        self.mcmc: dict[str, Any] = {}

    def log_likelihood(self, theta: Any) -> np.ndarray:
        """``log q_φ(s_obs | θ)``."""
        th = self._check_theta(theta)
        with torch.no_grad():
            x = torch.as_tensor(self.observed, dtype=torch.float32).expand(th.shape[0], -1)
            return self.flow.log_prob(x, torch.as_tensor(th, dtype=torch.float32)).double().numpy()

    def log_prob(self, theta: Any) -> np.ndarray:
        """Unnormalised ``log q_φ(s_obs | θ) + log p(θ)`` (``-inf`` outside the prior support)."""
        th = self._check_theta(theta)
        lp = np.asarray(self.prior.log_prob(th), dtype=np.float64)
        out = np.full(th.shape[0], -np.inf)
        ok = np.isfinite(lp)
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
        s = self.mcmc_settings
        rng = np.random.default_rng(_seed_int(seed))
        init = self._initial_states(int(s.get("chains", 10)), rng, candidates)
        scale = init.std(axis=0)
        if candidates is not None and len(candidates) > 2:
            scale = np.asarray(candidates).std(axis=0)
        scale = np.where(scale > 0, scale, 0.1)
        with torch.no_grad(), torch_threads(self.threads):
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
        self.draws = res.draws
        self.mcmc = {
            "method": res.method,
            "chains": int(init.shape[0]),
            "rhat": res.rhat.tolist(),
            "max_rhat": float(np.nanmax(res.rhat)),
            "acceptance_rate": res.acceptance_rate,
            "log_prob_calls": res.n_log_prob_calls,
        }
        return res.draws

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        """``n`` MCMC draws (fresh chains started near the stored draws)."""
        return self.run_mcmc(int(n), seed, self.draws).copy()

    def _arviz_draws(self, n_draws: int, seed: Any) -> np.ndarray:
        self.run_mcmc(n_draws, seed, self.draws)
        C = self.mcmc["chains"]
        per = self.draws.shape[0] // C
        return self.draws[: per * C].reshape(per, C, self.dim).transpose(1, 0, 2)

    def _meta(self) -> dict[str, Any]:
        meta = super()._meta()
        meta["mcmc_settings"] = self.mcmc_settings
        meta["mcmc"] = self.mcmc
        return meta

    def _extra_state(self) -> dict[str, Any]:
        return {} if self.draws is None else {"draws": torch.as_tensor(self.draws)}

    def _restore(self, state: dict[str, Any], meta: dict[str, Any]) -> None:
        self.mcmc_settings = meta.get("mcmc_settings", {})
        self.mcmc = meta.get("mcmc", {})
        self.draws = state["draws"].numpy() if "draws" in state else None


__all__ = ["NeuralPosterior", "SPLEPosterior", "SPPEPosterior", "prior_from_dict", "prior_to_dict"]
