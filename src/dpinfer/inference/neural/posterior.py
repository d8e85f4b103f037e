"""The shared machinery of the posteriors returned by SPPE and SPLE: moments, persistence, arviz.

* :class:`~dpinfer.inference.neural.sppe.SPPEPosterior`: the posterior flow ``q_φ(θ | s_obs)`` restricted to
  the prior support (sampling by rejection; ``log_prob`` renormalised by the estimated in-support
  mass).
* :class:`~dpinfer.inference.neural.sple.SPLEPosterior`: ``p(θ | s_obs) ∝ q_φ(s_obs | θ)·p(θ)`` with the
  likelihood flow; sampling by MCMC (several chains, R-hat reported), ``log_prob`` unnormalised.

Both carry ``.privacy`` (the report of the release analysed; inference is post-processing and
spends no budget), the per-round diagnostics and the simulation count. ``save`` writes the common
``dpinfer.result`` format (:mod:`dpinfer.results.format`): the network weights and buffers
as arrays ``flow.<name>`` (float32, exactly), ``observed`` and (SPLE) the stored MCMC ``draws``;
the rounds, settings, flow configuration and MCMC state as JSON fields. The prior is stored as
JSON when it is a Gaussian prior, otherwise pass ``prior=`` (or ``model=``) to :meth:`load`.
The two posterior classes live beside their estimators, in :mod:`dpinfer.inference.neural.sppe` and
:mod:`dpinfer.inference.neural.sple`.
"""

from __future__ import annotations

import copy
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch

from ...errors import InvalidDataError
from ...execution.device import resolve_device
from ...models.priors import GaussianPrior, Prior
from ...models.synthesis import synthesize_from
from ...privacy.report import PrivacyReport
from ...results.format import Record, ResultFile, draws_to_arviz
from ...results.synthetic import SyntheticData
from .flows import ConditionalFlow, FlowConfig
from .training import RoundInfo


def seed_int(seed: Any) -> int:
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


P = TypeVar("P", bound="NeuralPosterior")


class NeuralPosterior(ResultFile):
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

    @classmethod
    def from_model(
        cls: type[P], flow: ConditionalFlow, model: Any, observed: np.ndarray, settings: dict[str, Any],
        **kwargs: Any,
    ) -> P:
        """The posterior of ``model`` (prior, names, privacy report, description) given ``observed``."""
        return cls(
            flow,
            model.prior,
            observed,
            tuple(model.param_names),
            settings=settings,
            privacy=model.privacy_report(),
            model=model.describe(),
            **kwargs,
        )

    # -- where the simulations reached ---------------------------------------------------------
    def simulated(self, theta: np.ndarray) -> np.ndarray:
        """Whether each row of ``theta`` lies in the region the simulations support: inside the
        per-coordinate range of every θ simulated in the fit (``settings["simulated_range"]``,
        issue 39 item 6). The flow never saw a simulation outside it, so its density there is an
        extrapolation; sampling and ``log_prob`` truncate the posterior to it. Everything is
        inside for a posterior without a recorded range (files written before)."""
        rng = self.settings.get("simulated_range")
        th = np.asarray(theta, dtype=np.float64).reshape(-1, len(self.param_names))
        if not rng:
            return np.ones(th.shape[0], dtype=bool)
        lo, hi = (np.asarray(b, dtype=np.float64) for b in rng)
        with np.errstate(invalid="ignore"):
            return np.all((th >= lo) & (th <= hi), axis=1)

    def record_simulated(self, theta: np.ndarray) -> None:
        """Widen ``settings["simulated_range"]`` to include the simulated ``theta`` rows."""
        th = np.asarray(theta, dtype=np.float64)
        th = th[np.all(np.isfinite(th), axis=1)]
        if th.shape[0] == 0:
            return
        lo, hi = th.min(axis=0), th.max(axis=0)
        old = self.settings.get("simulated_range")
        if old:
            lo, hi = np.minimum(lo, old[0]), np.maximum(hi, old[1])
        self.settings["simulated_range"] = [lo.tolist(), hi.tolist()]
        self._range_changed()

    def _range_changed(self) -> None:
        """Called when the simulated range grows (SPPE re-estimates its normalising mass)."""

    # -- several observed releases (amortisation) ------------------------------------------------
    @property
    def amortized(self) -> bool:
        """Whether the flow was trained on prior simulations only (one round), so that it serves
        every observed release, not only the one it was fitted to."""
        return bool(self.settings.get("amortized", False))

    def _check_release(self, x: Any) -> np.ndarray:
        arr = np.asarray(x, dtype=np.float64).reshape(-1)
        if arr.shape != self.observed.shape or not np.all(np.isfinite(arr)):
            raise InvalidDataError(
                f"x must be {self.observed.size} finite privatised statistic(s), got {np.shape(x)}."
            )
        return arr

    def at(self: P, x: Any) -> P:
        """This posterior given another observed release ``x`` (the same flow, no retraining).

        SPPE allows it only for an amortised posterior (one round on prior simulations): after
        proposal rounds its flow is only trained to be right at the release it was fitted to.
        """
        obs = self._check_release(x)
        if self.kind == "sppe" and not self.amortized:
            raise InvalidDataError(
                "this SPPE posterior was trained over several rounds for one release; it is not valid "
                "at another x. Train an amortised one (rounds=1, or append_simulations + train())."
            )
        new = copy.copy(self)
        new.observed = obs
        new._restore({}, {"mcmc_settings": getattr(self, "mcmc_settings", {})})
        return new

    def _require_observed(self) -> None:
        if not np.all(np.isfinite(self.observed)):
            raise InvalidDataError(
                "this posterior was trained without an observed release (train()); pass x=... "
                "(the privatised statistics) to sample or log_prob."
            )

    @property
    def device(self) -> torch.device:
        """Where the flow lives (and the posterior is sampled)."""
        return self.flow.x_mean.device

    def to(self, device: Any) -> NeuralPosterior:
        """Move the flow to ``device`` (``"cpu"``, ``"cuda"``, ``"auto"``); returns ``self``."""
        self.flow.to(resolve_device(device))
        return self

    def _tensor(self, array: Any) -> torch.Tensor:
        """A float32 tensor on the flow's device."""
        return torch.as_tensor(np.asarray(array), dtype=torch.float32, device=self.device)

    def _fork_rng(self) -> Any:
        """``torch.random.fork_rng`` over the CPU and, on a GPU, the flow's device."""
        dev = self.device
        return torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else [], device_type=dev.type)

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

    def synthesize(self, n: int, model: Any, seed: Any = None) -> SyntheticData:
        """``n`` posterior-predictive records (:func:`dpinfer.models.synthesis.synthesize_from`):
        post-processing of the release, no further privacy cost."""
        return synthesize_from(self, n, seed, model)

    def _check_theta(self, theta: Any) -> np.ndarray:
        arr = np.asarray(theta, dtype=np.float64)
        if arr.ndim == 1 and arr.shape[0] == self.dim:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != self.dim:
            raise InvalidDataError(f"theta must have shape (n, {self.dim}), got {np.shape(theta)}.")
        return arr

    def mean(self, n: int = 4000, seed: Any = 0) -> np.ndarray:
        """Posterior mean estimated from ``n`` draws (the same ``seed`` gives the same estimate)."""
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
        """An ``arviz.InferenceData`` of ``n_draws`` posterior draws (SPLE: its MCMC chains) with
        the analysed release's privacy report on the ``posterior`` group, the log density of each
        draw as ``sample_stats.lp`` (:meth:`log_prob`: SPPE's normalised flow posterior, SPLE's
        unnormalised ``log q(s_obs | θ) + log p(θ)``) and the observed release as
        ``observed_data`` (arviz imported lazily)."""
        import xarray as xr

        draws = np.asarray(self._arviz_draws(n_draws, seed), dtype=np.float64)
        idata = draws_to_arviz(draws, tuple(self.param_names), self.privacy, method=self.kind)
        c, n, d = draws.shape
        lp = np.asarray(self.log_prob(draws.reshape(c * n, d)), dtype=np.float64).reshape(c, n)
        idata.add_groups(sample_stats=xr.Dataset(
            {"lp": (("chain", "draw"), lp)}, coords={"chain": np.arange(c), "draw": np.arange(n)}))
        obs = np.atleast_1d(np.asarray(self.observed, dtype=np.float64))
        idata.add_groups(observed_data=xr.Dataset({"s_dp": (("statistic",), obs)}))
        return idata

    def _arviz_draws(self, n_draws: int, seed: Any) -> np.ndarray:
        return self.sample(n_draws, seed)[None, :, :]

    # -- persistence (dpinfer.result) -----------------------------------------------------------
    def _fields(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "rounds": [asdict(r) for r in self.rounds],
            "settings": self.settings,
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

    def _to_record(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays = {f"flow.{k}": v.detach().cpu().numpy() for k, v in self.flow.state_dict().items()}
        arrays["observed"] = self.observed
        arrays.update({k: np.asarray(v) for k, v in self._extra_state().items()})
        return self._fields(), arrays

    @classmethod
    def _from_record(
        cls, record: Record, prior: Prior | None = None, model: Any = None, **kwargs: Any
    ) -> NeuralPosterior:
        f, a = record.fields, record.arrays
        state = {k[len("flow.") :]: torch.as_tensor(v) for k, v in a.items() if k.startswith("flow.")}
        extra = {k: torch.as_tensor(v) for k, v in a.items() if k != "observed" and not k.startswith("flow.")}
        return cls._build(f, state, extra, a["observed"], record.param_names, record.privacy, prior, model)

    @classmethod
    def load(cls, path: str | Path, prior: Prior | None = None, model: Any = None) -> NeuralPosterior:  # type: ignore[override]
        """Read a posterior written by :meth:`save` (``prior``/``model`` needed for non-Gaussian priors)."""
        return super().load(path, prior=prior, model=model)

    @classmethod
    def _build(
        cls,
        meta: dict[str, Any],
        flow_state: dict[str, torch.Tensor],
        extra: dict[str, torch.Tensor],
        observed: np.ndarray,
        param_names: tuple[str, ...],
        privacy: PrivacyReport | None,
        prior: Prior | None,
        model: Any,
    ) -> NeuralPosterior:
        if prior is None and model is not None:
            prior = model.prior
        if prior is None:
            prior = prior_from_dict(meta["prior"])
        if prior is None:
            raise InvalidDataError(
                "the prior is not a Gaussian prior and was not stored; pass prior= or model= to load()."
            )
        fl = meta["flow"]
        flow = ConditionalFlow(FlowConfig(**fl["config"]), fl["features"], fl["context"])
        flow.load_state_dict(flow_state)
        flow.eval()
        obj = cls.__new__(cls)
        NeuralPosterior.__init__(
            obj, flow, prior, observed, param_names, [RoundInfo(**r) for r in meta["rounds"]],
            meta["settings"], privacy, meta["model"],
        )
        obj._restore(extra, meta)
        return obj

    def _restore(self, state: dict[str, Any], meta: dict[str, Any]) -> None:
        return None


__all__ = ["NeuralPosterior", "prior_from_dict", "prior_to_dict"]
