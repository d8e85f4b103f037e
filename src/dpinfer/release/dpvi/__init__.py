"""Differentially private variational inference (DPVI; Jälkö, Dikmen & Honkela, UAI 2017).

``DataSpec`` (the description of the data, :mod:`dpinfer.models.data_spec`) is importable from here
too; ``DataOptions``, which it replaced, is refused with a message naming it.
"""

from ...models.data_spec import DataSpec
from .constraints import CholeskyFactor, Interval, Positive, Real, Simplex, constrained_sample
from .diagnostics import DPVIConvergenceWarning, DPVINoiseWarning
from .engine import DPVI
from .families import FullRankGaussian, MeanFieldGaussian, make_family
from .models import GaussianLinearRegression, LogisticRegression, Model, PoissonRegression, make_model
from .optim import SGD, Adam, DPOptimizer, WindowedAdaGrad, clip_per_example
from .options import OptimizerOptions, PrivacyOptions, TrainingOptions
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
    "DataSpec",
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


def __getattr__(name: str) -> object:
    if name == "DataOptions":
        from ...models.data_spec import removed_name

        raise removed_name(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
