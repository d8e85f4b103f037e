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
ledger and then draws the noise exactly, on a data-independent grid, from the privacy RNG — never
as ``G`` on floating-point uniforms; a mechanism of your own declares the library mechanism that
draws its law as ``noise_family``, :mod:`dpinfer.privacy.mechanisms.base`) and is used inside
inference (:meth:`PrivateDataModel.simulate`, which evaluates ``G`` on uniforms from the
simulation seed), so the noise scale has one source of truth. A release whose noise is published
rather than calibrated (census counts with σ = 10) is a known-noise mechanism,
``GaussianMechanism.known(sigma=10, stat_dim=5, discrete=True)``.

Two ways to write a model
-------------------------
From plain functions, as :class:`dpinfer.release.dpvi.Model` does::

    model = PrivateDataModel(prior=GammaPrior(2.0, 1.0), simulator=f, mechanism=mech)

with ``f(theta, rng)`` returning the confidential summaries, one row per row of ``theta``
(``rng`` is a numpy Generator derived from the simulation seed; the shapes are checked, with a
message naming the expected and the returned shape), or by subclassing and implementing
:meth:`PrivateDataModel.simulate_confidential` (what the shipped models do; a subclass sets
``prior``, ``mechanism`` and ``param_names`` itself).

Shapes
------
All methods are batched over leading axes: ``theta`` is ``(..., theta_dim)``, ``s`` is
``(..., stat_dim)``, ``u`` is ``(..., noise_dim)`` and ``G`` broadcasts ``s`` against ``u`` over the
leading axes, so ``G(s[:, None, :], u)`` with ``u`` of shape ``(n, M, k)`` gives ``M`` privatised
copies of each of ``n`` confidential summaries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import InvalidDataError
from ..privacy import PrivacyReport
from ..privacy.mechanisms.base import Mechanism, uncomputed_report
from ..randomness import as_generator, open_uniforms
from .prior_adapters import as_prior
from .priors import Prior


def check_confidential(s: Any, n_theta: int, stat_dim: int, what: str = "the simulator") -> np.ndarray:
    """``s`` as a float array of shape ``(n_theta, stat_dim)``, or a clear error.

    A 1-d array of length ``n_theta`` is accepted when ``stat_dim == 1`` (one summary per θ).
    Raises :class:`~dpinfer.errors.InvalidDataError` naming the expected and returned shapes, or
    the rows holding NaN/inf.
    """
    try:
        arr = np.asarray(s, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(
            f"{what} must return a numeric array of shape ({n_theta}, {stat_dim}), got "
            f"{type(s).__name__} ({exc})."
        ) from None
    if stat_dim == 1 and arr.shape == (n_theta,):
        arr = arr[:, None]
    if arr.shape != (n_theta, stat_dim):
        raise InvalidDataError(
            f"{what} returned shape {arr.shape} for theta of {n_theta} rows; expected ({n_theta}, "
            f"{stat_dim}): one row of confidential summaries per row of theta, and as many columns as "
            f"the mechanism's stat_dim ({stat_dim})."
        )
    bad = ~np.all(np.isfinite(arr), axis=1)
    if bad.any():
        rows = np.nonzero(bad)[0]
        raise InvalidDataError(
            f"{what} returned NaN or inf in {rows.size} of {n_theta} rows (first: row {int(rows[0])}); "
            "the confidential summaries must be finite for every theta the prior can draw."
        )
    return arr


def confidential_summaries(model: Any, theta: np.ndarray, seed: Any = None) -> np.ndarray:
    """``model.simulate_confidential(theta, seed)`` with its shape checked (:func:`check_confidential`).

    What inference methods call, so that a subclass's shape mistake gives a clear message too.
    """
    s = model.simulate_confidential(theta, seed)
    name = f"{type(model).__name__}.simulate_confidential"
    return check_confidential(s, int(np.shape(theta)[0]), int(model.mechanism.stat_dim), name)


def check_param_names(param_names: Any, dim: int) -> tuple[str, ...]:
    """``dim`` distinct parameter names (default ``theta_0 ...``); one string names a 1-D prior."""
    if param_names is None:
        names = tuple(f"theta_{i}" for i in range(dim))
    else:
        names = (param_names,) if isinstance(param_names, str) else tuple(str(p) for p in param_names)
    if len(names) != dim or len(set(names)) != dim:
        raise InvalidDataError(
            f"param_names must be {dim} distinct names (the prior has dim {dim}), got {list(names)}."
        )
    return names


class PrivateDataModel:
    """Prior + batched seeded confidential simulator + release mechanism.

    Parameters
    ----------
    prior
        A :class:`~dpinfer.models.priors.Prior` (``GaussianPrior``, ``UniformPrior``,
        ``GammaPrior``, ...), a list of priors (independent blocks), a frozen ``scipy.stats``
        distribution or a ``torch.distributions.Distribution`` (:func:`~.prior_adapters.as_prior`).
    simulator
        ``simulator(theta, rng) -> s``: ``theta`` of shape ``(n, dim)``, ``rng`` a numpy
        Generator (from the simulation seed; use it for every random draw so that results are
        reproducible), ``s`` the confidential summaries of shape ``(n, mechanism.stat_dim)``
        (``(n,)`` is accepted when ``stat_dim`` is 1).
    mechanism
        The release :class:`~dpinfer.privacy.mechanisms.base.Mechanism` (e.g. from
        :func:`~dpinfer.privacy.mechanisms.clamped.clamped_release`).
    param_names
        Names of the coordinates of θ; default ``theta_0, theta_1, ...``.
    name
        A short name for reports.

    Notes
    -----
    Subclasses instead implement :meth:`simulate_confidential` and set ``prior``, ``mechanism``
    and ``param_names`` in their own ``__init__`` (they need not call this one).
    """

    name: str = "model"
    prior: Prior
    mechanism: Mechanism
    param_names: tuple[str, ...]
    simulator: Callable[[np.ndarray, np.random.Generator], Any] | None = None

    def __init__(
        self,
        prior: Any,
        simulator: Callable[[np.ndarray, np.random.Generator], Any],
        mechanism: Mechanism,
        param_names: Any = None,
        name: str = "custom",
    ) -> None:
        self.prior = as_prior(prior)
        if not callable(simulator):
            raise InvalidDataError(
                "simulator must be a function simulator(theta, rng) -> summaries, got "
                f"{type(simulator).__name__}."
            )
        if not isinstance(mechanism, Mechanism):
            raise InvalidDataError(
                "mechanism must be a dpinfer Mechanism (LaplaceMechanism, GaussianMechanism, "
                f"GeometricMechanism, ... or clamped_release(...)), got {type(mechanism).__name__}."
            )
        self.simulator = simulator
        self.mechanism = mechanism
        self.name = str(name)
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
        """``k``: the number of uniforms the mechanism consumes per release."""
        return self.mechanism.noise_dim

    def simulate_confidential(self, theta: np.ndarray, seed: Any = None) -> np.ndarray:
        """Confidential summaries ``s`` for each row of ``theta``: shape ``(n, stat_dim)``.

        Calls the ``simulator`` given to the constructor (shape-checked); subclasses override it.
        """
        if self.simulator is None:
            raise NotImplementedError(
                f"{type(self).__name__} must implement simulate_confidential, or be built as "
                "PrivateDataModel(prior=..., simulator=..., mechanism=...)."
            )
        theta = self.prior.check_theta(theta)
        s = self.simulator(theta, as_generator(seed))
        return check_confidential(s, theta.shape[0], self.stat_dim)

    def simulate(self, theta: np.ndarray, seed: Any = None, u: np.ndarray | None = None) -> np.ndarray:
        """Privatised summaries ``G(s, u)``, ``s`` simulated from ``theta``.

        The uniforms come from ``u`` if given (shape ``(n, noise_dim)``), else from the simulation
        seed. This is inference-time simulation of the known mechanism, not a release.
        """
        gen = as_generator(seed)
        theta = self.prior.check_theta(theta)
        s = confidential_summaries(self, theta, gen)
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
        """The privacy guarantee of the release this model describes.

        Never raises: an analyst's inference must not abort because the guarantee of the release
        it analyses cannot be computed (e.g. a mechanism whose event no accountant interprets, or
        a known-noise mechanism without a declared sensitivity). The report then says why, with
        ``epsilon = inf`` (:func:`~dpinfer.privacy.mechanisms.base.uncomputed_report`).
        """
        mech = self.mechanism
        try:
            return mech.privacy_report()
        except Exception as exc:  # noqa: BLE001 - a report must never abort an inference
            return uncomputed_report(
                getattr(mech, "name", type(mech).__name__), f"{type(exc).__name__}: {exc}",
                neighbouring=getattr(mech, "neighbouring", "replace-one"),
                delta=float(getattr(mech, "delta", 0.0) or 0.0),
            )

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

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.name!r}, prior={self.prior!r}, mechanism={self.mechanism!r}, "
            f"param_names={list(self.param_names)})"
        )
