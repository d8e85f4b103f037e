"""Inference from a release that has already been made: post-processing, so it spends no budget.

Nothing here reads confidential data or draws privacy noise; from :mod:`dpinfer.privacy` these
modules take only events and reports (checked by the architecture test).

* :func:`infer` — one entry point that chooses a method (:mod:`.entry`);
* :mod:`.smc` — adaptive SMC-ABC with the mechanism inside the simulator;
* :mod:`.exact` — the exact private-data posterior when the mechanism has a density (importance
  sampling, tempered SMC) and the reference baselines;
* :mod:`.neural` — SPPE and SPLE (Xiong, Ju & Zhang 2025).
"""

from .entry import infer
from .exact.importance import ProposalOptions, mechanism_importance_sampling
from .exact.importance_result import ImportanceResult
from .exact.tempered import tempered_smc
from .exact.tempered_result import TemperedSMCResult
from .posterior import InferenceResult
from .smc.options import KernelOptions, RunOptions
from .smc.result import SMCABCResult
from .smc.smc_abc import SMCInterrupted, smc_abc

__all__ = [
    "ImportanceResult",
    "InferenceResult",
    "KernelOptions",
    "ProposalOptions",
    "RunOptions",
    "SMCABCResult",
    "SMCInterrupted",
    "TemperedSMCResult",
    "infer",
    "mechanism_importance_sampling",
    "smc_abc",
    "tempered_smc",
]
