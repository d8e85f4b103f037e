"""Release mechanisms: every class here can release a confidential statistic.

* :mod:`.base` — the contract ``s_dp = G(s, u)`` (:class:`Mechanism`), :class:`PrivateRelease`
  and the Laplace mechanism;
* :mod:`.gaussian`, :mod:`.counts` (geometric / discrete Laplace, randomized response),
  :mod:`.composed`, :mod:`.clamped` (the statistic clamped to declared bounds);
* :mod:`.svt` — the sparse vector technique of ABCDP (Laplace and Gaussian noise).
"""

from .base import LaplaceMechanism, Mechanism, PrivateRelease
from .clamped import ClampedRelease, clamped_release
from .composed import ComposedMechanism
from .counts import DiscreteLaplaceMechanism, GeometricMechanism, RandomizedResponseMechanism
from .gaussian import GaussianMechanism
from .svt import GaussianSparseVector, SparseVector

__all__ = [
    "ClampedRelease",
    "ComposedMechanism",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "GaussianSparseVector",
    "GeometricMechanism",
    "LaplaceMechanism",
    "Mechanism",
    "PrivateRelease",
    "RandomizedResponseMechanism",
    "SparseVector",
    "clamped_release",
]
