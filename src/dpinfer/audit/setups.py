"""How each release mechanism is built for an audit: its release, neighbours, claim and broken variants.

One ``build(*, epsilon, delta) -> AuditSetup`` function per registry entry (:mod:`.registry`),
each through the mechanism's *public* API. Known-broken variants are the same mechanism
calibrated to a fraction of its sensitivity (or, equivalently, built at a larger ε than it
claims), or the same statistic released as ``value + float noise``.

Sizes are kept small (one or two coordinates, a handful of records) so that a few thousand
releases per input take well under a second; the mechanisms' proofs do not depend on size.
Every release runs without a ledger (audits charge nothing on purpose), its noise drawn from the
:class:`~dpinfer.privacy.rng.PrivacyRNG` the audit passes in.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import torch

from ..distances import RFFMMD
from ..errors import PrivacyWarning
from ..models import BinomialTrajectoryMechanism
from ..privacy.accountants import get_accountant
from ..privacy.calibration import calibrate_gaussian_svt, composed_gaussian_multiplier
from ..privacy.context import ReleaseContext
from ..privacy.events import (
    PoissonSubsampledGaussianEvent,
    SampledWithReplacementGaussianEvent,
    SparseVectorEvent,
)
from ..privacy.gaussian import analytic_gaussian_epsilon, analytic_gaussian_sigma
from ..privacy.grid import gaussian, gaussian_grid, laplace, laplace_grid
from ..privacy.mechanisms.base import LaplaceMechanism
from ..privacy.mechanisms.clamped import clamped_release
from ..privacy.mechanisms.composed import ComposedMechanism
from ..privacy.mechanisms.counts import GeometricMechanism, RandomizedResponseMechanism
from ..privacy.mechanisms.gaussian import GaussianMechanism
from ..privacy.mechanisms.gaussian_rounds import gaussian_rounds, release_gaussian_round
from ..privacy.mechanisms.gaussian_sum import noisy_centred_count, noisy_clipped_sum
from ..privacy.mechanisms.known import KnownNoiseMechanism
from ..privacy.mechanisms.svt import GaussianSparseVector, SparseVector
from ..privacy.rng import PrivacyRNG
from ..privacy.subsampling import subsample
from ..release import ABCDPOptions, ArrayDraws, abcdp
from .entries import AuditSetup, BrokenVariant
from .floating import laplace_float_reaches
from .grid import Lattice

__all__ = [
    "build_binomial_trajectory",
    "build_clamped_mean",
    "build_clamped_sum_and_count",
    "build_composed",
    "build_dpvi_count",
    "build_dpvi_step",
    "build_dpvi_with_replacement",
    "build_embedding",
    "build_gaussian_mechanism",
    "build_gaussian_rounds",
    "build_gaussian_svt",
    "build_geometric",
    "build_grid_gaussian",
    "build_grid_laplace",
    "build_known_gaussian",
    "build_known_laplace",
    "build_laplace_mechanism",
    "build_randomized_response",
    "build_svt",
]


# ------------------------------------------------------------------------------------------------
# helpers shared by the entries
# ------------------------------------------------------------------------------------------------


def _quiet(fn: Callable[[], Any]) -> Any:
    """Run a release without a ledger, silencing the 'unaccounted release' warning (audits charge
    nothing on purpose)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return fn()


def _value(rel: Any) -> np.ndarray:
    return np.asarray(rel.value, dtype=np.float64)


def _ctx(rng: PrivacyRNG) -> ReleaseContext:
    """The (unaccounted) release context that draws a run's noise from the auditor's ``rng``."""
    return ReleaseContext(privacy_rng=rng)


def _release_of(mech: Any) -> Callable[[Any, PrivacyRNG], np.ndarray]:
    """``Mechanism.release`` (the public path: validate, charge-or-warn, draw, report)."""
    return lambda s, rng: _value(_quiet(lambda: mech.release(s, context=_ctx(rng))))


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


def build_grid_laplace(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``grid.laplace``."""
    sens = 1.0

    def of(s: float) -> Callable[[Any, PrivacyRNG], float]:
        return lambda x, rng: float(_quiet(lambda: laplace(x, s, epsilon, context=_ctx(rng))).value)

    plan = laplace_grid(sens, epsilon)
    broken = (
        _miscalibrated("half-sensitivity", of(sens / 2), "calibrated to half the sensitivity", 2 * epsilon),
        _laplace_float(sens / epsilon, _float_laplace(sens / epsilon), "x + Lap(Δ/ε) in floating point"),
    )
    return AuditSetup(of(sens), 0.0, sens, plan.epsilon, 0.0, broken, Lattice(plan.gamma))


def build_grid_gaussian(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``grid.gaussian``."""
    sens = 1.0

    def of(s: float) -> Callable[[Any, PrivacyRNG], float]:
        return lambda x, rng: float(_quiet(lambda: gaussian(x, s, epsilon, delta, context=_ctx(rng))).value)

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


def build_laplace_mechanism(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``LaplaceMechanism``."""
    mech = LaplaceMechanism(1, 1.0, epsilon)
    broken = (
        _miscalibrated("half-sensitivity", _release_of(LaplaceMechanism(1, 0.5, epsilon)),
                       "declared sensitivity half the true one", 2 * epsilon),
        _laplace_float(mech.scale, _float_g_path(mech), "G(s, u) on float uniforms"),
    )
    return AuditSetup(_release_of(mech), [0.0], [1.0], _reported_epsilon(mech), 0.0, broken,
                      Lattice(mech.grid.gamma))


def build_gaussian_mechanism(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``GaussianMechanism``."""
    d, shift = 2, [1.0 / math.sqrt(2.0)] * 2  # an L2 move of exactly the sensitivity 1
    mech = GaussianMechanism(d, 1.0, epsilon, delta)
    broken = (
        _miscalibrated("sixth-sensitivity", _release_of(GaussianMechanism(d, 1.0 / 6, epsilon, delta)),
                       "declared L2 sensitivity a sixth of the true one"),
        BrokenVariant("float-noise", _float_gaussian(mech.sigma), "s + N(0, σ²) in floating point", "grid"),
    )
    return AuditSetup(_release_of(mech), [0.0, 0.0], shift, _reported_epsilon(mech), delta, broken,
                      Lattice(mech.grid.gamma))


def build_geometric(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``GeometricMechanism``."""
    mech = GeometricMechanism(1, 2, epsilon)
    broken = (_miscalibrated("half-sensitivity", _release_of(GeometricMechanism(1, 1, epsilon)),
                             "declared sensitivity 1 for a statistic of sensitivity 2", 2 * epsilon),)
    return AuditSetup(_release_of(mech), [0.0], [2.0], _reported_epsilon(mech), 0.0, broken, Lattice(1.0))


def build_randomized_response(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``RandomizedResponseMechanism``."""
    n = 4
    mech = RandomizedResponseMechanism(n, epsilon)
    broken = (_miscalibrated("4x-epsilon", _release_of(RandomizedResponseMechanism(n, 4 * epsilon)),
                             "truth probability of the 4ε mechanism claimed as ε", 4 * epsilon),)
    span = (0.0, float(n))
    return AuditSetup(_release_of(mech), [0.0], [1.0], _reported_epsilon(mech), 0.0, broken, Lattice(1.0),
                      output_range=span, output_range_prime=span)


def build_composed(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``ComposedMechanism``."""
    def make(k: float) -> ComposedMechanism:
        parts = [LaplaceMechanism(1, 1.0 / k, epsilon / 2), GeometricMechanism(1, 2, k * epsilon / 2)]
        return ComposedMechanism(parts)

    mech = make(1.0)
    broken = (_miscalibrated("quarter-sensitivity", _release_of(make(4.0)),
                             "both parts calibrated to a quarter of their sensitivity", 4 * epsilon),)
    return AuditSetup(_release_of(mech), [0.0, 0.0], [1.0, 2.0], _reported_epsilon(mech), 0.0, broken,
                      Lattice(min(cast(Any, mech.parts[0]).grid.gamma, 1.0)))


def _records_release(mech: Any) -> Callable[[Any, PrivacyRNG], np.ndarray]:
    return lambda x, rng: _value(_quiet(lambda: mech.release_records(x, context=_ctx(rng))))


def build_clamped_mean(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``clamped_release.mean``."""
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


def build_clamped_sum_and_count(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``clamped_release.sum_and_count``."""
    def make(k: float) -> Any:
        return clamped_release("sum_and_count", -1, 1, k * epsilon, mechanism="geometric",
                               neighbouring="add-remove")

    mech = make(1.0)
    broken = (_miscalibrated("4x-epsilon", _records_release(make(4.0)),
                             "noise of the 4ε release claimed as ε", 4 * epsilon),)
    return AuditSetup(_records_release(mech), np.ones(3), np.ones(4), _reported_epsilon(mech), 0.0, broken,
                      Lattice(1.0))


def build_binomial_trajectory(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``BinomialTrajectoryMechanism``."""
    K, N = 1, 2  # small N: the bound N·log(1 + 1/M) is attained at the output N/N, probability ~0.2
    mech = BinomialTrajectoryMechanism(K, 1, N, epsilon)
    loose = BinomialTrajectoryMechanism(K, 1, N, 4 * epsilon)
    broken = (_miscalibrated("4x-epsilon", _release_of(loose), "M = N·d/(4ε): the 4ε release claimed as ε",
                             loose.epsilon_exact),)
    return AuditSetup(_release_of(mech), [0.0], [1.0], float(mech.epsilon_exact), 0.0, broken,
                      Lattice(denominator=N), output_range=(0.0, 1.0), output_range_prime=(0.0, 1.0))


def build_known_gaussian(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``KnownNoiseMechanism.gaussian``."""
    # a published σ = 4 on counts
    mech = KnownNoiseMechanism.gaussian(4.0, 1, discrete=True, sensitivity=1, delta=delta)
    broken = (_miscalibrated("8x-sensitivity", _scaled(_release_of(mech), 8.0),
                             "the count moves by 8 where sensitivity 1 was declared"),)
    return AuditSetup(_release_of(mech), [0.0], [1.0], _reported_epsilon(mech), delta, broken, Lattice(1.0))


def build_known_laplace(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``KnownNoiseMechanism.laplace``."""
    # a published b = Δ/ε on a real statistic
    mech = KnownNoiseMechanism.laplace(1.0 / epsilon, 1, sensitivity=1.0)
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


def build_svt(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``SparseVector``."""
    c, sens = 1, 1.0
    b = (c + 1) * sens / epsilon  # Park et al. 2021, Theorem 1 (one threshold draw)
    claimed = get_accountant("pure").epsilon(SparseVectorEvent(c, epsilon), 0.0)
    broken = (_miscalibrated("quarter-sensitivity", _svt_release(SparseVector, b=b / 4),
                             "b calibrated to Δρ/4", 4 * epsilon),)
    return AuditSetup(_svt_release(SparseVector, b=b), _SVT_RHO, _SVT_RHO_PRIME, claimed, 0.0, broken,
                      Lattice(1.0), output_range=(0.0, 1.0), output_range_prime=(0.0, 1.0),
                      statistic=_first_positive)


def build_gaussian_svt(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``GaussianSparseVector``."""
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


def build_embedding(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``abcdp.embedding``."""
    options = ABCDPOptions(release="embedding")
    n, n_features = 5, 50
    dist = RFFMMD(0.3, n_features, seed=1)
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
    draws = ArrayDraws(pub.uniform(size=(2, 1)), pub.uniform(size=(2, n, 1)))

    def of(eps: float) -> Callable[[Any, PrivacyRNG], np.ndarray]:
        def release(y: Any, rng: PrivacyRNG) -> np.ndarray:
            res = _quiet(lambda: abcdp(
                y, draws, dist, c=1, epsilon_total=eps, epsilon_abc=100.0, delta=delta,
                options=options, context=_ctx(rng),
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
    def release(rows: Any, rng: PrivacyRNG) -> np.ndarray:
        ctx = ReleaseContext(privacy_rng=rng)
        grads = torch.as_tensor(np.asarray(rows, dtype=np.float64))
        idx = torch.as_tensor(subsample(ctx, grads.shape[0], q, scheme))
        out = noisy_clipped_sum(ctx, grads[idx], clip=1.0, noise_multiplier=multiplier)
        return out.detach().cpu().numpy().astype(np.float64)

    return release


_DPVI_FLOAT = ("the gradient sum is plain float noise by design (gaussian_sum.py's docstring: the fit "
               "returns parameters, post-processing of the transcript)")


def build_dpvi_step(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``dpvi.step``."""
    q = 0.5
    sigma = analytic_gaussian_sigma(epsilon, delta)  # the unamplified calibration; the claim is amplified
    claimed = get_accountant("pld").epsilon(PoissonSubsampledGaussianEvent(q, sigma, 1), delta)
    data = np.zeros((3, 1))  # three records whose gradients are 0 ...
    data_prime = np.vstack([data, [[5.0]]])  # ... and one more, clipped to norm C = 1 (add-remove)
    broken = (_miscalibrated("eighth-noise", _dpvi_release(q, "poisson", sigma / 8), "noise multiplier σ/8 "
                             "(a clip norm 8x the one accounted)"),)
    return AuditSetup(_dpvi_release(q, "poisson", sigma), data, data_prime, claimed, delta, broken, None,
                      min_spacing=sigma * 2.0**-24, float_release=_DPVI_FLOAT)


def build_dpvi_with_replacement(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``dpvi.step.with_replacement``."""
    q, sigma = 0.5, 20.0  # the advanced accountant's paper convention needs σ ≈ 20 for ε ≈ 1 here
    claimed = get_accountant("advanced").epsilon(SampledWithReplacementGaussianEvent(q, sigma, 1), delta)
    data = np.vstack([[[-5.0]], np.zeros((3, 1))])  # record 0 clipped to -C ...
    data_prime = -data  # ... replaced by +C (replace-one, L2 distance 2C)
    broken = (_miscalibrated("40x-noise", _dpvi_release(q, "with-replacement", sigma / 40),
                             "noise multiplier σ/40 (the claim is loose: only a gross miscalibration "
                             "exceeds it)"),)
    return AuditSetup(_dpvi_release(q, "with-replacement", sigma), data, data_prime, claimed, delta, broken,
                      None, min_spacing=sigma * 2.0**-24, float_release=_DPVI_FLOAT)


def build_dpvi_count(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``dpvi.clip_count``."""
    sens = 0.5  # each record moves the centred count by 1/2 (add-remove)
    std = analytic_gaussian_sigma(epsilon, delta, sens)

    def of(s: float) -> Callable[[Any, PrivacyRNG], float]:
        def release(rows: Any, rng: PrivacyRNG) -> float:
            grads = torch.as_tensor(np.asarray(rows, dtype=np.float64))
            return float(noisy_centred_count(ReleaseContext(privacy_rng=rng), grads, clip=1.0, std=s))

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


def build_gaussian_rounds(*, epsilon: float, delta: float) -> AuditSetup:
    """The audit set-up of the registry entry ``gaussian_rounds``."""
    plan = gaussian_rounds(1.0, 2, 1, epsilon, delta)

    def release(values: Any, rng: PrivacyRNG) -> np.ndarray:
        out = release_gaussian_round(values, plan, ReleaseContext(privacy_rng=rng))
        return np.asarray(out, dtype=np.float64)

    claimed = get_accountant("rdp").epsilon(plan.event, delta)
    broken = (_miscalibrated("8x-sensitivity", _scaled(release, 8.0),
                             "every coordinate moves by 8Δ where Δ was declared"),)
    return AuditSetup(release, [0.0, 0.0], [1.0, 1.0], claimed, delta, broken, Lattice(plan.gamma))

