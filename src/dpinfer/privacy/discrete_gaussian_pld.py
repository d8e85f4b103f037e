"""The discrete Gaussian's privacy-loss distribution with its buckets computed in numpy.

dp-accounting's ``from_discrete_gaussian_mechanism`` (its defaults: no subsampling, pessimistic
"privacy buckets", truncation at T = ⌈11.6σ⌉, noise mass outside below 10⁻³⁰) puts the mass
``P(X = x)`` of every integer x of the noise's support, about 23σ of them (95 000 at σ = 4096
grid units, the Gaussian grid's cap), into the bucket ``⌈ℓ(x)/h⌉`` of its privacy loss
``ℓ(x) = Δ(−Δ/2 − x)/σ²`` (removal; addition is the same by symmetry), by a Python loop with a
method call per x. :func:`discrete_gaussian_pld` fills the same buckets in numpy:

1. the masses are dp-accounting's own (``mu_upper_cdf`` differences on the same points) and the
   losses are computed with dp-accounting's operations in its order, so every bucket key is the
   same double rounded up;
2. ℓ decreases in x, so each bucket holds a run of consecutive x; dp-accounting adds a bucket's
   masses one by one in increasing x, starting from 0, and so does :func:`_run_sums` (the k-th
   masses of all runs are added in one vectorised step), so every bucket's total is the same
   double;
3. the buckets go to dp-accounting's ``create_pmf`` in dp-accounting's order (first seen first).

The result is the same PLD to the bit: 90 cases against dp-accounting, σ from 0.6 to 2000, Δ from
1 to 256 and loss steps from 10⁻⁴ to 10⁻².
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..deferred import DeferredModule

if TYPE_CHECKING:
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld import privacy_loss_distribution as pld_lib
    from dp_accounting.pld import privacy_loss_mechanism as plm
else:  # imported at the first accounting, not at start-up (see dpinfer.deferred)
    pld_pmf = DeferredModule("dp_accounting.pld.pld_pmf")
    pld_lib = DeferredModule("dp_accounting.pld.privacy_loss_distribution")
    plm = DeferredModule("dp_accounting.pld.privacy_loss_mechanism")

__all__ = ["discrete_gaussian_pld"]


def _run_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Sum of each run ``values[starts[i]:starts[i+1]]``, added one by one from the left,
    starting from 0 (the order of a Python loop ``total += v``; not numpy's pairwise sum)."""
    ends = np.append(starts[1:], values.size)
    lengths = ends - starts
    out = np.zeros(starts.size)
    for k in range(int(lengths.max(initial=0))):
        live = lengths > k
        out[live] = out[live] + values[starts[live] + k]
    return out


def discrete_gaussian_pld(
    *, sigma: float, sensitivity: int = 1, value_discretization_interval: float = 1e-4
) -> pld_lib.PrivacyLossDistribution:
    """dp-accounting's ``from_discrete_gaussian_mechanism(sigma, sensitivity=...,
    value_discretization_interval=...)`` with its other defaults: the same PLD, its buckets filled
    in numpy (module doc).

    Parameters
    ----------
    sigma
        The discrete Gaussian's parameter σ (grid units).
    sensitivity
        The integer sensitivity Δ (grid units).
    value_discretization_interval
        The loss grid's step h.
    """
    h = value_discretization_interval
    loss = plm.DiscreteGaussianPrivacyLoss(
        sigma, sensitivity=sensitivity, sampling_prob=1.0, adjacency_type=plm.AdjacencyType.REMOVE
    )
    tail = loss.privacy_loss_tail()
    T, s = loss._truncation_bound, loss.sensitivity  # noqa: SLF001 - dp-accounting's own truncation
    sigma2 = loss._sigma**2  # noqa: SLF001
    lower_x, upper_x = tail.lower_x_truncation, tail.upper_x_truncation
    # dp-accounting's tail holds only the infinite loss, and the finite losses lie on [-T, T - s]
    unexpected = set(tail.tail_probability_mass_function) - {math.inf} or lower_x < -T or upper_x > T - s
    if unexpected:  # pragma: no cover
        raise ValueError("unexpected tail of dp-accounting's discrete Gaussian privacy loss.")
    infinity_mass = tail.tail_probability_mass_function.get(math.inf, 0)
    xs = np.arange(math.ceil(lower_x) - 1, math.floor(upper_x) + 1, dtype=np.int64)
    cdf = loss.mu_upper_cdf(xs)
    mass = cdf[1:] - cdf[:-1]
    x = xs[1:]
    keys = np.ceil((s * (-0.5 * s - x) / sigma2) / h).astype(np.int64)  # non-increasing in x
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    totals = _run_sums(mass, starts)
    buckets = {int(k): float(t) for k, t in zip(keys[starts].tolist(), totals.tolist(), strict=True)}
    pmf = pld_pmf.create_pmf(buckets, h, infinity_mass, pessimistic_estimate=True)
    return pld_lib.PrivacyLossDistribution(pmf)
