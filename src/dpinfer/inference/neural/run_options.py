"""How a neural estimator's run is executed and watched (run control), apart from its algorithm.

:class:`~dpinfer.inference.neural.sequential.SequentialEstimator` (SPPE, SPLE) takes its
algorithm settings (flow, rounds, simulation budget, RQMC copies, training, dequantization) as
keywords and everything that does not change the posterior's distribution here, as
:func:`~dpinfer.inference.smc.smc_abc.smc_abc` takes :class:`~dpinfer.inference.smc.options.RunOptions`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["RUN_CONTROL_KEYWORDS", "NeuralRunOptions", "refuse_run_keywords"]


@dataclass(frozen=True)
class NeuralRunOptions:
    """Run control of SPPE / SPLE: where the simulations and the training run, and how the run
    is watched.

    Parameters
    ----------
    backend, n_workers, simulation_batch_size
        Where the simulations run (:mod:`dpinfer.execution`); results do not depend on them.
    device
        ``"cpu"`` (default), ``"cuda"`` or ``"auto"`` (CUDA when available): where the flow is
        trained and the posterior sampled (:func:`dpinfer.execution.device.resolve_device`; an
        unavailable ``"cuda"`` raises DeviceUnavailableError at construction). The network
        initialisation is drawn on the CPU, so one seed gives the same initial flow on every
        device; minibatches and atoms come from a generator on the device, so results agree
        across devices in distribution, not bit for bit.
    progress
        Show a per-round progress bar (only on a TTY).
    callback
        ``callback(info, posterior)`` after every round (``posterior`` is live: use it at once).
    epoch_callback
        ``epoch_callback(round, epoch, validation_loss)`` after every training epoch.
    warn
        Issue the estimator's diagnostics as warnings at the end of ``fit`` (default True); they
        are kept in ``posterior.settings["diagnostics"]`` either way.
    """

    backend: Any = "serial"
    n_workers: int | None = None
    simulation_batch_size: int = 500
    device: Any = "cpu"
    progress: bool = False
    callback: Callable[[Any, Any], None] | None = None
    epoch_callback: Callable[[int, int, float], None] | None = None
    warn: bool = True


#: The constructor keywords that moved into :class:`NeuralRunOptions`.
RUN_CONTROL_KEYWORDS = (
    "backend", "n_workers", "simulation_batch_size", "device", "progress", "callback", "epoch_callback",
    "warn",
)


def refuse_run_keywords(owner: str, given: dict[str, Any]) -> None:
    """A TypeError naming the new spelling for run-control keywords given to ``owner`` directly
    (and the usual one for any other unknown keyword)."""
    if not given:
        return
    moved = [k for k in given if k in RUN_CONTROL_KEYWORDS]
    if moved:
        spelled = ", ".join(f"{k}=..." for k in moved)
        raise TypeError(
            f"{owner}({spelled}): run control moved into an option object; pass "
            f"run=NeuralRunOptions({spelled}) (from dpinfer.inference.neural import NeuralRunOptions)."
        )
    raise TypeError(f"{owner}() got unexpected keyword argument(s) {sorted(given)}.")
