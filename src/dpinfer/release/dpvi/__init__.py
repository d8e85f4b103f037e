"""Differentially private variational inference (DPVI; Jälkö, Dikmen & Honkela, UAI 2017)."""

from .constraints import CholeskyFactor, Interval, Positive, Real, Simplex, constrained_sample
from .diagnostics import DPVIConvergenceWarning, DPVINoiseWarning
from .engine import DPVI
from .families import FullRankGaussian, MeanFieldGaussian, make_family
from .models import GaussianLinearRegression, LogisticRegression, Model, PoissonRegression, make_model
from .optim import SGD, Adam, DPOptimizer, WindowedAdaGrad, clip_per_example
from .options import DataOptions, OptimizerOptions, PrivacyOptions, TrainingOptions
from .planning import PrivacyPlan, plan_privacy
from .result import DPVIResult
from .schedule import Phase

__all__ = [
    "Phase",
    "DPVI",
    "Adam",
    "CholeskyFactor",
    "DPOptimizer",
    "DPVIResult",
    "DataOptions",
    "DPVIConvergenceWarning",
    "DPVINoiseWarning",
    "FullRankGaussian",
    "GaussianLinearRegression",
    "Interval",
    "LogisticRegression",
    "MeanFieldGaussian",
    "Model",
    "OptimizerOptions",
    "PoissonRegression",
    "Positive",
    "PrivacyOptions",
    "PrivacyPlan",
    "Real",
    "SGD",
    "Simplex",
    "TrainingOptions",
    "WindowedAdaGrad",
    "clip_per_example",
    "constrained_sample",
    "make_family",
    "make_model",
    "plan_privacy",
]
