"""Approximate Bayesian computation: rejection ABC, ABCDP (private), SMC-ABC."""

from .abcdp import abcdp
from .draws import ArrayDraws, DrawSource, SimulatedDraws, as_draw_source
from .rejection import rejection_abc, rejection_abc_draws
from .result import ABCDPResult, ABCResult
from .smc_abc import SMCABCResult, smc_abc
from .svt import SparseVector

__all__ = [
    "ABCDPResult",
    "ABCResult",
    "ArrayDraws",
    "DrawSource",
    "SimulatedDraws",
    "SMCABCResult",
    "SparseVector",
    "abcdp",
    "as_draw_source",
    "rejection_abc",
    "rejection_abc_draws",
    "smc_abc",
]
