"""Release mechanisms ``s_dp = G(s, u)`` and the releases they make.

A :class:`Mechanism` is written as a deterministic map ``G`` of the confidential statistic ``s``
and ``k = noise_dim`` uniforms ``u ∈ (0, 1)^k``. The same object releases data
(:meth:`Mechanism.release`, which charges the ledger through a
:class:`~dpinfer.privacy.context.ReleaseContext`) and is simulated inside inference
(:meth:`Mechanism.simulate_release`, ``u`` from a simulation seed), so the noise scale has one
source of truth.

What a release draws
--------------------
``G`` is for *inference* only. ``G(s, u)`` evaluated on floating-point uniforms is not a safe
release: the set of doubles it can output depends on ``s`` (Mironov 2012; for a Laplace ``G`` of
a count, b = 1, 1818 of 2000 such outputs from 0 were impossible from the neighbouring count 1:
``tests/privacy/test_noise_families.py``).
Every mechanism of the library releases through an exact construction instead (integer noise from
the exact samplers of Canonne, Kamath & Steinke 2020 on a data-independent power-of-two grid,
:mod:`dpinfer.privacy.grid`; exact binomial counts), flagged by ``exact_release = True``.

A mechanism of your own declares its **noise family**: set ``noise_family`` to the library
mechanism that draws the same law, e.g. :class:`LaplaceMechanism`,
:class:`~dpinfer.privacy.mechanisms.gaussian.GaussianMechanism`,
:class:`~dpinfer.privacy.mechanisms.counts.GeometricMechanism`,
:class:`~dpinfer.privacy.mechanisms.counts.RandomizedResponseMechanism`,
:class:`~dpinfer.privacy.mechanisms.binomial.BinomialTrajectoryRelease` or a known-noise
mechanism (:class:`~dpinfer.privacy.mechanisms.known.KnownNoiseMechanism`,
``GaussianMechanism.known(sigma=...)``). Its release is then the family's exact release of ``s``,
charged with the family's event (what actually ran); ``G``, ``log_density``, ``lattice``,
``output_range`` and ``event`` default to the family's, so a subclass that declares a family needs
to set only ``stat_dim``/``out_dim``/``noise_dim``/``neighbouring`` (and ``has_density = True`` to
use the family's density). If you override ``G`` as well it must be the same law: that is not
checked (checking it on the confidential ``s`` would make the refusal depend on the data).

Without a declared family a release is **refused** (nothing charged or released), unless the
caller passes ``unsafe_float_release=True``: then ``G(s, u)`` is released on the privacy RNG's
uniforms with a :class:`~dpinfer.errors.PrivacyWarning`, the report's mechanism name and
``details["unsafe_float_release"]`` say so and the ledger label starts with ``UNSAFE-FLOAT``.

Reports
-------
:meth:`Mechanism.privacy_report` is the analyst's view of a release: when it cannot be computed
(an accountant that has no analysis for the event, a mechanism without an event) it returns a
report with ``epsilon = inf``, no events and ``details["guarantee"]`` saying why
(:func:`uncomputed_report`), so that an inference never aborts over its report. A *release*
computes its report strictly, before the charge: a release whose guarantee cannot be computed is
refused. ``accountant`` defaults to ``"pld"`` (which interprets every leaf event of the privacy
core); the library's pure-ε mechanisms set ``"pure"``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import InvalidDataError, InvalidPrivacyParameterError, PrivacyWarning, refuse_removed_keywords
from ...randomness import as_generator, open_uniforms
from ..context import FLAT_RELEASE_KEYWORDS, ReleaseContext
from ..events import REPLACE_ONE, PrivacyEvent
from ..report import PrivacyReport, PrivateRelease
from ..rng import PrivacyRNG

if TYPE_CHECKING:
    pass

#: Prefix of the ledger label of a release made with ``unsafe_float_release=True``.
UNSAFE_LABEL = "UNSAFE-FLOAT"


def uncomputed_report(
    mechanism: str,
    reason: str,
    *,
    neighbouring: str = REPLACE_ONE,
    delta: float = 0.0,
    sensitivity: Any = None,
    details: dict[str, Any] | None = None,
) -> PrivacyReport:
    """A report that certifies nothing: ``epsilon = inf``, no events, ``details["guarantee"]``
    saying why the guarantee was not computed (analyst-side reports never abort an inference)."""
    info = {**(details or {}), "guarantee": f"not computed: {reason}"}
    return PrivacyReport(
        epsilon=math.inf,
        delta=float(delta),
        accountant="none",
        neighbouring=neighbouring if neighbouring in ("replace-one", "add-remove") else REPLACE_ONE,
        sensitivity=sensitivity,
        events=(),
        mechanism=mechanism,
        details=info,
    )


class Mechanism:
    """A release mechanism ``s_dp = G(s, u)``, ``u ∈ (0,1)^noise_dim`` (module docstring).

    Subclasses set ``stat_dim`` (length of ``s``), ``out_dim`` (length of ``s_dp``),
    ``noise_dim`` (``k``), ``sensitivity``, ``neighbouring`` and either declare
    ``noise_family`` (a library mechanism drawing the same law: how the release is made) or
    implement :meth:`G`, :meth:`event` and, where tractable, :meth:`log_density` (inference
    only; such a mechanism is released only with ``unsafe_float_release=True``). A mechanism
    whose outputs are counts (or any grid ``k·h``) overrides :attr:`lattice`, so that neural
    estimators train on dequantized simulations.
    """

    stat_dim: int
    out_dim: int
    noise_dim: int
    neighbouring: str
    name: str = "mechanism"
    has_density: bool = False
    accountant: str = "pld"
    delta: float = 0.0  # the δ of one release ((ε, δ) mechanisms set it; the report is at this δ)
    #: True for the library's mechanisms, which release through an exact construction.
    exact_release: bool = False
    #: A mechanism of your own: the library mechanism whose exact release draws its law.
    noise_family: Mechanism | None = None

    # -- the declared noise family ------------------------------------------------------------
    def _family(self) -> Mechanism | None:
        """The declared noise family (checked), or None for the library's own mechanisms and for
        a mechanism that declares none."""
        if self.exact_release:
            return None
        fam = self.noise_family
        if fam is None:
            return None
        if not isinstance(fam, Mechanism) or not fam.releases_exactly:
            raise InvalidPrivacyParameterError(
                f"{self.name}: noise_family must be a dpinfer mechanism with an exact release "
                "(LaplaceMechanism, GaussianMechanism, GeometricMechanism, RandomizedResponseMechanism, "
                f"KnownNoiseMechanism, ...), got {type(fam).__name__}."
            )
        dims = (self.stat_dim, self.out_dim)
        if (fam.stat_dim, fam.out_dim) != dims:
            raise InvalidPrivacyParameterError(
                f"{self.name}: its noise family {fam.name!r} releases a statistic of length "
                f"{fam.stat_dim} as {fam.out_dim} values, but the mechanism declares stat_dim="
                f"{self.stat_dim}, out_dim={self.out_dim}."
            )
        return fam

    @property
    def releases_exactly(self) -> bool:
        """Whether :meth:`release` draws through an exact construction (the library's mechanisms
        and a mechanism with a declared ``noise_family``)."""
        return bool(self.exact_release) or self.noise_family is not None

    # -- the law (inference) ------------------------------------------------------------------
    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The deterministic map ``(s, u) -> s_dp``, broadcasting over leading axes (default: the
        declared noise family's)."""
        fam = self._family()
        if fam is None:
            raise NotImplementedError(
                f"{type(self).__name__} must implement G(s, u) or declare noise_family."
            )
        return fam.G(s, u)

    def event(self) -> PrivacyEvent:
        """The privacy event of one release (default: the declared noise family's)."""
        fam = self._family()
        if fam is None:
            raise NotImplementedError(
                f"{type(self).__name__} must implement event() or declare noise_family."
            )
        return fam.event()

    def log_density(self, s_dp: np.ndarray, s: np.ndarray) -> np.ndarray:
        """``log η(s_dp | s)``, broadcasting over leading axes (if tractable; default: the
        declared noise family's)."""
        fam = self._family()
        if fam is None:
            raise NotImplementedError(f"{type(self).__name__} has no tractable density.")
        return fam.log_density(s_dp, s)

    @property
    def sensitivity(self) -> Any:
        fam = self._family()
        return None if fam is None else fam.sensitivity

    def check_statistic(self, s: Any) -> np.ndarray:
        """Validate a confidential statistic: finite, shape ``(..., stat_dim)`` (messages never
        print its values)."""
        try:
            arr = np.asarray(s, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidDataError(
                f"{self.name}: the confidential statistic must be numeric, got {type(s).__name__}."
            ) from None
        if arr.ndim == 0 or arr.shape[-1] != self.stat_dim:
            raise InvalidDataError(
                f"{self.name}: the confidential statistic must have length {self.stat_dim}, got shape "
                f"{arr.shape}."
            )
        if not np.all(np.isfinite(arr)):
            raise InvalidDataError(f"{self.name}: the confidential statistic contains NaN or inf.")
        return arr

    def check_observed(self, s_dp: Any) -> np.ndarray:
        """Validate an observed (public) release: finite, length ``out_dim``, inside the range."""
        arr = np.asarray(s_dp, dtype=np.float64).reshape(-1)
        if arr.shape[0] != self.out_dim:
            raise InvalidDataError(
                f"{self.name}: observed statistics must have length {self.out_dim}, got {arr.shape[0]}."
            )
        if not np.all(np.isfinite(arr)):
            raise InvalidDataError(f"{self.name}: observed statistics contain NaN or inf.")
        lo, hi = self.output_range
        if np.any(arr < lo) or np.any(arr > hi):
            raise InvalidDataError(
                f"{self.name}: observed statistics must lie in [{lo}, {hi}] (the mechanism's range), "
                f"got {arr.tolist()}."
            )
        return arr

    @property
    def output_range(self) -> tuple[float, float]:
        """Bounds of the mechanism's output (all of R for additive noise; default: the declared
        noise family's)."""
        fam = self._family()
        return (-np.inf, np.inf) if fam is None else fam.output_range

    @property
    def lattice(self) -> np.ndarray | None:
        """Spacing ``h_j`` of the grid ``{k·h_j}`` output ``j`` lives on (0: continuous), or None
        when every output is continuous; neural estimators dequantize with it
        (:mod:`dpinfer.inference.neural.dequantize`). Default: the declared noise family's."""
        fam = self._family()
        return None if fam is None else fam.lattice

    def simulate_release(self, s: np.ndarray, seed: Any = None) -> np.ndarray:
        """Inference-time simulation of the mechanism: ``G(s, u)`` with ``u`` from a *simulation* seed.

        This is NOT a release: it is how inference methods (SMC-ABC, SPPE, ...) simulate what the
        known mechanism would output, and it must never be applied to confidential data. A
        release is :meth:`release`, which charges the ledger and draws its noise from a
        :class:`~dpinfer.privacy.PrivacyRNG`.
        """
        s = np.asarray(s, dtype=np.float64)
        u = open_uniforms(as_generator(seed), s.shape[:-1] + (self.noise_dim,))
        return self.G(s, u)

    # -- reports ------------------------------------------------------------------------------
    def _release_event(self) -> PrivacyEvent:
        """The event a release charges: what actually runs (the declared family's event)."""
        fam = self._family()
        return self.event() if fam is None else fam._release_event()

    def _strict_report(self, insecure_rng: bool, accounted: bool, unsafe: bool = False) -> PrivacyReport:
        fam = None if unsafe else self._family()
        source = self if fam is None else fam
        details = dict(source.details())
        name = self.name
        if fam is not None:
            details = {**details, **self.details(), "noise_family": fam.name}
            name = f"{self.name} (released as {fam.name})"
        if unsafe:
            details.update(
                unsafe_float_release=True,
                floating_point="UNSAFE: G(s, u) on floating-point uniforms; the output's bits can reveal "
                "the statistic (Mironov 2012)",
            )
            name = f"{self.name} [UNSAFE float release]"
        return PrivacyReport.from_event(
            self._release_event() if not unsafe else self.event(),
            delta=source.delta,
            accountant=source.accountant,
            sensitivity=source.sensitivity,
            mechanism=name,
            insecure_rng=insecure_rng,
            details=details,
            accounted=accounted,
        )

    def privacy_report(self, insecure_rng: bool = False, accounted: bool = True) -> PrivacyReport:
        """The privacy report of one release by this mechanism (the analyst's view).

        Never raises over the guarantee: when it cannot be computed the report says why
        (:func:`uncomputed_report`, ``epsilon = inf``) and inference goes on.
        """
        try:
            return self._strict_report(insecure_rng, accounted)
        except Exception as exc:  # noqa: BLE001 - a report must never abort an inference
            reason = f"{type(exc).__name__}: {exc}"
            try:
                sens = self.sensitivity
            except Exception:  # noqa: BLE001
                sens = None
            return uncomputed_report(
                self.name, reason, neighbouring=getattr(self, "neighbouring", REPLACE_ONE),
                delta=float(getattr(self, "delta", 0.0)), sensitivity=sens,
            )

    def details(self) -> dict[str, Any]:
        """Mechanism parameters for the privacy report."""
        return {}

    # -- the release ----------------------------------------------------------------------------
    @refuse_removed_keywords(FLAT_RELEASE_KEYWORDS, positional=(2, "privacy_rng"))
    def release(
        self,
        s: Any,
        *,
        context: ReleaseContext | None = None,
        label: str = "",
        unsafe_float_release: bool = False,
    ) -> PrivateRelease:
        """Release the confidential statistic ``s`` (one vector, length ``stat_dim``).

        The one release path (:class:`~dpinfer.privacy.context.ReleaseContext`): every check
        first (the statistic, its range, the exact construction, the report); then the event is
        charged to the context's ledger (or the release warns that it is unaccounted); only then
        is the noise drawn from the context's privacy RNG.

        Parameters
        ----------
        s
            The confidential statistic.
        context
            The :class:`~dpinfer.privacy.context.ReleaseContext`: the ledger and data set charged
            and the :class:`~dpinfer.privacy.PrivacyRNG` (None: unaccounted, with a warning, and OS
            entropy). The earlier ``privacy_rng`` argument and ``ledger=``/``dataset=`` keywords
            are refused with a :class:`TypeError` naming ``context=ReleaseContext(...)``.
        label
            The ledger label (default: the context's label, else the mechanism's name).
        unsafe_float_release
            Release ``G(s, u)`` on floating-point uniforms for a mechanism that declares no noise
            family (module docstring). Leaks through the floating-point representation; warns and
            is marked in the report and the ledger label. Without it such a release is refused.

        Raises
        ------
        InvalidDataError
            A statistic of the wrong length, non-finite or outside the range its sensitivity
            assumes. Nothing is charged or released.
        InvalidPrivacyParameterError
            A mechanism without an exact release and without ``unsafe_float_release=True``, or
            whose guarantee cannot be computed. Nothing is charged or released.
        """
        arr = self.check_statistic(s)
        if arr.ndim != 1:
            raise InvalidDataError(f"{self.name}: release one statistic vector at a time, got {arr.shape}.")
        self.validate_statistic_range(arr)
        unsafe = not self.releases_exactly
        if unsafe and not unsafe_float_release:
            raise InvalidPrivacyParameterError(
                f"{self.name}: this mechanism declares no noise family, so its release would be G(s, u) "
                "on floating-point uniforms, whose output bits can reveal the statistic (Mironov 2012: "
                "most outputs are then impossible from a neighbouring data set). Set noise_family to the "
                "library mechanism that draws the same law exactly (LaplaceMechanism, GaussianMechanism, "
                "GeometricMechanism, RandomizedResponseMechanism, KnownNoiseMechanism / "
                "GaussianMechanism.known(sigma=...), ...), or pass unsafe_float_release=True to accept "
                "the leak (the release is then marked UNSAFE in its report and ledger label). Nothing "
                "was charged or released."
            )
        ctx = ReleaseContext.of(context)
        tag = label or ctx.label or self.name
        if unsafe:
            tag = f"{UNSAFE_LABEL} {tag}"
        draw = self._prepare_release(arr, unsafe_float_release=unsafe_float_release)
        event = self.event() if unsafe else self._release_event()
        report = self._strict_report(ctx.insecure, ctx.accounted, unsafe)  # before the charge
        if unsafe:
            warnings.warn(
                f"{self.name}: released as G(s, u) on floating-point uniforms (unsafe_float_release=True): "
                "the output's floating-point bits can reveal the confidential statistic. Declare "
                "noise_family for an exact release.",
                PrivacyWarning,
                stacklevel=2,
            )
        value = ctx.release(event, draw, what=f"{self.name}: release", label=tag, stacklevel=5)
        return PrivateRelease(np.asarray(value, dtype=np.float64), report)

    def _prepare_release(
        self, s: np.ndarray, *, unsafe_float_release: bool = False
    ) -> Callable[[PrivacyRNG], np.ndarray]:
        """Validate ``s`` for release and return the function that draws the released value.

        Runs before the charge. The default draws through the declared noise family (its checks
        and its exact construction), or ``G(s, u)`` on the privacy RNG's uniforms when the caller
        passed ``unsafe_float_release=True``; the library's mechanisms override it.
        """
        fam = self._family()
        if fam is not None:
            t = fam.check_statistic(s)
            fam.validate_statistic_range(t)
            return fam._prepare_release(t)
        if not unsafe_float_release:  # pragma: no cover - release() refuses first
            raise InvalidPrivacyParameterError(f"{self.name}: no exact release (declare noise_family).")
        return lambda gen: self.G(s, open_uniforms(gen, (self.noise_dim,)))

    def validate_statistic_range(self, s: np.ndarray) -> None:
        """Check that ``s`` is a possible confidential statistic (the sensitivity assumes it)."""
        return None


def check_in_bounds(name: str, s: np.ndarray, bounds: tuple[np.ndarray, np.ndarray] | None) -> None:
    """Refuse a confidential statistic outside the ``(lo, hi)`` range its sensitivity assumes."""
    if bounds is None:
        return
    lo, hi = bounds
    if np.any(s < lo - 1e-12) or np.any(s > hi + 1e-12):
        raise InvalidDataError(
            f"{name}: the confidential statistic lies outside the range its sensitivity assumes "
            f"([{lo.tolist()}, {hi.tolist()}]); clamp the data first. Nothing was charged or released."
        )


def as_bounds(bounds: tuple[Any, Any] | None) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lo, hi)`` as float arrays (or None)."""
    return None if bounds is None else (np.asarray(bounds[0], float), np.asarray(bounds[1], float))


class LaplaceMechanism(Mechanism):
    """Laplace noise of scale ``b ≈ sensitivity/epsilon`` on every coordinate, released on a grid.

    Release (:meth:`release`): floating-point safe, ``γ·(round(s/γ) + Z)`` with ``Z`` exact
    discrete Laplace noise of scale ``b/γ`` grid units (:func:`dpinfer.privacy.grid.laplace`;
    γ a power of two 2¹²-2¹³ times finer than b in one dimension): exactly ε-DP for an L1
    sensitivity under ``neighbouring`` (:class:`~dpinfer.privacy.DiscreteLaplaceEvent`). ``b`` is
    the scale that actually runs, ``γ·t ≥ sensitivity/epsilon`` (at most 2⁻¹¹ larger, for every
    ε: :mod:`dpinfer.privacy.grid`). Noise of a published scale (no ε) is
    :class:`~dpinfer.privacy.mechanisms.known.KnownNoiseMechanism` (``KnownNoiseMechanism.laplace``).

    Inference (:meth:`G`, :meth:`log_density`): the continuous Laplace law of scale ``b``,
    ``G(s, u) = s - b·sgn(u - ½)·log(1 - 2|u - ½|)`` (Xiong et al. 2025, Prop. 3). It differs
    from the released law only by the grid: the release is the continuous law's discretisation
    up to a shift of the centre by at most γ/2 (the rounding of ``s``) and the discrete Laplace
    pmf, which equals ``γ·η(kγ)·(1 + O((γ/b)²))``. On any interval the two laws' probabilities
    differ by at most ~γ/b ≤ 2⁻¹², far below Monte Carlo error (tested).

    Parameters
    ----------
    stat_dim
        Length of the statistic.
    sensitivity
        L1 sensitivity of the statistic under ``neighbouring``.
    epsilon
        Privacy level.
    bounds
        Optional (lo, hi) arrays: the range a valid confidential statistic must lie in.
    """

    name = "laplace"
    has_density = True
    accountant = "pure"
    exact_release = True

    def __init__(
        self,
        stat_dim: int,
        sensitivity: float,
        epsilon: float,
        neighbouring: str = "replace-one",
        bounds: tuple[Any, Any] | None = None,
    ) -> None:
        from ..validation import check_count, check_epsilon, check_relation, check_sensitivity

        self.stat_dim = self.out_dim = self.noise_dim = check_count(stat_dim, "stat_dim")
        self.epsilon = check_epsilon(epsilon)
        sens = check_sensitivity(sensitivity)
        self._sensitivity = sens
        self.neighbouring = check_relation(neighbouring)
        from ..grid import laplace_grid

        self.grid = laplace_grid(sens, self.epsilon, self.stat_dim)
        self.scale = self.grid.scale  # the scale that runs (>= sensitivity/epsilon)
        self.bounds = as_bounds(bounds)

    @property
    def sensitivity(self) -> float:
        return self._sensitivity

    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        v = np.asarray(u, dtype=np.float64) - 0.5
        return np.asarray(s, dtype=np.float64) - self.scale * np.sign(v) * np.log1p(-2.0 * np.abs(v))

    def log_density(self, s_dp: np.ndarray, s: np.ndarray) -> np.ndarray:
        z = np.abs(np.asarray(s_dp, dtype=np.float64) - np.asarray(s, dtype=np.float64))
        return (-z / self.scale - np.log(2 * self.scale)).sum(-1)

    def event(self) -> PrivacyEvent:
        from ..events import DiscreteLaplaceEvent

        return DiscreteLaplaceEvent(self.grid.epsilon, self.grid.sensitivity_units, self.neighbouring)

    def details(self) -> dict[str, Any]:
        return {
            "noise_scale": self.scale,
            "stat_dim": self.stat_dim,
            "grid": self.grid.gamma,
            "grid_sensitivity": self.grid.sensitivity_units,
            "floating_point": "exact discrete Laplace on the grid (CKS 2020)",
        }

    def _prepare_release(
        self, s: np.ndarray, *, unsafe_float_release: bool = False
    ) -> Callable[[PrivacyRNG], np.ndarray]:
        from ..grid import grid_integers, laplace_on_grid

        k = grid_integers(s, self.grid.gamma)  # refuses values too large for the grid
        return lambda gen: laplace_on_grid(k, self.grid, gen)

    def validate_statistic_range(self, s: np.ndarray) -> None:
        check_in_bounds(self.name, s, self.bounds)

    def __repr__(self) -> str:
        return (
            f"LaplaceMechanism(stat_dim={self.stat_dim}, sensitivity={self.sensitivity:g}, "
            f"epsilon={self.epsilon:g}, {self.neighbouring})"
        )
