"""Approximate Bayesian computation: rejection ABC, ABCDP (private), SMC-ABC, exact importance sampling."""

from .abcdp import abcdp
from .draws import ArrayDraws, DrawSource, SimulatedDraws, as_draw_source
from .importance_result import ImportanceResult
from .mechanism_is import mechanism_importance_sampling
from .private_smc import PrivateSMCResult, private_smc_abc
from .rejection import rejection_abc, rejection_abc_draws
from .result import ABCDPResult, ABCResult
from .smc_abc import SMCInterrupted, smc_abc
from .smc_result import SMCABCResult
from .svt import GaussianSparseVector, SparseVector

__all__ = [
    "ABCDPResult",
    "ABCResult",
    "ArrayDraws",
    "DrawSource",
    "GaussianSparseVector",
    "ImportanceResult",
    "PrivateSMCResult",
    "SimulatedDraws",
    "SMCABCResult",
    "SMCInterrupted",
    "SparseVector",
    "abcdp",
    "as_draw_source",
    "mechanism_importance_sampling",
    "private_smc_abc",
    "rejection_abc",
    "rejection_abc_draws",
    "smc_abc",
]
