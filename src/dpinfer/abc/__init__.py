"""Approximate Bayesian computation: rejection ABC, ABCDP (private), SMC-ABC."""

from .abcdp import abcdp
from .draws import ArrayDraws, DrawSource, SimulatedDraws, as_draw_source
from .mechanism_is import ImportanceResult, mechanism_importance_sampling
from .rejection import rejection_abc, rejection_abc_draws
from .result import ABCDPResult, ABCResult
from .smc_abc import SMCABCResult, smc_abc
from .svt import SparseVector

__all__ = [
    "ABCDPResult",
    "ABCResult",
    "ArrayDraws",
    "DrawSource",
    "ImportanceResult",
    "SimulatedDraws",
    "SMCABCResult",
    "SparseVector",
    "abcdp",
    "as_draw_source",
    "mechanism_importance_sampling",
    "rejection_abc",
    "rejection_abc_draws",
    "smc_abc",
]
