"""Release mechanisms: every class here can release a confidential statistic.

* :mod:`.base` — the contract ``s_dp = G(s, u)`` (:class:`Mechanism`; a mechanism of your own
  declares its ``noise_family``), :class:`PrivateRelease` and the Laplace mechanism;
* :mod:`.gaussian`, :mod:`.counts` (geometric / discrete Laplace, randomized response),
  :mod:`.known` (noise of a published σ or scale, e.g. census counts), :mod:`.binomial` (the
  binomial release of Xiong et al. 2025, Prop. 4), :mod:`.composed`, :mod:`.clamped` (the
  statistic clamped to declared bounds);
* :mod:`.svt` — the sparse vector technique of ABCDP (Laplace and Gaussian noise);
* :mod:`.embedding` — the ABCDP embedding release (vector discrete Gaussian on a grid).

:mod:`.gaussian_sum` (DPVI's noisy clipped gradient sums) and :mod:`.gaussian_rounds` are imported
from their modules: the first needs torch, which importing this package must not load.
"""

from ..report import PrivateRelease
from .base import LaplaceMechanism, Mechanism
from .binomial import BinomialTrajectoryRelease
from .clamped import ClampedRelease, clamped_release
from .composed import ComposedMechanism
from .counts import DiscreteLaplaceMechanism, GeometricMechanism, RandomizedResponseMechanism
from .embedding import release_embedding
from .gaussian import GaussianMechanism
from .known import KnownNoiseMechanism
from .svt import GaussianSparseVector, SparseVector

__all__ = [
    "BinomialTrajectoryRelease",
    "ClampedRelease",
    "ComposedMechanism",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "GaussianSparseVector",
    "GeometricMechanism",
    "KnownNoiseMechanism",
    "LaplaceMechanism",
    "Mechanism",
    "PrivateRelease",
    "RandomizedResponseMechanism",
    "SparseVector",
    "clamped_release",
    "release_embedding",
]
