"""Approximate Bayesian computation: rejection ABC, ABCDP (private), SMC-ABC, and exact inference with the
mechanism density (importance sampling, tempered SMC)."""

from .abcdp import abcdp
from .draws import ArrayDraws, DrawSource, SimulatedDraws, as_draw_source
from .importance_result import ImportanceResult
from .mechanism_is import mechanism_importance_sampling
from .private_smc import PrivateSMCResult, private_smc_abc
from .private_smc_gauss import gaussian_weights_smc_abc
from .rejection import rejection_abc, rejection_abc_draws
from .result import ABCDPResult, ABCResult
from .smc_abc import SMCInterrupted, smc_abc
from .smc_result import SMCABCResult
from .svt import GaussianSparseVector, SparseVector
from .tempered_result import TemperedSMCResult
from .tempered_smc import tempered_smc

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
    "TemperedSMCResult",
    "abcdp",
    "as_draw_source",
    "gaussian_weights_smc_abc",
    "mechanism_importance_sampling",
    "private_smc_abc",
    "rejection_abc",
    "rejection_abc_draws",
    "smc_abc",
    "tempered_smc",
]
