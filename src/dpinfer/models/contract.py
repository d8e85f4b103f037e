"""The private-data model contract: prior, confidential simulator and release mechanism.

A private-data model describes how an observed privatized statistic ``s_dp`` came about:

1. ``θ ~ prior``;
2. ``s = S(x)``, ``x ~ p(x | θ)``: the *confidential* summary, produced by a batched, seeded
   simulator (:meth:`PrivateDataModel.simulate_confidential`);
3. ``s_dp = G(s, u)``, ``u ~ U(0, 1)^k``: the *release mechanism*, written as a deterministic map of
   ``k = noise_dim`` uniforms (:meth:`Mechanism.G`).

Writing the mechanism as a map of uniforms makes Monte Carlo and (randomised) quasi-Monte Carlo
noise interchangeable: SMC-ABC feeds pseudo-random ``u``; nested RQMC estimators of the private
likelihood ``∫ η(s_dp | s) p(s | θ) ds`` feed scrambled Sobol points (Xiong et al. 2025, §3.4).

The same :class:`Mechanism` object releases data (:meth:`Mechanism.release`, which charges the
ledger and draws ``u`` from a :class:`~dpinfer.privacy.PrivacyRNG`) and is used inside inference
(:meth:`PrivateDataModel.simulate`, which draws ``u`` from the simulation seed), so the noise
scale has one source of truth.

Shapes
------
All methods are batched over leading axes: ``theta`` is ``(..., theta_dim)``, ``s`` is
``(..., stat_dim)``, ``u`` is ``(..., noise_dim)`` and ``G`` broadcasts ``s`` against ``u`` over the
leading axes, so ``G(s[:, None, :], u)`` with ``u`` of shape ``(n, M, k)`` gives ``M`` privatised
copies of each of ``n`` confidential summaries.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from ..privacy import PrivacyReport
from .mechanisms import Mechanism
from .priors import Prior
from .randomness import as_generator, open_uniforms


class PrivateDataModel(ABC):
    """Prior + batched seeded confidential simulator + release mechanism.

    Subclasses implement :meth:`simulate_confidential`; the rest is shared. ``param_names`` name
    the coordinates of ``θ``.
    """

    name: str = "model"
    prior: Prior
    mechanism: Mechanism
    param_names: tuple[str, ...]

    @property
    def theta_dim(self) -> int:
        return self.prior.dim

    @property
    def stat_dim(self) -> int:
        return self.mechanism.stat_dim

    @property
    def obs_dim(self) -> int:
        return self.mechanism.out_dim

    @property
    def noise_dim(self) -> int:
        """``k``: the number of uniforms the mechanism consumes per release."""
        return self.mechanism.noise_dim

    @abstractmethod
    def simulate_confidential(self, theta: np.ndarray, seed: Any = None) -> np.ndarray:
        """Confidential summaries ``s`` for each row of ``theta``: shape ``(n, stat_dim)``."""

    def simulate(self, theta: np.ndarray, seed: Any = None, u: np.ndarray | None = None) -> np.ndarray:
        """Privatised summaries ``G(s, u)``, ``s`` simulated from ``theta``.

        The uniforms come from ``u`` if given (shape ``(n, noise_dim)``), else from the simulation
        seed. This is inference-time simulation of the known mechanism, not a release.
        """
        gen = as_generator(seed)
        theta = self.prior.check_theta(theta)
        s = self.simulate_confidential(theta, gen)
        if u is None:
            u = open_uniforms(gen, (theta.shape[0], self.noise_dim))
        else:
            u = np.asarray(u, dtype=np.float64)
            if u.shape != (theta.shape[0], self.noise_dim):
                raise InvalidDataError(
                    f"u must have shape ({theta.shape[0]}, {self.noise_dim}), got {u.shape}."
                )
        return self.mechanism.G(s, u)

    def check_observed(self, observed: Any) -> np.ndarray:
        """Validate an observed release for this model (length and range)."""
        return self.mechanism.check_observed(observed)

    def privacy_report(self) -> PrivacyReport:
        """The privacy guarantee of the release this model describes."""
        return self.mechanism.privacy_report()

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description (for results and the CLI)."""
        return {
            "model": self.name,
            "param_names": list(self.param_names),
            "theta_dim": self.theta_dim,
            "stat_dim": self.stat_dim,
            "noise_dim": self.noise_dim,
            "mechanism": repr(self.mechanism),
        }
