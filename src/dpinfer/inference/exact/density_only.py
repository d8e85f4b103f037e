"""Releases known only through their noise density (Xiong et al. 2025, §5).

The exact samplers (:func:`~dpinfer.inference.mechanism_importance_sampling`,
:func:`~dpinfer.inference.tempered_smc`) use the release mechanism only through its density
``η(s_dp | s)`` (equation (1) of :mod:`dpinfer.inference.exact.importance`)::

    p(s_dp | θ) = E_{s ~ p(s | θ)} [ η(s_dp | s) ].

They never draw a release. So a release whose noise law is published as a density — a
statistical agency's noise distribution, a mechanism from another library, a noise family
dpinfer does not ship — can be analysed exactly without writing a sampler. This module holds the
*inference-side* protocol for such a density and the model that carries it.

* :class:`NoiseDensity`: any object with ``log_prob(released, statistic)`` returning
  ``log η(released | statistic)`` summed over the coordinates, broadcasting over leading axes
  (``released`` ``(..., out_dim)``, ``statistic`` ``(..., stat_dim)``, result ``(...)``). It holds
  no randomness and releases nothing, so it is not a :mod:`dpinfer.privacy.mechanisms` mechanism
  (those own the secret noise and are audited).
* :class:`DensityOnlyModel`: prior + confidential simulator + a :class:`NoiseDensity`. The exact
  samplers accept it as they accept a :class:`~dpinfer.models.contract.PrivateDataModel`; the
  methods that must simulate the release (SMC-ABC, SPPE/SPLE) are refused with an
  :class:`~dpinfer.errors.InvalidDataError` naming the samplers that work.

Its privacy report certifies nothing (``epsilon = inf``, ``details["guarantee"]`` says why): a
density alone does not say which neighbouring data sets it protects or with which sensitivity.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ...errors import InvalidDataError
from ...models.contract import check_confidential, check_param_names
from ...models.prior_adapters import as_prior
from ...privacy.report import PrivacyReport
from ...randomness import as_generator

SAMPLERS = "mechanism_importance_sampling (method='importance') or tempered_smc (method='tempered')"


@runtime_checkable
class NoiseDensity(Protocol):
    """The log-density of a released value given the confidential statistic.

    ``log_prob(released, statistic)`` must broadcast over leading axes and return
    ``log η(released | statistic)`` (summed over coordinates; ``-inf`` where the density is 0).
    """

    def log_prob(self, released: np.ndarray, statistic: np.ndarray) -> np.ndarray: ...


class _DensityMechanism:
    """What the exact samplers read from ``model.mechanism``, built from a :class:`NoiseDensity`.

    Not a privacy mechanism: it cannot release and cannot simulate a release (``G``,
    ``noise_dim`` and ``simulate_release`` raise a clear error).
    """

    has_density = True
    lattice = None

    def __init__(self, noise: NoiseDensity, stat_dim: int, out_dim: int, name: str) -> None:
        self.noise = noise
        self.stat_dim = stat_dim
        self.out_dim = out_dim
        self.name = name

    def log_density(self, s_dp: np.ndarray, s: np.ndarray) -> np.ndarray:
        out = np.asarray(self.noise.log_prob(s_dp, s), dtype=np.float64)
        want = np.broadcast_shapes(np.shape(s_dp)[:-1], np.shape(s)[:-1])
        if out.shape != want:
            raise InvalidDataError(
                f"{type(self.noise).__name__}.log_prob returned shape {out.shape} for released of shape "
                f"{np.shape(s_dp)} and statistic of shape {np.shape(s)}; expected {want} (one log-density "
                "per pair, summed over the coordinates)."
            )
        if np.any(np.isnan(out)) or np.any(out == np.inf):
            raise InvalidDataError(
                f"{type(self.noise).__name__}.log_prob returned NaN or +inf; a log-density must be finite "
                "or -inf (density 0)."
            )
        return out

    def _cannot_simulate(self, what: str) -> InvalidDataError:
        return InvalidDataError(
            f"{what} needs to simulate the release, but this model's mechanism is density-only "
            f"({type(self.noise).__name__}: a log-density, no sampler). Use {SAMPLERS}, which need "
            "only the density; or build a PrivateDataModel with a dpinfer mechanism."
        )

    @property
    def noise_dim(self) -> int:
        raise self._cannot_simulate("this method")

    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        raise self._cannot_simulate("this method")

    def simulate_release(self, s: np.ndarray, seed: Any = None) -> np.ndarray:
        raise self._cannot_simulate("simulate_release")

    def check_statistic(self, s: Any) -> np.ndarray:
        return check_confidential(np.atleast_2d(np.asarray(s, dtype=np.float64)), 1, self.stat_dim)[0]

    def check_observed(self, s_dp: Any) -> np.ndarray:
        try:
            arr = np.asarray(s_dp, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise InvalidDataError(
                f"the observed release must be numeric, got {type(s_dp).__name__}."
            ) from None
        if arr.shape[0] != self.out_dim or not np.all(np.isfinite(arr)):
            raise InvalidDataError(
                f"the observed release must be {self.out_dim} finite numbers, got {arr.tolist()}."
            )
        return arr

    def __repr__(self) -> str:
        return f"DensityOnly({type(self.noise).__name__}, stat_dim={self.stat_dim}, out_dim={self.out_dim})"


class DensityOnlyModel:
    """Prior + confidential simulator + a release known only by its noise density.

    Parameters
    ----------
    prior
        Anything :func:`~dpinfer.models.prior_adapters.as_prior` accepts (a dpinfer prior, a
        frozen scipy distribution, a torch distribution, a list of those).
    simulator
        ``simulator(theta, rng) -> s``: confidential summaries, one row per row of ``theta``
        (shape ``(n, stat_dim)``; ``(n,)`` when ``stat_dim`` is 1).
    noise
        A :class:`NoiseDensity`: ``noise.log_prob(released, statistic)``.
    stat_dim
        Length of the confidential statistic.
    out_dim
        Length of the released value (default ``stat_dim``).
    param_names, name
        Names of the coordinates of θ (default ``theta_0, ...``) and of the model.

    Examples
    --------
    A count released with Student-t noise (no dpinfer sampler needed)::

        class StudentT:
            def log_prob(self, released, statistic):
                return stats.t.logpdf(released - statistic, df=3, scale=5.0).sum(-1)

        model = DensityOnlyModel(prior=BetaPrior(1, 1), simulator=sim, noise=StudentT(), stat_dim=1)
        post = tempered_smc(model, [412.0], seed=0)
    """

    def __init__(
        self,
        prior: Any,
        simulator: Callable[[np.ndarray, np.random.Generator], Any],
        noise: NoiseDensity,
        stat_dim: int,
        out_dim: int | None = None,
        param_names: Any = None,
        name: str = "density-only",
    ) -> None:
        self.prior = as_prior(prior)
        if not callable(simulator):
            raise InvalidDataError(
                f"simulator must be a function simulator(theta, rng), got {type(simulator).__name__}."
            )
        if not isinstance(noise, NoiseDensity):
            raise InvalidDataError(
                "noise must provide log_prob(released, statistic) -> log-density (the NoiseDensity "
                f"protocol of dpinfer.inference.exact.density_only), got {type(noise).__name__}."
            )
        dims = []
        for label, v in (("stat_dim", stat_dim), ("out_dim", stat_dim if out_dim is None else out_dim)):
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise InvalidDataError(f"{label} must be a positive integer, got {v!r}.")
            dims.append(int(v))
        self.simulator = simulator
        self.name = str(name)
        self.mechanism = _DensityMechanism(noise, dims[0], dims[1], f"density-only {type(noise).__name__}")
        self.param_names = check_param_names(param_names, self.prior.dim)

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
        return self.mechanism.noise_dim  # raises: a density-only release cannot be simulated

    def simulate_confidential(self, theta: np.ndarray, seed: Any = None) -> np.ndarray:
        theta = self.prior.check_theta(theta)
        return check_confidential(self.simulator(theta, as_generator(seed)), theta.shape[0], self.stat_dim)

    #: its release has a density but no sampler: checks that simulate releases skip it
    can_simulate = False

    def simulate(self, theta: np.ndarray, seed: Any = None, u: np.ndarray | None = None) -> np.ndarray:
        raise self.mechanism._cannot_simulate("this method (SMC-ABC, SPPE, SPLE, predictive checks)")

    def check_observed(self, observed: Any) -> np.ndarray:
        return self.mechanism.check_observed(observed)

    def privacy_report(self) -> PrivacyReport:
        """A report that certifies nothing: a density says nothing about sensitivity or neighbours."""
        return PrivacyReport(
            epsilon=math.inf,
            delta=0.0,
            accountant="none",
            neighbouring="replace-one",
            sensitivity=None,
            events=(),
            mechanism=self.mechanism.name,
            details={"guarantee": "not computed: a density-only release declares no sensitivity or event"},
        )

    def describe(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "param_names": list(self.param_names),
            "theta_dim": self.theta_dim,
            "stat_dim": self.stat_dim,
            "mechanism": repr(self.mechanism),
        }

    def __repr__(self) -> str:
        return f"DensityOnlyModel(name={self.name!r}, prior={self.prior!r}, mechanism={self.mechanism!r})"


__all__ = ["DensityOnlyModel", "NoiseDensity"]
