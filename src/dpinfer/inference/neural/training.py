"""Simulation rounds and the flow-training loop shared by SPPE and SPLE.

Simulation (:func:`simulate_round`): the round's parameters are cut into batches; batch ``j`` of
round ``r`` draws all its randomness (confidential simulator and RQMC scrambles) from
``SeedSequence(seed, spawn_key=(1, r, j))`` (:func:`dpinfer.execution.batch_seeds`), so one seed
gives the same simulations on every backend and worker count, in submission order.

Training (:func:`train_flow`): Adam (weight decay 1e-4), minibatches of simulations (each with its
``M`` privatised copies), gradient-norm clipping at 5, early stopping when the loss on the
held-out simulations has not improved for ``patience`` epochs, and the best validation state
restored (Xiong et al. 2025, App. E; Papamakarios et al. 2019). :class:`TrainingConfig` holds the
settings; its ``"paper"`` preset is the paper's (batch 100, lr 5e-4, patience 20), its default
``"fast"`` preset trains in larger batches and stops sooner (measured in ``benchmarks/neural.py``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from ...errors import InvalidDataError
from ...execution import batch_seeds, get_backend
from ...execution.threads import check_threads, torch_threads
from ...models.contract import confidential_summaries
from .rqmc import point_sets

#: ``(theta, x, log_prior)`` tensors of a training or validation set
Triple = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class TrainingConfig:
    """Optimiser and stopping rule.

    The defaults are the ``"fast"`` preset: minibatches of 200 simulations at learning rate 1e-3,
    10 % of each round held out, and each step on one of the ``M`` privatised copies of each
    simulation, drawn at random (``copies_per_step=1``): the nested losses are means over
    simulations and copies, so this is an unbiased minibatch estimate of the same loss at ``1/M``
    of the flow evaluations, and all copies are used over the epochs (the validation loss keeps
    all ``M``). An epoch then costs about ``1/M`` of an all-copies epoch, so the patience is 10
    epochs (about 1.25 all-copies epochs of data). SPLE's fast training keeps all copies and
    patience 5 (``SequentialEstimator.fast_training``; :class:`~dpinfer.inference.neural.sple.SPLE`).
    Measured (``benchmarks/neural_vs_sbi.py``): on
    the one-round Gaussian-mean benchmark (3000 simulations, M = 8) the median training CPU time
    over five seeds fell from 8.2 s to 4.1 s at the same accuracy; on SIR (K = 10^4, ε = 10,
    round 0 of 1000 simulations) patience 5 with one copy stopped early (held-out loss 0.53-0.65
    against 0.22-0.23 with all copies), patience 10 reached 0.15-0.27, and two rounds reached
    C2ST 0.75 against the exact reference in a third to a half of the CPU time of all copies
    (0.75-0.86; ``benchmarks/neural_sir_training.py``). On harder problems a longer
    patience still buys accuracy: SIR, 2 rounds of 1000 simulations, all copies per step, reached
    C2ST 0.77 against the exact reference with patience 5 (118 s of training) and 0.68 with
    patience 20 (531 s). The ``"paper"`` preset is Xiong et
    al. 2025, App. E and the authors' ``main_baseline.py`` (the authors' code of Xiong, Ju & Zhang
    (2025)): batch 100, lr 5e-4,
    5 % validation, patience 20, at most 10 000 epochs, all ``M`` copies in every step. Both use
    Adam (weight decay 1e-4) and gradient-norm clipping at 5 and restore the state of the best
    validation loss.

    ``copies_per_step``: how many of each simulation's ``M`` copies a training step uses (drawn
    uniformly with replacement; ``None``: all ``M``, the paper's nested loss in every step).
    ``threads``: torch intra-op threads during a fit (default 1: fastest on a shared machine for
    these small networks; ``None`` leaves torch's setting).
    """

    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    batch_size: int = 200
    clip_norm: float = 5.0
    validation_fraction: float = 0.1
    patience: int = 10
    max_epochs: int = 1000
    copies_per_step: int | None = 1
    threads: int | None = 1

    def __post_init__(self) -> None:
        if not (self.learning_rate > 0 and self.weight_decay >= 0 and self.clip_norm > 0):
            raise InvalidDataError("learning_rate and clip_norm must be positive, weight_decay >= 0.")
        if int(self.batch_size) != self.batch_size or self.batch_size < 2:
            raise InvalidDataError(f"batch_size must be an integer >= 2, got {self.batch_size!r}.")
        if not 0 < self.validation_fraction < 0.5:
            raise InvalidDataError(
                f"validation_fraction must be in (0, 0.5), got {self.validation_fraction!r}."
            )
        for name in ("patience", "max_epochs"):
            v = getattr(self, name)
            if int(v) != v or v < 1:
                raise InvalidDataError(f"{name} must be a positive integer, got {v!r}.")
        check_threads(self.threads)
        k = self.copies_per_step
        if k is not None and (isinstance(k, bool) or int(k) != k or k < 1):
            raise InvalidDataError(
                f"copies_per_step must be None (all M copies) or a positive integer, got {k!r}."
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> TrainingConfig:
        """A named preset (:data:`TRAINING_PRESETS`: ``"fast"``, ``"paper"``) with field overrides."""
        if name not in TRAINING_PRESETS:
            raise InvalidDataError(
                f"unknown training preset {name!r}; use one of {sorted(TRAINING_PRESETS)} "
                "or a dict of TrainingConfig fields."
            )
        return cls(**{**TRAINING_PRESETS[name], **overrides})

    @classmethod
    def from_any(cls, value: Any, fast_defaults: dict[str, Any] | None = None) -> TrainingConfig:
        """From None (``"fast"``), a preset name, a TrainingConfig or a dict of fields (an optional
        ``"preset"`` key names the preset the other fields override). ``fast_defaults``: an
        estimator's own values of the ``"fast"`` preset (SPLE: all copies, patience 5), applied
        under the fields given explicitly."""
        fd = dict(fast_defaults or {})
        if value is None:
            return cls(**fd)
        if isinstance(value, TrainingConfig):
            return value
        if isinstance(value, str):
            return cls.preset(value, **(fd if value == "fast" else {}))
        if isinstance(value, dict):
            fields = dict(value)
            name = fields.pop("preset", "fast")
            unknown = set(fields) - set(cls.__dataclass_fields__)
            if unknown:
                raise InvalidDataError(
                    f"unknown training option(s) {sorted(unknown)}; use {sorted(cls.__dataclass_fields__)}."
                )
            return cls.preset(str(name), **{**(fd if name == "fast" else {}), **fields})
        raise InvalidDataError(
            f"training must be a preset name, a TrainingConfig or a dict, got {type(value).__name__}."
        )


#: Named training settings: ``"fast"`` (the default) and ``"paper"`` (Xiong et al. 2025, App. E).
TRAINING_PRESETS: dict[str, dict[str, Any]] = {
    "fast": {},
    "paper": {
        "learning_rate": 5e-4,
        "batch_size": 100,
        "validation_fraction": 0.05,
        "patience": 20,
        "max_epochs": 10_000,
        "copies_per_step": None,
    },
}


@dataclass
class RoundInfo:
    """Diagnostics of one round."""

    round: int
    n_simulations: int
    n_simulations_total: int
    epochs: int
    best_validation_loss: float
    train_loss: float
    simulation_time: float
    training_time: float
    extra: dict[str, Any] = field(default_factory=dict)




# ----------------------------------------------------------------------------------------------
# simulation
# ----------------------------------------------------------------------------------------------
@dataclass
class _SimTask:
    model: Any
    theta: np.ndarray
    m_points: int
    qmc_points: bool
    seed: np.random.SeedSequence


def _simulate_batch(task: _SimTask) -> tuple[np.ndarray, np.ndarray]:
    """Confidential summaries and their ``M`` privatised copies for one batch."""
    rng = np.random.default_rng(task.seed)
    s = confidential_summaries(task.model, task.theta, rng)  # shape-checked, clear message
    u = point_sets(s.shape[0], task.m_points, task.model.noise_dim, rng, task.qmc_points)
    x = np.asarray(task.model.mechanism.G(s[:, None, :], u), dtype=np.float64)
    return s, x


def simulate_round(
    model: Any,
    theta: np.ndarray,
    m_points: int,
    seed: Any,
    round_index: int,
    *,
    qmc_points: bool = True,
    backend: Any = "serial",
    batch_size: int = 500,
    n_workers: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Simulate ``s_i`` and ``x_{i,m} = G(s_i, u_{i,m})`` for every row of ``theta``.

    Returns ``s`` of shape (n, stat_dim) and ``x`` of shape (n, M, out_dim).
    """
    n = theta.shape[0]
    nb = max(1, math.ceil(n / batch_size))
    seeds = batch_seeds(seed, (1, round_index), nb)
    tasks = [
        _SimTask(model, theta[j * batch_size : (j + 1) * batch_size], m_points, qmc_points, seeds[j])
        for j in range(nb)
    ]
    if isinstance(backend, str) and backend == "serial":
        results = [_simulate_batch(t) for t in tasks]
    else:
        be = get_backend(backend, n_workers)
        results = be.map(_simulate_batch, tasks)
    s = np.concatenate([r[0] for r in results], axis=0)
    x = np.concatenate([r[1] for r in results], axis=0)
    if not np.all(np.isfinite(x)):
        raise InvalidDataError(
            "the simulator produced NaN or inf privatised statistics; check the prior support and the model."
        )
    return s, x


# ----------------------------------------------------------------------------------------------
# training
# ----------------------------------------------------------------------------------------------
LossFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Generator | None], torch.Tensor]


def _validation_loss(
    loss_fn: LossFn, theta: torch.Tensor, x: torch.Tensor, logp: torch.Tensor, chunk: int, seed: int
) -> float:
    """The loss on the held-out simulations (fixed atoms: the same generator seed every epoch)."""
    gen = torch.Generator(device=theta.device).manual_seed(seed)
    total = torch.zeros((), device=theta.device)
    n = theta.shape[0]
    with torch.inference_mode():
        for start in range(0, n, chunk):
            sl = slice(start, start + chunk)
            total = total + loss_fn(theta[sl], x[sl], logp[sl], gen) * theta[sl].shape[0]
    return float(total) / max(n, 1)


def _copies(x: torch.Tensor, k: int | None, generator: torch.Generator) -> torch.Tensor:
    """``k`` of the ``M`` privatised copies of each simulation, drawn uniformly with replacement
    (``None`` or ``k >= M``: all of them).

    The nested losses are means over ``(i, m)``, so a minibatch over simulations *and* copies is
    an unbiased estimate of the same loss (and of its gradient); it costs ``k/M`` of a step on
    all copies.
    """
    B, M, o = x.shape
    if k is None or k >= M:
        return x
    c = torch.randint(0, M, (B, int(k)), generator=generator, device=generator.device)
    return x.gather(1, c.to(x.device)[..., None].expand(B, int(k), o))


def _adam(params: Any, config: TrainingConfig) -> torch.optim.Optimizer:
    """Adam, fused where torch supports it for these parameters (one kernel instead of ~6 per tensor)."""
    params = list(params)
    try:
        return torch.optim.Adam(
            params, lr=config.learning_rate, weight_decay=config.weight_decay, fused=True
        )
    except (RuntimeError, TypeError):  # pragma: no cover - devices without a fused Adam
        return torch.optim.Adam(params, lr=config.learning_rate, weight_decay=config.weight_decay)


def train_flow(
    flow: torch.nn.Module,
    loss_fn: LossFn,
    train: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    validation: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    config: TrainingConfig,
    generator: torch.Generator,
    epoch_callback: Callable[[int, float], None] | None = None,
) -> dict[str, Any]:
    """Minimise ``loss_fn`` with Adam and early stopping; restore the best validation state.

    ``train`` and ``validation`` are ``(theta, x, log_prior)`` tensors on the flow's device;
    ``generator`` (on the same device) draws the minibatches and the atoms. The validation loss
    is computed in chunks of ``max(batch_size, 1000)`` simulations, once per epoch. Returns the
    number of epochs, the best validation loss, the last training loss, the validation losses of
    the first and the last epoch, and ``epoch_cap``: True when training ended at ``max_epochs``
    while the validation loss had improved within the last ``patience`` epochs (it was still
    falling: the early stop never fired, so more epochs would have trained the flow further).
    """
    theta, x, logp = train
    n = theta.shape[0]
    params = [p for p in flow.parameters() if p.requires_grad]
    opt = _adam(params, config)
    best = math.inf
    best_state = {k: v.detach().clone() for k, v in flow.state_dict().items()}
    since = 0
    epoch = 0
    last_train = math.nan
    val_seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator, device=generator.device))
    chunk = max(config.batch_size, 1000)
    first_val = math.nan
    capped = True  # until the early stop fires
    for epoch in range(1, config.max_epochs + 1):
        flow.train()
        perm = torch.randperm(n, generator=generator, device=generator.device)
        acc = torch.zeros((), device=theta.device)
        cnt = 0
        for start in range(0, n, config.batch_size):
            idx = perm[start : start + config.batch_size]
            b = idx.numel()
            if b < 2:
                continue
            opt.zero_grad(set_to_none=True)
            xb = _copies(x[idx], config.copies_per_step, generator)
            loss = loss_fn(theta[idx], xb, logp[idx], generator)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, config.clip_norm, foreach=True)
            opt.step()
            acc += loss.detach() * b
            cnt += b
        last_train = float(acc) / max(cnt, 1)
        flow.eval()
        val = _validation_loss(loss_fn, *validation, chunk, val_seed)
        if epoch_callback is not None:
            epoch_callback(epoch, val)
        if epoch == 1:
            first_val = val
        if val < best:
            best = val
            best_state = {k: v.detach().clone() for k, v in flow.state_dict().items()}
            since = 0
        else:
            since += 1
            if since >= config.patience:
                capped = False
                break
    flow.load_state_dict(best_state)
    flow.eval()
    return {
        "epochs": epoch,
        "best_validation_loss": best,
        "train_loss": last_train,
        "first_validation_loss": first_val,
        "epoch_cap": bool(capped and epoch == config.max_epochs),
    }


class SimulationPool:
    """All rounds' simulations (pooled training and validation sets), as float32 tensors."""

    def __init__(self) -> None:
        self.train: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.validation: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add(
        self, theta: np.ndarray, x: np.ndarray, log_prior: np.ndarray, validation_fraction: float
    ) -> None:
        """Add a round: its last ``ceil(fraction·n)`` simulations (i.i.d. draws) go to validation."""
        n = theta.shape[0]
        n_val = max(1, math.ceil(validation_fraction * n))
        if n - n_val < 2:
            raise InvalidDataError(f"too few simulations per round ({n}) to hold out a validation set.")
        self.train.append((theta[: n - n_val], x[: n - n_val], log_prior[: n - n_val]))
        self.validation.append((theta[n - n_val :], x[n - n_val :], log_prior[n - n_val :]))

    @staticmethod
    def _stack(
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], device: Any = "cpu"
    ) -> Triple:
        theta, x, log_prior = (
            torch.as_tensor(np.concatenate([p[k] for p in parts]), dtype=torch.float32).to(device)
            for k in range(3)
        )
        return theta, x, log_prior

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The training parameters and privatised copies of all rounds (float64)."""
        return (np.concatenate([p[0] for p in self.train]), np.concatenate([p[1] for p in self.train]))

    def tensors(self, device: Any = "cpu") -> tuple[Triple, Triple]:
        """float32 ``(theta, x, log_prior)`` of the training and validation sets on ``device``."""
        return self._stack(self.train, device), self._stack(self.validation, device)

    @property
    def n_simulations(self) -> int:
        return int(sum(p[0].shape[0] for p in self.train) + sum(p[0].shape[0] for p in self.validation))


def timer() -> float:
    return time.perf_counter()


__all__ = [
    "TRAINING_PRESETS",
    "RoundInfo",
    "SimulationPool",
    "TrainingConfig",
    "simulate_round",
    "torch_threads",
    "train_flow",
]
