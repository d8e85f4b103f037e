"""What the analyst writes: priors, the private-data model contract, and the shipped models.

* :mod:`.priors` (+ :mod:`.prior_families`, :mod:`.prior_adapters`, :mod:`.transforms`): priors;
* :mod:`.contract`: the private-data model (prior + confidential simulator + release mechanism),
  from functions or by subclassing; :mod:`.user_factory` (``--model package.module:factory``);
* :mod:`.posteriors`: exact posteriors of the shipped conjugate models;
* :mod:`.shipped`: the papers' models and the registry of their names.

The release mechanisms live in :mod:`dpinfer.privacy.mechanisms` (they draw secret noise) and are
re-exported here because a model is written with one.
"""

from ..privacy.mechanisms.base import LaplaceMechanism as LaplaceMechanism
from ..privacy.mechanisms.base import Mechanism as Mechanism
from ..privacy.mechanisms.clamped import ClampedRelease as ClampedRelease
from ..privacy.mechanisms.clamped import clamped_release as clamped_release
from ..privacy.mechanisms.composed import ComposedMechanism as ComposedMechanism
from ..privacy.mechanisms.counts import DiscreteLaplaceMechanism as DiscreteLaplaceMechanism
from ..privacy.mechanisms.counts import GeometricMechanism as GeometricMechanism
from ..privacy.mechanisms.counts import RandomizedResponseMechanism as RandomizedResponseMechanism
from ..privacy.mechanisms.gaussian import GaussianMechanism as GaussianMechanism
from ..privacy.mechanisms.known import KnownNoiseMechanism as KnownNoiseMechanism
from ..privacy.report import PrivateRelease as PrivateRelease
from .contract import PrivateDataModel as PrivateDataModel
from .posteriors import DrawsPosterior as DrawsPosterior
from .posteriors import GaussianPosterior as GaussianPosterior
from .posteriors import GridPosterior as GridPosterior
from .prior_adapters import IndependentPrior as IndependentPrior
from .prior_adapters import ScipyPrior as ScipyPrior
from .prior_adapters import TorchPrior as TorchPrior
from .prior_adapters import as_prior as as_prior
from .prior_families import BetaPrior as BetaPrior
from .prior_families import DirichletPrior as DirichletPrior
from .prior_families import GammaPrior as GammaPrior
from .prior_families import LogNormalPrior as LogNormalPrior
from .prior_families import UniformPrior as UniformPrior
from .priors import GaussianPrior as GaussianPrior
from .priors import Prior as Prior
from .shipped.covid import CovidPolynomial as CovidPolynomial
from .shipped.gaussian_mean import GaussianMean as GaussianMean
from .shipped.linreg import LinearRegression as LinearRegression
from .shipped.mixture_uniform import MixtureOfUniforms as MixtureOfUniforms
from .shipped.naive_bayes import NaiveBayes as NaiveBayes
from .shipped.sir import SIR as SIR
from .shipped.sir import BinomialTrajectoryMechanism as BinomialTrajectoryMechanism
from .shipped.sir import gillespie_sir as gillespie_sir
from .shipped.tuberculosis import Tuberculosis as Tuberculosis
from .transforms import Bijection as Bijection
from .transforms import BlockBijection as BlockBijection
from .transforms import BoxBijection as BoxBijection
from .transforms import StickBreakingBijection as StickBreakingBijection
