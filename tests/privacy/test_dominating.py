"""The dominating analyses of privacy.dominating against exact or independent references, each
with a known-broken variant that the check catches."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import NeighboringRelation
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy import integrate, stats

from dpinfer.privacy import dominating as dm
from dpinfer.privacy.accountants import PLDAccountant, RDPAccountant, get_accountant
from dpinfer.privacy.events import (
    DiscreteGaussianEvent,
    GaussianEvent,
    GaussianSparseVectorEvent,
    PoissonSubsampledGaussianEvent,
    SampledWithReplacementGaussianEvent,
)


def _pair_moment_quad(q: float, s: float, a: float) -> float:
    """ln E_Q[(P/Q)^α] of the replace-one pair by scipy's adaptive quadrature (independent)."""
    def f(x: float) -> float:
        common = math.log1p(-q) + stats.norm.logpdf(x, 0, s)
        lp = np.logaddexp(common, math.log(q) + stats.norm.logpdf(x, -1, s))
        lq = np.logaddexp(common, math.log(q) + stats.norm.logpdf(x, 1, s))
        return float(np.exp(a * lp + (1 - a) * lq))
    pts = sorted({-a, -1.0, 0.0, 1.0})
    val, _ = integrate.quad(f, -a - 40 * s, 40 * s, points=pts, limit=1000, epsabs=0, epsrel=1e-10)
    return math.log(val)


@pytest.mark.parametrize(
    ("q", "s", "a"), [(0.01, 1.0, 2.0), (0.05, 2.0, 8.0), (0.1, 0.8, 5.5), (0.3, 1.5, 20.0)]
)
def test_replace_one_moment_bounds_the_independent_quadrature_within_half_a_percent(q, s, a):
    bound = dm.replace_one_pair_log_moment(q, s, a)
    ref = _pair_moment_quad(q, s, a)
    assert bound >= ref
    assert bound - ref <= 5e-3 * ref + 1e-9  # in ln E: relative slack on the Rényi divergence


def test_replace_one_curve_is_above_the_pld_implied_renyi_and_add_remove_is_caught():
    """dp-accounting's *optimistic* PLD of the replace-one pair under-estimates its Rényi
    divergence (losses rounded down, tails dropped): a valid curve must lie above it. The
    add-remove curve (a replace-one guarantee that forgot the replacement) lies below: caught."""
    q, s = 0.05, 1.0
    orders = np.array([2.0, 4.0, 8.0, 16.0])
    opt = pld_lib.from_gaussian_mechanism(
        standard_deviation=s, sampling_prob=q, neighboring_relation=NeighboringRelation.REPLACE_ONE,
        pessimistic_estimate=False, value_discretization_interval=1e-4,
    )
    pmf = opt._pmf_remove.to_dense_pmf()  # noqa: SLF001 - the losses and their P-masses
    losses = (pmf._lower_loss + np.arange(pmf._probs.size)) * pmf._discretization  # noqa: SLF001
    probs = pmf._probs  # noqa: SLF001
    implied = np.array([np.log(np.sum(probs * np.exp((a - 1) * losses))) / (a - 1) for a in orders])
    curve = dm.replace_one_subsampled_gaussian_rdp(q, s, 1, orders)
    assert np.all(curve >= implied)
    assert np.all(curve[:2] <= implied[:2] * 1.02)  # at high orders the optimistic PLD's dropped
    # tails dominate: there the independent quadrature is the reference (test above)
    acc = RDPAccountant()
    add_remove = np.array(acc.leaf_curve(PoissonSubsampledGaussianEvent(q, s, 1, "add-remove"), orders))
    assert np.all(add_remove[:3] < implied[:3])  # the broken variant is caught


def test_replace_one_epsilon_slack_against_the_tight_pld():
    ev = PoissonSubsampledGaussianEvent(0.01, 1.0, 1000, "replace-one")
    tight = get_accountant("pld").epsilon(ev, 1e-5)
    rdp = get_accountant("rdp").epsilon(ev, 1e-5)
    assert tight <= rdp <= 1.10 * tight  # measured 9.4%: mostly the RDP -> (ε, δ) conversion


def test_dominating_pld_from_a_renyi_curve_reproduces_the_conversion_and_is_a_pair():
    """For a Gaussian curve α/(2z²): the PLD's δ(ε) is never below the exact Gaussian's (it
    dominates) and its ε equals the Rényi conversion's to 1e-3; a PLD built from an invalid
    (halved) curve falls below the exact Gaussian: caught."""
    z = 2.0
    pld = dm.pld_from_rdp(lambda o: o / (2 * z * z), value_discretization_interval=1e-4)
    exact = pld_lib.from_gaussian_mechanism(standard_deviation=z, value_discretization_interval=1e-4)
    for eps in (-1.0, 0.0, 0.5, 1.0, 2.0, 4.0):
        assert pld.get_delta_for_epsilon(eps) >= exact.get_delta_for_epsilon(eps) * (1 - 1e-9)
    rdp = get_accountant("rdp").epsilon(GaussianEvent(z), 1e-6)
    assert pld.get_epsilon_for_delta(1e-6) == pytest.approx(rdp, rel=1e-3)
    broken = dm.pld_from_rdp(lambda o: o / (4 * z * z), value_discretization_interval=1e-4)
    assert broken.get_delta_for_epsilon(1.0) < exact.get_delta_for_epsilon(1.0)
    # a valid pair: total mass 1, H_γ >= (1 - γ)+ at every γ
    for eps in (-2.0, -0.5, 0.0):
        assert pld.get_delta_for_epsilon(eps) >= -math.expm1(eps) - 1e-9


def test_multivariate_discrete_gaussian_under_pld_within_its_stated_slack():
    """The GLM's release: the dominating PLD's ε is within 10% of the continuous Gaussian's exact ε
    at the same σ/Δ (the discrete Gaussian at σ >> 1 grid unit is within 1e-3 of it) and equals
    the RDP accountant's to 0.1%."""
    ev = DiscreteGaussianEvent(sigma=400.0, sensitivity=100.0, dimension=12)
    pld_eps = get_accountant("pld").epsilon(ev, 1e-6)
    rdp_eps = get_accountant("rdp").epsilon(ev, 1e-6)
    continuous = get_accountant("pld").epsilon(GaussianEvent(4.0), 1e-6)
    assert continuous < pld_eps <= 1.10 * continuous
    assert pld_eps == pytest.approx(rdp_eps, rel=1e-3)


def test_gaussian_sparse_vector_pld_equals_its_renyi_conversion():
    ev = GaussianSparseVectorEvent(3, 4.0, 8.0, 500)
    rdp = get_accountant("rdp").epsilon(ev, 1e-6)
    assert get_accountant("pld").epsilon(ev, 1e-6) == pytest.approx(rdp, rel=2e-3)


def test_with_replacement_multiplicity_dominates_the_binomial():
    q = 0.05
    weights, tail = dm.with_replacement_multiplicity(q, steps=10)
    surv = np.concatenate([[1.0], 1 - np.cumsum(weights)])  # P(K' >= k)
    for n in (20, 200, 2000):  # B = qN draws from N records: K ~ Binomial(B, 1/N)
        b = int(q * n)
        binom = stats.binom.sf(np.arange(surv.size) - 1, b, 1 / n)
        assert np.all(surv >= binom - 1e-15)
    assert 10 * tail <= 1e-13
    # the PLD bound is never below the tight Poisson analysis at the same rate (sanity)
    wr = SampledWithReplacementGaussianEvent(q, 2.0, 10)
    poisson = PoissonSubsampledGaussianEvent(q, 2.0, 10, "replace-one")
    assert PLDAccountant().epsilon(wr, 1e-6) > PLDAccountant().epsilon(poisson, 1e-6)
