"""The privacy core: events, accountants, calibration, mechanisms, randomness, ledger, reports."""

from ..errors import (
    BudgetExceededError,
    CalibrationError,
    InsecureRandomnessWarning,
    InvalidPrivacyParameterError,
    NeighbouringRelationError,
    PrivacyError,
    PrivacyWarning,
    UnknownDatasetError,
    UnsupportedEventError,
)
from .accountants import (
    Accountant,
    AdvancedCompositionAccountant,
    PLDAccountant,
    PureAccountant,
    RDPAccountant,
    act,
    available_accountants,
    get_accountant,
    register_accountant,
)
from .calibration import calibrate_gaussian_svt, calibrate_noise_multiplier, composed_gaussian_multiplier
from .context import ReleaseContext
from .event_conversion import event_from_dict, event_to_dict, to_replace_one
from .events import (
    ADD_REMOVE,
    REPLACE_ONE,
    ComposedEvent,
    DiscreteGaussianEvent,
    DiscreteLaplaceEvent,
    GaussianEvent,
    GaussianSparseVectorEvent,
    KnownEvent,
    LaplaceEvent,
    Neighbouring,
    PoissonSubsampledGaussianEvent,
    PrivacyEvent,
    SampledWithReplacementGaussianEvent,
    SparseVectorEvent,
    compose,
)
from .fingerprint import data_fingerprint, file_fingerprint
from .gaussian import (
    analytic_gaussian_delta,
    analytic_gaussian_epsilon,
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
)
from .gaussian_svt import gaussian_svt_rdp
from .grid import gaussian, gaussian_sigma, laplace
from .ledger import Budget, Charge, Ledger, LedgerConnectionError, LedgerFileError, LedgerNotFoundError
from .report import PrivacyReport, PrivateRelease
from .rng import PrivacyRNG, as_privacy_rng

__all__ = [
    "ADD_REMOVE",
    "Neighbouring",
    "Accountant",
    "AdvancedCompositionAccountant",
    "Budget",
    "BudgetExceededError",
    "CalibrationError",
    "Charge",
    "ComposedEvent",
    "DiscreteGaussianEvent",
    "DiscreteLaplaceEvent",
    "GaussianEvent",
    "GaussianSparseVectorEvent",
    "InsecureRandomnessWarning",
    "InvalidPrivacyParameterError",
    "KnownEvent",
    "LaplaceEvent",
    "Ledger",
    "LedgerConnectionError",
    "LedgerFileError",
    "LedgerNotFoundError",
    "NeighbouringRelationError",
    "PLDAccountant",
    "PoissonSubsampledGaussianEvent",
    "SampledWithReplacementGaussianEvent",
    "PrivacyError",
    "PrivacyWarning",
    "PrivacyEvent",
    "PrivacyRNG",
    "PrivacyReport",
    "PrivateRelease",
    "PureAccountant",
    "RDPAccountant",
    "ReleaseContext",
    "REPLACE_ONE",
    "SparseVectorEvent",
    "UnknownDatasetError",
    "UnsupportedEventError",
    "act",
    "analytic_gaussian_delta",
    "analytic_gaussian_epsilon",
    "analytic_gaussian_sigma",
    "as_privacy_rng",
    "available_accountants",
    "calibrate_gaussian_svt",
    "calibrate_noise_multiplier",
    "composed_gaussian_multiplier",
    "classical_gaussian_sigma",
    "compose",
    "data_fingerprint",
    "event_from_dict",
    "event_to_dict",
    "file_fingerprint",
    "gaussian",
    "gaussian_sigma",
    "gaussian_svt_rdp",
    "get_accountant",
    "laplace",
    "register_accountant",
    "to_replace_one",
]


# InvalidDataError moved to dpinfer.errors (errors are not a privacy concept): one release of
# grace with a DeprecationWarning.
