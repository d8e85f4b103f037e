"""The registry of release mechanisms and their automatic privacy audits.

Every mechanism that can release a confidential value has one :class:`RegistryEntry` here: its
proof reference, how to build it at a given (ε, δ) through its *public* API, a pair of
neighbouring inputs at its sensitivity bound, the ε it claims (from its own privacy report or
event), and its known-broken variants. ``tests/audits/test_mechanism_registry.py`` runs every
entry through the black-box checks of :mod:`dpinfer.privacy.audit`:

(a) grid membership and reachability of its outputs (:func:`~dpinfer.privacy.audit.check_grid`);
(b) a Clopper–Pearson lower bound on ε from releases on the two inputs, which must not exceed
    the claimed ε (:func:`~dpinfer.privacy.audit.audit_epsilon`; Jagielski, Ullman & Oprea 2020;
    Nasr et al. 2021; Tramèr et al. 2022);
(c) every known-broken variant — the same mechanism calibrated to a fraction of its sensitivity
    (or, equivalently, built at a larger ε than it claims), or the same statistic released as
    ``value + float noise`` — must be caught: by (b) (the bound exceeds the claimed ε), by (a)
    (outputs off any public grid), or by the floating-point distinguishing test of Mironov (2012)
    (:func:`~dpinfer.privacy.audit.impossible_fraction`);
(d) completeness: every :class:`~dpinfer.privacy.mechanisms.base.Mechanism` subclass defined in
    dpinfer and every function in :mod:`dpinfer.privacy` that draws release noise is named by an
    entry's ``targets`` or ``exercises`` (or listed, with the reason, in :data:`NOT_RELEASES`):
    a new mechanism without an entry fails the suite.

Entries name what they audit by ``"module:qualified.name"`` strings, resolved with
:func:`resolve` when an audit runs. Some public APIs live above the privacy layer (the SIR
binomial release in :mod:`dpinfer.models`, the ABCDP embedding release behind
:func:`dpinfer.release.abcdp`, the RFF distance): importing this module loads none of them, so
the privacy core still depends on nothing above it; an entry reaches them only inside an audit.
An entry with ``requires`` is active only once that module exists; an entry with ``grid_pending``
expects its grid check to fail until that module exists (the release is still a float release).

Sizes are kept small (one or two coordinates, a handful of records) so that a few thousand
releases per input take well under a second; the mechanisms' proofs do not depend on size.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ...errors import InvalidPrivacyParameterError
from ..audit import Lattice, laplace_float_reaches
from ..rng import PrivacyRNG

_MECH = "dpinfer.privacy.mechanisms"

__all__ = [
    "NOT_RELEASES",
    "REGISTRY",
    "AuditSetup",
    "BrokenVariant",
    "RegistryEntry",
    "active",
    "entry",
    "module_exists",
    "resolve",
]


# ------------------------------------------------------------------------------------------------
# the data model
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokenVariant:
    """A known-broken version of a mechanism, which the audit must catch.

    Attributes
    ----------
    name
        Short name (used in test ids).
    release
        ``release(data, rng) -> output`` of the broken mechanism, claimed at the entry's ε.
    defect
        What is wrong, in words.
    caught_by
        ``"audit"`` (the Clopper–Pearson bound exceeds the claimed ε), ``"grid"`` (outputs off
        every public grid) or ``"float"`` (outputs impossible from the neighbour, Mironov 2012;
        needs ``reaches``).
    true_epsilon
        The variant's actual ε where it has a closed form (report only), else None.
    reaches
        For ``"float"``: ``reaches(y, x)``, whether the float release can output y from input x.
    """

    name: str
    release: Callable[[Any, PrivacyRNG], Any]
    defect: str
    caught_by: str
    true_epsilon: float | None = None
    reaches: Callable[[np.ndarray, float], np.ndarray] | None = None

    def __post_init__(self) -> None:
        if self.caught_by not in ("audit", "grid", "float"):
            raise InvalidPrivacyParameterError(
                f"caught_by must be 'audit', 'grid' or 'float', got {self.caught_by!r}."
            )
        if self.caught_by == "float" and self.reaches is None:
            raise InvalidPrivacyParameterError("a 'float' variant needs reaches(y, x).")


@dataclass(frozen=True)
class AuditSetup:
    """One mechanism built for an audit.

    Attributes
    ----------
    release
        ``release(data, rng) -> output`` through the mechanism's public API.
    data, data_prime
        Neighbouring inputs at the sensitivity bound.
    epsilon, delta
        The guarantee the mechanism claims for one release (its privacy report or event).
    lattice
        The declared output grid, or None to infer the power-of-two grid of the outputs.
    min_spacing
        Public lower bound on the grid step (checked when ``lattice`` is None).
    output_range, output_range_prime
        Declared output range from ``data`` and from ``data_prime`` (None: unbounded).
    statistic
        Output -> number for the audit's rejection sets (None: projection of the output vector).
    broken
        The known-broken variants.
    float_release
        Set (to the reason) when the release is a documented float release: the grid check is then
        expected to *fail*, and the test says so if it starts to pass.
    """

    release: Callable[[Any, PrivacyRNG], Any]
    data: Any
    data_prime: Any
    epsilon: float
    delta: float
    broken: tuple[BrokenVariant, ...]
    lattice: Lattice | None = None
    min_spacing: float = 0.0
    output_range: tuple[float, float] | None = None
    output_range_prime: tuple[float, float] | None = None
    statistic: Callable[[Any], float] | None = None
    float_release: str | None = None

    def __post_init__(self) -> None:
        if self.lattice is None and not self.min_spacing > 0:
            raise InvalidPrivacyParameterError(
                "declare the release grid (lattice=...) or a public lower bound on its step "
                "(min_spacing > 0)."
            )


@dataclass(frozen=True)
class RegistryEntry:
    """A release mechanism with its proof reference and audit set-up.

    Attributes
    ----------
    name
        Registry key.
    targets
        ``"module:qualname"`` of the public classes/functions this entry releases through.
    proof
        The paper and theorem behind the claimed guarantee.
    build
        ``build(epsilon=..., delta=...) -> AuditSetup``.
    epsilon, delta
        The (ε, δ) the audit builds the mechanism at.
    exercises
        ``"module:qualname"`` of helpers in :mod:`dpinfer.privacy` that the release draws its
        noise through (covered by this entry's audit).
    requires
        A module that must be importable for the entry to be active (a release still being moved
        into :mod:`dpinfer.privacy`); None: always active.
    grid_pending
        A module whose arrival makes the release floating-point safe: until it exists the grid
        check is expected to fail.
    fast_runs, full_runs
        Held-out releases per input of the audit in the fast and the full (slow) settings (the
        rejection set is chosen on as many again).
    """

    name: str
    targets: tuple[str, ...]
    proof: str
    build: Callable[..., AuditSetup]
    epsilon: float = 1.0
    delta: float = 0.0
    exercises: tuple[str, ...] = ()
    requires: str | None = None
    grid_pending: str | None = None
    fast_runs: int = 1000
    full_runs: int = 10000

    def setup(self) -> AuditSetup:
        """The mechanism built at the entry's (ε, δ)."""
        return self.build(epsilon=self.epsilon, delta=self.delta)


def resolve(path: str) -> Any:
    """The object named ``"package.module:qualified.name"`` (imported on demand)."""
    module, _, qual = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qual.split(".") if qual else ():
        obj = getattr(obj, part)
    return obj


def module_exists(name: str) -> bool:
    """Whether ``name`` can be found as a module (without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def active(e: RegistryEntry) -> bool:
    """Whether the entry's ``requires`` module (if any) exists."""
    return e.requires is None or module_exists(e.requires)


# ------------------------------------------------------------------------------------------------
# helpers shared by the entries
# ------------------------------------------------------------------------------------------------


def _quiet(fn: Callable[[], Any]) -> Any:
    """Run a release without a ledger, silencing the 'unaccounted release' warning (audits charge
    nothing on purpose)."""
    import warnings

    from ...errors import PrivacyWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return fn()


def _value(rel: Any) -> np.ndarray:
    return np.asarray(rel.value, dtype=np.float64)


def _release_of(mech: Any) -> Callable[[Any, PrivacyRNG], np.ndarray]:
    """``Mechanism.release`` (the public path: validate, charge-or-warn, draw, report)."""
    return lambda s, rng: _value(_quiet(lambda: mech.release(s, rng)))


def _scaled(release: Callable[[Any, PrivacyRNG], Any], k: float) -> Callable[[Any, PrivacyRNG], Any]:
    """The release applied to ``k·x``: a statistic whose true sensitivity is k times the declared one."""
    return lambda x, rng: release(k * np.asarray(x, dtype=np.float64), rng)


def _reported_epsilon(mech: Any) -> float:
    return float(mech.privacy_report().epsilon)


def _float_laplace(scale: float) -> Callable[[Any, PrivacyRNG], np.ndarray]:
    """The naive release ``x + Lap(scale)`` with the float inverse-CDF sampler (Mironov 2012)."""
    return lambda x, rng: np.asarray(x, dtype=np.float64) + rng.laplace(scale, np.shape(x) or None)


def _float_gaussian(sigma: float) -> Callable[[Any, PrivacyRNG], np.ndarray]:
    """The naive release ``x + N(0, σ²)`` with the float sampler of :meth:`PrivacyRNG.normal`."""
    return lambda x, rng: np.asarray(x, dtype=np.float64) + rng.normal(sigma, np.shape(x) or None)


def _float_g_path(mech: Any) -> Callable[[Any, PrivacyRNG], np.ndarray]:
    """``G(s, u)`` on float privacy uniforms: the default release of a user mechanism with a
    continuous ``G`` before issue 23 (finding 2)."""
    return lambda s, rng: mech.G(np.asarray(s, dtype=np.float64), np.atleast_1d(rng.uniform(mech.noise_dim)))


def _laplace_float(scale: float, release: Callable[[Any, PrivacyRNG], Any], what: str) -> BrokenVariant:
    return BrokenVariant(
        "float-noise", release, f"{what}: outputs reveal the input through their low-order bits",
        "float", math.inf, laplace_float_reaches(scale),
    )


def _miscalibrated(name: str, release: Callable[[Any, PrivacyRNG], Any], defect: str,
                   true_epsilon: float | None = None) -> BrokenVariant:
    return BrokenVariant(name, release, defect, "audit", true_epsilon)


# ------------------------------------------------------------------------------------------------
# privacy.grid: laplace() and gaussian()
# ------------------------------------------------------------------------------------------------


def _build_grid_laplace(*, epsilon: float, delta: float) -> AuditSetup:
    from ..grid import laplace, laplace_grid

    sens = 1.0

    def of(s: float) -> Callable[[Any, PrivacyRNG], float]:
        return lambda x, rng: float(_quiet(lambda: laplace(x, s, epsilon, rng))[0])

    plan = laplace_grid(sens, epsilon)
    broken = (
        _miscalibrated("half-sensitivity", of(sens / 2), "calibrated to half the sensitivity", 2 * epsilon),
        _laplace_float(sens / epsilon, _float_laplace(sens / epsilon), "x + Lap(Δ/ε) in floating point"),
    )
    return AuditSetup(of(sens), 0.0, sens, plan.epsilon, 0.0, broken, Lattice(plan.gamma))


def _build_grid_gaussian(*, epsilon: float, delta: float) -> AuditSetup:
    from ..accountants import get_accountant
    from ..grid import gaussian, gaussian_grid

    sens = 1.0

    def of(s: float) -> Callable[[Any, PrivacyRNG], float]:
        return lambda x, rng: float(_quiet(lambda: gaussian(x, s, epsilon, delta, rng))[0])

    plan = gaussian_grid(sens, epsilon, delta)
    claimed = get_accountant("pld").epsilon(plan.event, delta)
    broken = (
        _miscalibrated("sixth-sensitivity", of(sens / 6), "calibrated to a sixth of the L2 sensitivity"),
        BrokenVariant("float-noise", _float_gaussian(plan.sigma), "x + N(0, σ²) in floating point", "grid"),
    )
    return AuditSetup(of(sens), 0.0, sens, claimed, delta, broken, Lattice(plan.gamma))


# ------------------------------------------------------------------------------------------------
# the Mechanism classes
# ------------------------------------------------------------------------------------------------


def _build_laplace_mechanism(*, epsilon: float, delta: float) -> AuditSetup:
    from .base import LaplaceMechanism

    mech = LaplaceMechanism(1, 1.0, epsilon)
    broken = (
        _miscalibrated("half-sensitivity", _release_of(LaplaceMechanism(1, 0.5, epsilon)),
                       "declared sensitivity half the true one", 2 * epsilon),
        _laplace_float(mech.scale, _float_g_path(mech), "G(s, u) on float uniforms"),
    )
    return AuditSetup(_release_of(mech), [0.0], [1.0], _reported_epsilon(mech), 0.0, broken,
                      Lattice(mech.grid.gamma))


def _build_gaussian_mechanism(*, epsilon: float, delta: float) -> AuditSetup:
    from .gaussian import GaussianMechanism

    d, shift = 2, [1.0 / math.sqrt(2.0)] * 2  # an L2 move of exactly the sensitivity 1
    mech = GaussianMechanism(d, 1.0, epsilon, delta)
    broken = (
        _miscalibrated("sixth-sensitivity", _release_of(GaussianMechanism(d, 1.0 / 6, epsilon, delta)),
                       "declared L2 sensitivity a sixth of the true one"),
        BrokenVariant("float-noise", _float_gaussian(mech.sigma), "s + N(0, σ²) in floating point", "grid"),
    )
    return AuditSetup(_release_of(mech), [0.0, 0.0], shift, _reported_epsilon(mech), delta, broken,
                      Lattice(mech.grid.gamma))


def _build_geometric(*, epsilon: float, delta: float) -> AuditSetup:
    from .counts import GeometricMechanism

    mech = GeometricMechanism(1, 2, epsilon)
    broken = (_miscalibrated("half-sensitivity", _release_of(GeometricMechanism(1, 1, epsilon)),
                             "declared sensitivity 1 for a statistic of sensitivity 2", 2 * epsilon),)
    return AuditSetup(_release_of(mech), [0.0], [2.0], _reported_epsilon(mech), 0.0, broken, Lattice(1.0))


def _build_randomized_response(*, epsilon: float, delta: float) -> AuditSetup:
    from .counts import RandomizedResponseMechanism

    n = 4
    mech = RandomizedResponseMechanism(n, epsilon)
    broken = (_miscalibrated("4x-epsilon", _release_of(RandomizedResponseMechanism(n, 4 * epsilon)),
                             "truth probability of the 4ε mechanism claimed as ε", 4 * epsilon),)
    span = (0.0, float(n))
    return AuditSetup(_release_of(mech), [0.0], [1.0], _reported_epsilon(mech), 0.0, broken, Lattice(1.0),
                      output_range=span, output_range_prime=span)


def _build_composed(*, epsilon: float, delta: float) -> AuditSetup:
    from .base import LaplaceMechanism
    from .composed import ComposedMechanism
    from .counts import GeometricMechanism

    def make(k: float) -> ComposedMechanism:
        parts = [LaplaceMechanism(1, 1.0 / k, epsilon / 2), GeometricMechanism(1, 2, k * epsilon / 2)]
        return ComposedMechanism(parts)

    mech = make(1.0)
    broken = (_miscalibrated("quarter-sensitivity", _release_of(make(4.0)),
                             "both parts calibrated to a quarter of their sensitivity", 4 * epsilon),)
    return AuditSetup(_release_of(mech), [0.0, 0.0], [1.0, 2.0], _reported_epsilon(mech), 0.0, broken,
                      Lattice(min(cast(Any, mech.parts[0]).grid.gamma, 1.0)))


def _records_release(mech: Any) -> Callable[[Any, PrivacyRNG], np.ndarray]:
    return lambda x, rng: _value(_quiet(lambda: mech.release_records(x, rng)))


def _build_clamped_mean(*, epsilon: float, delta: float) -> AuditSetup:
    from .clamped import clamped_release

    n = 10
    mech = clamped_release("mean", 0.0, 1.0, epsilon, n=n)
    data = np.zeros(n)
    data_prime = data.copy()
    data_prime[0] = 1.0
    loose = clamped_release("mean", 0.0, 1.0, 2 * epsilon, n=n)
    broken = (_miscalibrated("half-sensitivity", _records_release(loose),
                             "noise of sensitivity (hi - lo)/(2n), e.g. n counted twice", 2 * epsilon),)
    return AuditSetup(_records_release(mech), data, data_prime, _reported_epsilon(mech), 0.0, broken,
                      Lattice(cast(Any, mech.inner).grid.gamma))


def _build_clamped_sum_and_count(*, epsilon: float, delta: float) -> AuditSetup:
    from .clamped import clamped_release

    def make(k: float) -> Any:
        return clamped_release("sum_and_count", -1, 1, k * epsilon, mechanism="geometric",
                               neighbouring="add-remove")

    mech = make(1.0)
    broken = (_miscalibrated("4x-epsilon", _records_release(make(4.0)),
                             "noise of the 4ε release claimed as ε", 4 * epsilon),)
    return AuditSetup(_records_release(mech), np.ones(3), np.ones(4), _reported_epsilon(mech), 0.0, broken,
                      Lattice(1.0))


def _build_binomial_trajectory(*, epsilon: float, delta: float) -> AuditSetup:
    cls = resolve("dpinfer.models:BinomialTrajectoryMechanism")
    K, N = 1, 2  # small N: the bound N·log(1 + 1/M) is attained at the output N/N, probability ~0.2
    mech = cls(K, 1, N, epsilon)
    loose = cls(K, 1, N, 4 * epsilon)
    broken = (_miscalibrated("4x-epsilon", _release_of(loose), "M = N·d/(4ε): the 4ε release claimed as ε",
                             loose.epsilon_exact),)
    return AuditSetup(_release_of(mech), [0.0], [1.0], float(mech.epsilon_exact), 0.0, broken,
                      Lattice(denominator=N), output_range=(0.0, 1.0), output_range_prime=(0.0, 1.0))


def _build_known_gaussian(*, epsilon: float, delta: float) -> AuditSetup:
    cls = resolve(f"{_MECH}.known:KnownNoiseMechanism")
    mech = cls.gaussian(4.0, 1, discrete=True, sensitivity=1, delta=delta)  # a published σ = 4 on counts
    broken = (_miscalibrated("8x-sensitivity", _scaled(_release_of(mech), 8.0),
                             "the count moves by 8 where sensitivity 1 was declared"),)
    return AuditSetup(_release_of(mech), [0.0], [1.0], _reported_epsilon(mech), delta, broken, Lattice(1.0))


def _build_known_laplace(*, epsilon: float, delta: float) -> AuditSetup:
    cls = resolve(f"{_MECH}.known:KnownNoiseMechanism")
    mech = cls.laplace(1.0 / epsilon, 1, sensitivity=1.0)  # a published b = Δ/ε on a real statistic
    broken = (
        _miscalibrated("2x-sensitivity", _scaled(_release_of(mech), 2.0),
                       "the statistic moves by 2 where sensitivity 1 was declared", 2 * epsilon),
        _laplace_float(float(mech.scale[0]), _float_g_path(mech), "G(s, u) on float uniforms"),
    )
    return AuditSetup(_release_of(mech), [0.0], [1.0], _reported_epsilon(mech), 0.0, broken,
                      Lattice(mech.gamma))


# ------------------------------------------------------------------------------------------------
# the sparse vector (ABCDP Algorithm 1) and its Gaussian variant
# ------------------------------------------------------------------------------------------------

#: Queries of the sparse-vector audit: ρ from D, ρ' from D' (|ρ_t − ρ'_t| = Δ = 1), threshold 0.
_SVT_RHO = (0.0, 0.0, 0.0)
_SVT_RHO_PRIME = (-1.0, -1.0, 1.0)


def _svt_engine(cls: type, rng: PrivacyRNG, n_queries: int, **kw: Any) -> Any:
    """Build an engine through its public constructor: the noise source is passed as ``rng`` or, in
    a constructor that takes a release context, as ``context``; a query limit, if the constructor
    takes one, is the number of queries audited."""
    params = inspect.signature(cls).parameters
    if "rng" in params:
        kw["rng"] = rng
    else:
        from ..context import ReleaseContext

        kw["context"] = ReleaseContext(privacy_rng=rng)
    for name in ("max_queries", "n_queries", "query_limit"):
        if name in params:
            kw[name] = n_queries
    return cls(**kw)


def _first_positive(out: Any) -> float:
    """The output of a c = 1 sparse vector as a number: the index of its positive answer (T if none)."""
    a = np.asarray(out).reshape(-1)
    hits = np.flatnonzero(a == 1)
    return float(hits[0]) if hits.size else float(a.size)


def _svt_release(cls: type, **kw: Any) -> Callable[[Any, PrivacyRNG], np.ndarray]:
    def release(rho: Any, rng: PrivacyRNG) -> np.ndarray:
        queries = np.asarray(rho, dtype=np.float64)
        eng = _svt_engine(cls, rng, queries.size, c=1, epsilon_abc=0.0, resample=False, **kw)
        return np.asarray(eng.process(queries), dtype=np.float64)

    return release


def _build_svt(*, epsilon: float, delta: float) -> AuditSetup:
    from ..accountants import get_accountant
    from ..events import SparseVectorEvent
    from .svt import SparseVector

    c, sens = 1, 1.0
    b = (c + 1) * sens / epsilon  # Park et al. 2021, Theorem 1 (one threshold draw)
    claimed = get_accountant("pure").epsilon(SparseVectorEvent(c, epsilon), 0.0)
    broken = (_miscalibrated("quarter-sensitivity", _svt_release(SparseVector, b=b / 4),
                             "b calibrated to Δρ/4", 4 * epsilon),)
    return AuditSetup(_svt_release(SparseVector, b=b), _SVT_RHO, _SVT_RHO_PRIME, claimed, 0.0, broken,
                      Lattice(1.0), output_range=(0.0, 1.0), output_range_prime=(0.0, 1.0),
                      statistic=_first_positive)


def _build_gaussian_svt(*, epsilon: float, delta: float) -> AuditSetup:
    from ..accountants import get_accountant
    from ..calibration import calibrate_gaussian_svt
    from .svt import GaussianSparseVector

    event = calibrate_gaussian_svt(epsilon, delta, 1, len(_SVT_RHO))
    s1, s2 = event.threshold_noise_multiplier, event.query_noise_multiplier  # Δρ = 1
    claimed = get_accountant("rdp").epsilon(event, delta)
    loose = _svt_release(GaussianSparseVector, sigma_threshold=s1 / 16, sigma_query=s2 / 16)
    broken = (_miscalibrated("sixteenth-sensitivity", loose, "σ1, σ2 calibrated to Δρ/16 (the Rényi "
                             "calibration is loose: σ1 = 7.4Δ at ε = 1)"),)
    return AuditSetup(_svt_release(GaussianSparseVector, sigma_threshold=s1, sigma_query=s2), _SVT_RHO,
                      _SVT_RHO_PRIME, claimed, delta, broken, Lattice(1.0), output_range=(0.0, 1.0),
                      output_range_prime=(0.0, 1.0), statistic=_first_positive)


# ------------------------------------------------------------------------------------------------
# ABCDP's embedding release (public API: dpinfer.release.abcdp(..., release="embedding"))
# ------------------------------------------------------------------------------------------------


def _build_embedding(*, epsilon: float, delta: float) -> AuditSetup:
    from ..calibration import composed_gaussian_multiplier
    from ..context import ReleaseContext

    rff, abcdp = resolve("dpinfer.distances:RFFMMD"), resolve("dpinfer.release:abcdp")
    options = resolve("dpinfer.release:ABCDPOptions")(release="embedding")
    n, n_features = 5, 50
    dist = rff(0.3, n_features, seed=1)
    data = np.random.default_rng(0).uniform(size=(n, 1))
    mu = dist.embed(data)
    best, shift = data, 0.0
    for a in np.linspace(-2.0, 3.0, 201):  # replace record 0 by the value that moves μ the most
        cand = data.copy()
        cand[0, 0] = a
        s = float(np.linalg.norm(dist.embed(cand) - mu))
        if s > shift:
            best, shift = cand, s
    direction = (dist.embed(best) - mu) / shift  # the auditor knows both data sets
    pub = np.random.default_rng(1)
    draws = resolve("dpinfer.release:ArrayDraws")(pub.uniform(size=(2, 1)), pub.uniform(size=(2, n, 1)))

    def of(eps: float) -> Callable[[Any, PrivacyRNG], np.ndarray]:
        def release(y: Any, rng: PrivacyRNG) -> np.ndarray:
            res = _quiet(lambda: abcdp(
                y, draws, dist, c=1, epsilon_total=eps, epsilon_abc=100.0, delta=delta,
                options=options, context=ReleaseContext(privacy_rng=rng),
            ))
            return np.asarray(res.meta["released_embedding"], dtype=np.float64)

        return release

    sigma = composed_gaussian_multiplier(epsilon, delta, 1, "pld") * 2.0 / n

    def float_release(y: Any, rng: PrivacyRNG) -> np.ndarray:
        return dist.embed(y) + np.asarray(rng.normal(sigma, n_features), dtype=np.float64)

    broken = (
        _miscalibrated("10x-epsilon", of(10 * epsilon), "noise of the 10ε release claimed as ε (σ 7.5x too "
                       "small)"),
        BrokenVariant("float-noise", float_release, "μ + N(0, σ²I) in floating point", "grid"),
    )
    return AuditSetup(of(epsilon), data, best, epsilon, delta, broken, None, min_spacing=sigma * 2.0**-24,
                      statistic=lambda out: float(np.asarray(out) @ direction))


# ------------------------------------------------------------------------------------------------
# the DP-SGD / DPVI step and its clip count (privacy.mechanisms.gaussian_sum, privacy.subsampling)
# ------------------------------------------------------------------------------------------------


def _dpvi_release(q: float, scheme: str, multiplier: float) -> Callable[[Any, PrivacyRNG], np.ndarray]:
    import torch

    from ..context import ReleaseContext

    gsum = resolve(f"{_MECH}.gaussian_sum:noisy_clipped_sum")
    subsample = resolve("dpinfer.privacy.subsampling:subsample")

    def release(rows: Any, rng: PrivacyRNG) -> np.ndarray:
        ctx = ReleaseContext(privacy_rng=rng)
        grads = torch.as_tensor(np.asarray(rows, dtype=np.float64))
        idx = torch.as_tensor(subsample(ctx, grads.shape[0], q, scheme))
        out = gsum(ctx, grads[idx], clip=1.0, noise_multiplier=multiplier)
        return out.detach().cpu().numpy().astype(np.float64)

    return release


_DPVI_FLOAT = ("the gradient sum is plain float noise by design (gaussian_sum.py's docstring: the fit "
               "returns parameters, post-processing of the transcript)")


def _build_dpvi_step(*, epsilon: float, delta: float) -> AuditSetup:
    from ..accountants import get_accountant
    from ..events import PoissonSubsampledGaussianEvent
    from ..gaussian import analytic_gaussian_sigma

    q = 0.5
    sigma = analytic_gaussian_sigma(epsilon, delta)  # the unamplified calibration; the claim is amplified
    claimed = get_accountant("pld").epsilon(PoissonSubsampledGaussianEvent(q, sigma, 1), delta)
    data = np.zeros((3, 1))  # three records whose gradients are 0 ...
    data_prime = np.vstack([data, [[5.0]]])  # ... and one more, clipped to norm C = 1 (add-remove)
    broken = (_miscalibrated("eighth-noise", _dpvi_release(q, "poisson", sigma / 8), "noise multiplier σ/8 "
                             "(a clip norm 8x the one accounted)"),)
    return AuditSetup(_dpvi_release(q, "poisson", sigma), data, data_prime, claimed, delta, broken, None,
                      min_spacing=sigma * 2.0**-24, float_release=_DPVI_FLOAT)


def _build_dpvi_with_replacement(*, epsilon: float, delta: float) -> AuditSetup:
    from ..accountants import get_accountant
    from ..events import SampledWithReplacementGaussianEvent

    q, sigma = 0.5, 20.0  # the advanced accountant's paper convention needs σ ≈ 20 for ε ≈ 1 here
    claimed = get_accountant("advanced").epsilon(SampledWithReplacementGaussianEvent(q, sigma, 1), delta)
    data = np.vstack([[[-5.0]], np.zeros((3, 1))])  # record 0 clipped to -C ...
    data_prime = -data  # ... replaced by +C (replace-one, L2 distance 2C)
    broken = (_miscalibrated("40x-noise", _dpvi_release(q, "with-replacement", sigma / 40),
                             "noise multiplier σ/40 (the claim is loose: only a gross miscalibration "
                             "exceeds it)"),)
    return AuditSetup(_dpvi_release(q, "with-replacement", sigma), data, data_prime, claimed, delta, broken,
                      None, min_spacing=sigma * 2.0**-24, float_release=_DPVI_FLOAT)


def _build_dpvi_count(*, epsilon: float, delta: float) -> AuditSetup:
    import torch

    from ..context import ReleaseContext
    from ..gaussian import analytic_gaussian_epsilon, analytic_gaussian_sigma

    count = resolve(f"{_MECH}.gaussian_sum:noisy_centred_count")
    sens = 0.5  # each record moves the centred count by 1/2 (add-remove)
    std = analytic_gaussian_sigma(epsilon, delta, sens)

    def of(s: float) -> Callable[[Any, PrivacyRNG], float]:
        def release(rows: Any, rng: PrivacyRNG) -> float:
            grads = torch.as_tensor(np.asarray(rows, dtype=np.float64))
            return float(count(ReleaseContext(privacy_rng=rng), grads, clip=1.0, std=s))

        return release

    data = np.full((3, 1), 0.5)
    data_prime = np.vstack([data, [[0.5]]])  # one more record inside the clip ball: count + 1/2
    broken = (_miscalibrated("sixth-noise", of(std / 6), "noise std for sensitivity 1/12"),)
    return AuditSetup(of(std), data, data_prime, analytic_gaussian_epsilon(std / sens, delta), delta, broken,
                      None, min_spacing=std * 2.0**-24,
                      float_release="the clip count is plain float noise by design (gaussian_sum.py)")


# ------------------------------------------------------------------------------------------------
# the K-round Gaussian release of the private SMC-ABC (privacy.mechanisms.gaussian_rounds)
# ------------------------------------------------------------------------------------------------


def _build_gaussian_rounds(*, epsilon: float, delta: float) -> AuditSetup:
    from ..accountants import get_accountant
    from ..context import ReleaseContext

    plan = resolve(f"{_MECH}.gaussian_rounds:gaussian_rounds")(1.0, 2, 1, epsilon, delta)
    one_round = resolve(f"{_MECH}.gaussian_rounds:release_gaussian_round")

    def release(values: Any, rng: PrivacyRNG) -> np.ndarray:
        return np.asarray(one_round(values, plan, ReleaseContext(privacy_rng=rng)), dtype=np.float64)

    claimed = get_accountant("rdp").epsilon(plan.event, delta)
    broken = (_miscalibrated("8x-sensitivity", _scaled(release, 8.0),
                             "every coordinate moves by 8Δ where Δ was declared"),)
    return AuditSetup(release, [0.0, 0.0], [1.0, 1.0], claimed, delta, broken, Lattice(plan.gamma))


# ------------------------------------------------------------------------------------------------
# the registry
# ------------------------------------------------------------------------------------------------

REGISTRY: tuple[RegistryEntry, ...] = (
    RegistryEntry(
        "grid.laplace", ("dpinfer.privacy.grid:laplace",),
        "Discrete Laplace on a power-of-two grid: exactly ε-DP for the integer sensitivity ⌈Δ/γ⌉ "
        "(Ghosh, Roughgarden & Sundararajan 2012; Canonne, Kamath & Steinke 2020); floating-point "
        "safety: Mironov 2012",
        _build_grid_laplace, exercises=("dpinfer.privacy.grid:laplace_on_grid",),
    ),
    RegistryEntry(
        "grid.gaussian", ("dpinfer.privacy.grid:gaussian",),
        "Discrete Gaussian on a power-of-two grid: the exact privacy curve of Canonne, Kamath & "
        "Steinke 2020, Thm 7 (one dimension, PLD accountant); σ from Balle & Wang 2018, Thm 8",
        _build_grid_gaussian, delta=1e-5,
    ),
    RegistryEntry(
        "LaplaceMechanism", (f"{_MECH}.base:LaplaceMechanism",),
        "Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006; Dwork & Roth 2014, Thm 3.6), "
        "released as discrete Laplace on a grid (Canonne, Kamath & Steinke 2020)",
        _build_laplace_mechanism, exercises=("dpinfer.privacy.grid:laplace_on_grid",),
    ),
    RegistryEntry(
        "GaussianMechanism", (f"{_MECH}.gaussian:GaussianMechanism",),
        "Discrete Gaussian in d dimensions: ½(Δ/σ)²-zCDP (Canonne, Kamath & Steinke 2020, Thm 14) "
        "converted by the RDP accountant; starting σ from Balle & Wang 2018, Thm 8",
        _build_gaussian_mechanism, delta=1e-5,
    ),
    RegistryEntry(
        "GeometricMechanism", (f"{_MECH}.counts:GeometricMechanism",),
        "Geometric mechanism (Ghosh, Roughgarden & Sundararajan 2012): ε-DP for integer "
        "sensitivity Δ and scale t >= Δ/ε; exact sampler of Canonne, Kamath & Steinke 2020",
        _build_geometric,
    ),
    RegistryEntry(
        "RandomizedResponseMechanism", (f"{_MECH}.counts:RandomizedResponseMechanism",),
        "Randomized response (Warner 1965; Dwork & Roth 2014, §3.2): p/(1 - p) <= e^ε per record; the "
        "count of reported ones is post-processing",
        _build_randomized_response,
    ),
    RegistryEntry(
        "ComposedMechanism", (f"{_MECH}.composed:ComposedMechanism",),
        "Sequential composition (Dwork & Roth 2014, Thm 3.16) of a Laplace and a geometric part",
        _build_composed, exercises=("dpinfer.privacy.grid:laplace_on_grid",),
    ),
    RegistryEntry(
        "clamped_release.mean", (f"{_MECH}.clamped:clamped_release", f"{_MECH}.clamped:ClampedRelease"),
        "Clamped mean, sensitivity (hi - lo)/n under replace-one (Dwork & Roth 2014, §3.3), Laplace "
        "mechanism on a grid",
        _build_clamped_mean, exercises=("dpinfer.privacy.grid:laplace_on_grid",),
    ),
    RegistryEntry(
        "clamped_release.sum_and_count", (f"{_MECH}.clamped:clamped_release",),
        "Clamped sum (sensitivity max(|lo|, |hi|)) and count (sensitivity 1) under add-remove, "
        "geometric noise, ε split between them (Dwork & Roth 2014, Thm 3.16)",
        _build_clamped_sum_and_count,
    ),
    RegistryEntry(
        "BinomialTrajectoryMechanism", ("dpinfer.models:BinomialTrajectoryMechanism",),
        "Binomial release of Xiong et al. 2025, Prop. 4 (App. B): d·N·log(1 + 1/M)-DP with M = N·d/ε",
        _build_binomial_trajectory, exercises=(f"{_MECH}.binomial:BinomialTrajectoryRelease",),
    ),
    RegistryEntry(
        "KnownNoiseMechanism.gaussian", (f"{_MECH}.known:KnownNoiseMechanism",),
        "Published discrete Gaussian noise on counts: the exact curve of Canonne, Kamath & Steinke 2020, "
        "Thm 7, for the declared sensitivity",
        _build_known_gaussian, delta=1e-5, requires=f"{_MECH}.known",
    ),
    RegistryEntry(
        "KnownNoiseMechanism.laplace", (f"{_MECH}.known:KnownNoiseMechanism",),
        "Published Laplace scale on a real statistic, released as discrete Laplace on a grid: ε = Δ/b "
        "(Canonne, Kamath & Steinke 2020)",
        _build_known_laplace, requires=f"{_MECH}.known",
    ),
    RegistryEntry(
        "SparseVector", (f"{_MECH}.svt:SparseVector",),
        "Sparse vector technique of ABCDP: Park, Vinaroz & Jitkrittum 2021, Theorem 1 (threshold "
        "Lap(b), queries Lap(2b), b = (c+1)Δρ/ε); Dwork & Roth 2014, §3.6",
        _build_svt, fast_runs=1500,
    ),
    RegistryEntry(
        "GaussianSparseVector", (f"{_MECH}.svt:GaussianSparseVector",),
        "Gaussian sparse vector: Rényi DP of Zhu & Wang 2020, Theorem 8 (dpinfer.privacy.gaussian_svt, "
        "eq. (2)), converted to (ε, δ) by the RDP accountant",
        _build_gaussian_svt, delta=1e-5,
    ),
    RegistryEntry(
        "abcdp.embedding", ("dpinfer.release:abcdp",),
        "Gaussian mechanism on the RFF mean embedding, L2 sensitivity 2/N (||φ(x)|| = 1), analytic "
        "calibration (Balle & Wang 2018, Thm 8), released as a discrete Gaussian on a grid (Canonne, "
        "Kamath & Steinke 2020; privacy/mechanisms/embedding.py)",
        _build_embedding, delta=1e-5, grid_pending=f"{_MECH}.embedding", fast_runs=400, full_runs=4000,
        exercises=(f"{_MECH}.embedding:release_embedding",),
    ),
    RegistryEntry(
        "dpvi.step", (f"{_MECH}.gaussian_sum:noisy_clipped_sum", "dpinfer.privacy.subsampling:subsample"),
        "Poisson-subsampled Gaussian sum query (Abadi et al. 2016, Alg. 1; Jälkö, Dikmen & Honkela "
        "2017, Alg. 1), one step under the PLD accountant (Mironov, Talwar & Zhang 2019)",
        _build_dpvi_step, delta=1e-5, requires=f"{_MECH}.gaussian_sum",
        exercises=(
            f"{_MECH}.gaussian_sum:add_gaussian_noise",
            "dpinfer.privacy.subsampling:poisson_subsample",
            "dpinfer.privacy.subsampling:bernoulli_mask",
        ),
    ),
    RegistryEntry(
        "dpvi.step.with_replacement", (f"{_MECH}.gaussian_sum:noisy_clipped_sum",),
        "Gaussian sum query on a batch drawn with replacement (Jälkö, Dikmen & Honkela 2017, Alg. 1), "
        "under the advanced accountant's paper convention (Dwork, Rothblum & Vadhan 2010)",
        _build_dpvi_with_replacement, delta=1e-5, requires=f"{_MECH}.gaussian_sum",
        exercises=("dpinfer.privacy.subsampling:with_replacement_subsample",),
    ),
    RegistryEntry(
        "dpvi.clip_count", (f"{_MECH}.gaussian_sum:noisy_centred_count",),
        "Private unclipped count of adaptive clipping (Andrew, Thakkar, McMahan & Ramaswamy 2021, "
        "Alg. 1): a Gaussian mechanism of sensitivity 1/2 (Balle & Wang 2018, Thm 8)",
        _build_dpvi_count, delta=1e-5, requires=f"{_MECH}.gaussian_sum",
    ),
    RegistryEntry(
        "gaussian_rounds", (f"{_MECH}.gaussian_rounds:release_gaussian_round",),
        "One round of the private SMC-ABC's Gaussian release: discrete Gaussian on a grid, "
        "½(L/σ)²-zCDP (Canonne, Kamath & Steinke 2020, Thm 14), RDP accountant",
        _build_gaussian_rounds, delta=1e-5, requires=f"{_MECH}.gaussian_rounds",
    ),
)

#: Functions in dpinfer.privacy that call a sampler but release nothing (the completeness test
#: accepts them with this reason).
NOT_RELEASES: dict[str, str] = {
    f"{_MECH}.base:Mechanism.simulate_release": "inference-time simulation from a public seed",
    f"{_MECH}.base:Mechanism._prepare_release": "the default draw of a user mechanism: refused, or a float "
    "release behind an explicit unsafe switch (issue 23, finding 2); the 'float-noise' variants of "
    "LaplaceMechanism and KnownNoiseMechanism.laplace show the float test catching it",
    "dpinfer.privacy.ledger_postgres:PostgresStore.transaction": "retry back-off jitter (public randomness)",
}


def entry(name: str) -> RegistryEntry:
    """The entry called ``name``."""
    for e in REGISTRY:
        if e.name == name:
            return e
    raise KeyError(f"no registry entry {name!r}; known: {[e.name for e in REGISTRY]}")
