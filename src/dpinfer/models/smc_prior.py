"""A prior in free coordinates, the form private SMC-ABC perturbs particles in.

A model that private SMC-ABC (:mod:`dpinfer.release.private_smc`) can run on implements
``smc_prior() -> SMCPrior``: the sampler finds it through this protocol, never by the model's type
name (issue 37), so a new model supports private SMC-ABC by implementing the method, not by being
added to the release module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass
class SMCPrior:
    """A prior in free coordinates ``z``.

    Attributes
    ----------
    sample
        ``sample(n, rng)``: θ of shape (n, p) from the prior.
    to_theta, from_theta
        The maps between free coordinates ``z`` and θ.
    log_density
        ``log_density(z)``: the prior's log density in ``z`` up to a constant, ``-inf`` outside
        its support.
    """

    sample: Callable[[int, np.random.Generator], np.ndarray]
    to_theta: Callable[[np.ndarray], np.ndarray]
    from_theta: Callable[[np.ndarray], np.ndarray]
    log_density: Callable[[np.ndarray], np.ndarray]


def identity(x: np.ndarray) -> np.ndarray:
    """``z`` and θ coincide (a prior on all of R^p or on a box checked by ``log_density``)."""
    return np.asarray(x, dtype=np.float64)


__all__ = ["SMCPrior", "identity"]
