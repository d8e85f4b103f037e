"""Models: one module per model (prior + simulator + mechanism, + exact posterior if known).

Shared pieces: :mod:`.priors` (+ :mod:`.prior_families`, :mod:`.prior_adapters`,
:mod:`.transforms`), :mod:`.mechanisms` (+ :mod:`.gaussian_mechanism`, :mod:`.count_mechanisms`,
:mod:`.composed_mechanism`, :mod:`.clamped`), :mod:`.contract` (the model contract, from functions
or by subclassing), :mod:`.user_factory` (``--model package.module:factory``), :mod:`.posteriors`
and :mod:`.randomness` (seeds and uniforms).
"""

from .clamped import ClampedRelease as ClampedRelease
from .clamped import clamped_release as clamped_release
from .composed_mechanism import ComposedMechanism as ComposedMechanism
from .contract import PrivateDataModel as PrivateDataModel
from .count_mechanisms import DiscreteLaplaceMechanism as DiscreteLaplaceMechanism
from .count_mechanisms import GeometricMechanism as GeometricMechanism
from .count_mechanisms import RandomizedResponseMechanism as RandomizedResponseMechanism
from .covid import CovidPolynomial as CovidPolynomial
from .gaussian_mean import GaussianMean as GaussianMean
from .gaussian_mechanism import GaussianMechanism as GaussianMechanism
from .linreg import LinearRegression as LinearRegression
from .mechanisms import LaplaceMechanism as LaplaceMechanism
from .mechanisms import Mechanism as Mechanism
from .mechanisms import PrivateRelease as PrivateRelease
from .mixture_uniform import MixtureOfUniforms as MixtureOfUniforms
from .naive_bayes import NaiveBayes as NaiveBayes
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
from .sir import SIR as SIR
from .sir import BinomialTrajectoryMechanism as BinomialTrajectoryMechanism
from .sir import gillespie_sir as gillespie_sir
from .transforms import Bijection as Bijection
from .transforms import BlockBijection as BlockBijection
from .transforms import BoxBijection as BoxBijection
from .transforms import StickBreakingBijection as StickBreakingBijection
from .tuberculosis import Tuberculosis as Tuberculosis
