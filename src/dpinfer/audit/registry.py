"""The registry of release mechanisms that the automatic privacy audits run on.

Every mechanism that can release a confidential value has one :class:`~.entries.RegistryEntry`
here: its proof reference, how to build it at a given (ε, δ) through its *public* API
(:mod:`.setups`), and the public objects it releases through. The tests of
``tests/audits/test_mechanism_registry.py`` run every entry through the black-box checks of this
package:

(a) grid membership and reachability of its outputs (:func:`~dpinfer.audit.grid.check_grid`);
(b) a Clopper–Pearson lower bound on ε from releases on the two inputs, which must not exceed
    the claimed ε (:func:`~dpinfer.audit.statistics.audit_epsilon`; Jagielski, Ullman & Oprea
    2020; Nasr et al. 2021; Tramèr et al. 2022);
(c) every known-broken variant must be caught: by (b), by (a) (outputs off any public grid), or
    by the floating-point distinguishing test of Mironov (2012)
    (:func:`~dpinfer.audit.floating.impossible_fraction`);
(d) completeness: every :class:`~dpinfer.privacy.mechanisms.base.Mechanism` subclass defined in
    dpinfer and every function in :mod:`dpinfer.privacy` that draws release noise is one of an
    entry's ``targets`` or ``exercises`` (or listed, with the reason, in :data:`NOT_RELEASES`):
    a new mechanism without an entry fails the suite.

The audit package sits above every layer it audits (the privacy core, ``models``, ``release``,
``distances``) and imports them directly; nothing below it imports it.
"""

from __future__ import annotations

from ..models import BinomialTrajectoryMechanism
from ..privacy import grid, subsampling
from ..privacy.mechanisms import (
    BinomialTrajectoryRelease,
    ClampedRelease,
    ComposedMechanism,
    GaussianMechanism,
    GaussianSparseVector,
    GeometricMechanism,
    KnownNoiseMechanism,
    LaplaceMechanism,
    RandomizedResponseMechanism,
    SparseVector,
    clamped_release,
    gaussian_sum,
    release_embedding,
)
from ..privacy.mechanisms.gaussian_rounds import release_gaussian_round
from ..release import abcdp
from . import setups as S
from .entries import RegistryEntry

__all__ = ["NOT_RELEASES", "REGISTRY", "entry"]

REGISTRY: tuple[RegistryEntry, ...] = (
    RegistryEntry(
        "grid.laplace", (grid.laplace,),
        "Discrete Laplace on a power-of-two grid: exactly ε-DP for the integer sensitivity ⌈Δ/γ⌉ "
        "(Ghosh, Roughgarden & Sundararajan 2012; Canonne, Kamath & Steinke 2020); floating-point "
        "safety: Mironov 2012",
        S.build_grid_laplace, exercises=(grid.laplace_on_grid,),
    ),
    RegistryEntry(
        "grid.gaussian", (grid.gaussian,),
        "Discrete Gaussian on a power-of-two grid: the exact privacy curve of Canonne, Kamath & "
        "Steinke 2020, Thm 7 (one dimension, PLD accountant); σ from Balle & Wang 2018, Thm 8",
        S.build_grid_gaussian, delta=1e-5,
    ),
    RegistryEntry(
        "LaplaceMechanism", (LaplaceMechanism,),
        "Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006; Dwork & Roth 2014, Thm 3.6), "
        "released as discrete Laplace on a grid (Canonne, Kamath & Steinke 2020)",
        S.build_laplace_mechanism, exercises=(grid.laplace_on_grid,),
    ),
    RegistryEntry(
        "GaussianMechanism", (GaussianMechanism,),
        "Discrete Gaussian in d dimensions: ½(Δ/σ)²-zCDP (Canonne, Kamath & Steinke 2020, Thm 14) "
        "converted by the RDP accountant; starting σ from Balle & Wang 2018, Thm 8",
        S.build_gaussian_mechanism, delta=1e-5,
    ),
    RegistryEntry(
        "GeometricMechanism", (GeometricMechanism,),
        "Geometric mechanism (Ghosh, Roughgarden & Sundararajan 2012): ε-DP for integer "
        "sensitivity Δ and scale t >= Δ/ε; exact sampler of Canonne, Kamath & Steinke 2020",
        S.build_geometric,
    ),
    RegistryEntry(
        "RandomizedResponseMechanism", (RandomizedResponseMechanism,),
        "Randomized response (Warner 1965; Dwork & Roth 2014, §3.2): p/(1 - p) <= e^ε per record; the "
        "count of reported ones is post-processing",
        S.build_randomized_response,
    ),
    RegistryEntry(
        "ComposedMechanism", (ComposedMechanism,),
        "Sequential composition (Dwork & Roth 2014, Thm 3.16) of a Laplace and a geometric part",
        S.build_composed, exercises=(grid.laplace_on_grid,),
    ),
    RegistryEntry(
        "clamped_release.mean", (clamped_release, ClampedRelease),
        "Clamped mean, sensitivity (hi - lo)/n under replace-one (Dwork & Roth 2014, §3.3), Laplace "
        "mechanism on a grid",
        S.build_clamped_mean, exercises=(grid.laplace_on_grid,),
    ),
    RegistryEntry(
        "clamped_release.sum_and_count", (clamped_release,),
        "Clamped sum (sensitivity max(|lo|, |hi|)) and count (sensitivity 1) under add-remove, "
        "geometric noise, ε split between them (Dwork & Roth 2014, Thm 3.16)",
        S.build_clamped_sum_and_count,
    ),
    RegistryEntry(
        "BinomialTrajectoryMechanism", (BinomialTrajectoryMechanism,),
        "Binomial release of Xiong et al. 2025, Prop. 4 (App. B): d·N·log(1 + 1/M)-DP with M = N·d/ε",
        S.build_binomial_trajectory, exercises=(BinomialTrajectoryRelease,),
    ),
    RegistryEntry(
        "KnownNoiseMechanism.gaussian", (KnownNoiseMechanism,),
        "Published discrete Gaussian noise on counts: the exact curve of Canonne, Kamath & Steinke 2020, "
        "Thm 7, for the declared sensitivity",
        S.build_known_gaussian, delta=1e-5,
    ),
    RegistryEntry(
        "KnownNoiseMechanism.laplace", (KnownNoiseMechanism,),
        "Published Laplace scale on a real statistic, released as discrete Laplace on a grid: ε = Δ/b "
        "(Canonne, Kamath & Steinke 2020)",
        S.build_known_laplace,
    ),
    RegistryEntry(
        "SparseVector", (SparseVector,),
        "Sparse vector technique of ABCDP: Park, Vinaroz & Jitkrittum 2021, Theorem 1 (threshold "
        "Lap(b), queries Lap(2b), b = (c+1)Δρ/ε); Dwork & Roth 2014, §3.6",
        S.build_svt, fast_runs=1500,
    ),
    RegistryEntry(
        "GaussianSparseVector", (GaussianSparseVector,),
        "Gaussian sparse vector: Rényi DP of Zhu & Wang 2020, Theorem 8 (dpinfer.privacy.gaussian_svt, "
        "eq. (2)), converted to (ε, δ) by the RDP accountant",
        S.build_gaussian_svt, delta=1e-5,
    ),
    RegistryEntry(
        "abcdp.embedding", (abcdp,),
        "Gaussian mechanism on the RFF mean embedding, L2 sensitivity 2/N (||φ(x)|| = 1), analytic "
        "calibration (Balle & Wang 2018, Thm 8), released as a discrete Gaussian on a grid (Canonne, "
        "Kamath & Steinke 2020; privacy/mechanisms/embedding.py)",
        S.build_embedding, delta=1e-5, fast_runs=400, full_runs=4000,
        exercises=(release_embedding,),
    ),
    RegistryEntry(
        "dpvi.step", (gaussian_sum.noisy_clipped_sum, subsampling.subsample),
        "Poisson-subsampled Gaussian sum query (Abadi et al. 2016, Alg. 1; Jälkö, Dikmen & Honkela "
        "2017, Alg. 1), one step under the PLD accountant (Mironov, Talwar & Zhang 2019)",
        S.build_dpvi_step, delta=1e-5,
        exercises=(
            gaussian_sum.add_gaussian_noise,
            subsampling.poisson_subsample,
            subsampling.bernoulli_mask,
        ),
    ),
    RegistryEntry(
        "dpvi.step.with_replacement", (gaussian_sum.noisy_clipped_sum,),
        "Gaussian sum query on a batch drawn with replacement (Jälkö, Dikmen & Honkela 2017, Alg. 1), "
        "under the advanced accountant's paper convention (Dwork, Rothblum & Vadhan 2010)",
        S.build_dpvi_with_replacement, delta=1e-5,
        exercises=(subsampling.with_replacement_subsample,),
    ),
    RegistryEntry(
        "dpvi.clip_count", (gaussian_sum.noisy_centred_count,),
        "Private unclipped count of adaptive clipping (Andrew, Thakkar, McMahan & Ramaswamy 2021, "
        "Alg. 1): a Gaussian mechanism of sensitivity 1/2 (Balle & Wang 2018, Thm 8)",
        S.build_dpvi_count, delta=1e-5,
    ),
    RegistryEntry(
        "gaussian_rounds", (release_gaussian_round,),
        "One round of the private SMC-ABC's Gaussian release: discrete Gaussian on a grid, "
        "½(L/σ)²-zCDP (Canonne, Kamath & Steinke 2020, Thm 14), RDP accountant",
        S.build_gaussian_rounds, delta=1e-5,
    ),
)

#: Functions in dpinfer.privacy that call a sampler but release nothing (the completeness test
#: accepts them with this reason).
NOT_RELEASES: dict[str, str] = {
    "dpinfer.privacy.mechanisms.base:Mechanism.simulate_release":
        "inference-time simulation from a public seed",
    "dpinfer.privacy.mechanisms.base:Mechanism._prepare_release":
        "the default draw of a user mechanism: refused, or a float "
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
