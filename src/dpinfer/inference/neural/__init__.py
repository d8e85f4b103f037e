"""Neural simulation-based inference from privatised data (Xiong, Ju & Zhang 2025).

* :class:`SPPE`: sequential private posterior estimation (posterior flow, atomic APT loss);
* :class:`SPLE`: sequential private likelihood estimation (likelihood flow + MCMC), and
  :func:`sple_mle`, the maximum of its learned likelihood with observed-information errors;
* nested RQMC: each simulated confidential summary privatised ``M = 2^m`` times through the
  mechanism map ``G(s, u)`` with a scrambled Sobol net (:mod:`dpinfer.inference.neural.rqmc`);
* conditional flows (zuko NSF / MAF) z-scored on simulations (:mod:`dpinfer.inference.neural.flows`).
"""

from .flows import ConditionalFlow, FlowConfig, build_flow
from .losses import apt_loss, nle_loss, npe_loss
from .mcmc import run_mcmc, split_rhat
from .mle import MLEOptions, MLEResult, sple_mle
from .posterior import NeuralPosterior
from .rqmc import check_points, check_stratification, point_sets, privatize, sobol_point_sets
from .run_options import NeuralRunOptions
from .sple import SPLE, SPLEPosterior
from .sppe import SPPE, SPPEPosterior
from .training import RoundInfo, TrainingConfig

__all__ = [
    "SPLE",
    "SPPE",
    "ConditionalFlow",
    "FlowConfig",
    "MLEOptions",
    "MLEResult",
    "NeuralPosterior",
    "NeuralRunOptions",
    "RoundInfo",
    "SPLEPosterior",
    "SPPEPosterior",
    "TrainingConfig",
    "apt_loss",
    "build_flow",
    "check_points",
    "check_stratification",
    "nle_loss",
    "npe_loss",
    "point_sets",
    "privatize",
    "run_mcmc",
    "sobol_point_sets",
    "split_rhat",
    "sple_mle",
]
