"""Models: one module per model (prior + simulator + mechanism, + exact posterior if known)."""

from .base import DrawsPosterior as DrawsPosterior
from .base import GaussianPosterior as GaussianPosterior
from .base import GaussianPrior as GaussianPrior
from .base import LaplaceMechanism as LaplaceMechanism
from .base import Mechanism as Mechanism
from .base import Prior as Prior
from .base import PrivateDataModel as PrivateDataModel
from .base import PrivateRelease as PrivateRelease
from .covid import CovidPolynomial as CovidPolynomial
from .gaussian_mean import GaussianMean as GaussianMean
from .gaussian_mean import GridPosterior as GridPosterior
from .linreg import LinearRegression as LinearRegression
from .mixture_uniform import MixtureOfUniforms as MixtureOfUniforms
from .naive_bayes import NaiveBayes as NaiveBayes
from .sir import SIR as SIR
from .sir import BinomialTrajectoryMechanism as BinomialTrajectoryMechanism
from .sir import gillespie_sir as gillespie_sir
from .tuberculosis import Tuberculosis as Tuberculosis
