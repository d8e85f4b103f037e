"""Minibatch selection of subsampled mechanisms (DP-SGD, DPVI) from the privacy RNG.

Amplification by subsampling — the reason a DP-SGD step at sampling rate q costs far less than
a step on the whole data set — holds only if nobody can tell which records were in which batch.
The batch is therefore secret randomness: it is drawn here, from the
:class:`~dpinfer.privacy.rng.PrivacyRNG` of a :class:`~dpinfer.privacy.context.ReleaseContext`
(the OS CSPRNG), never from a user's seed, and nothing that could reproduce it is stored.

Two schemes:

* ``"poisson"`` — every one of the n records joins the batch independently with probability q,
  so the batch size is Binomial(n, q) and may be 0. This is the scheme the PLD and RDP
  accountants analyse for :class:`~dpinfer.privacy.PoissonSubsampledGaussianEvent` (Abadi et al.
  2016, "Deep learning with differential privacy", §3.1; Mironov, Talwar & Zhang 2019,
  "Rényi differential privacy of the sampled Gaussian mechanism", Definition 3).
* ``"with-replacement"`` — B = ⌊q·n⌋ indices drawn uniformly from {0, ..., n-1} with replacement,
  the batches of the DPVI authors' code (Jälkö, Dikmen & Honkela 2017, Algorithm 1, drawn there as
  ``np.random.choice(range(N), B)``); recorded as a
  :class:`~dpinfer.privacy.SampledWithReplacementGaussianEvent`.

Exactness
---------
A float ``q`` is a dyadic rational m/2^k. Record i joins a Poisson batch when a uniform k-bit
integer U is below m: the first 64 bits of U are one CSPRNG word w, compared with
⌊q·2⁶⁴⌋; only when w equals it (probability 2⁻⁶⁴) are the remaining k - 64 bits drawn and
compared with the rest of m. Every record is included with probability exactly q (every
q >= 2⁻¹² has k <= 64, so a single word decides). Uniform indices come from
:func:`dpinfer.privacy.discrete.uniform_below` (exact integer rejection). No floating-point
operation touches the draw.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidPrivacyParameterError
from .context import ReleaseContext
from .discrete import uniform_below
from .rng import PrivacyRNG

#: The minibatch schemes of :func:`subsample`.
SCHEMES = ("poisson", "with-replacement")


def _check(n: int, q: float) -> tuple[int, float]:
    """``n`` and ``q`` validated (an integer n >= 0, a float q in [0, 1])."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or int(n) < 0:
        raise InvalidPrivacyParameterError(f"the number of records must be an integer >= 0, got {n!r}.")
    if isinstance(q, bool) or not isinstance(q, (int, float, np.integer, np.floating)):
        raise InvalidPrivacyParameterError(f"the sampling rate must be a number in [0, 1], got {q!r}.")
    qf = float(q)
    if not (math.isfinite(qf) and 0.0 <= qf <= 1.0):
        raise InvalidPrivacyParameterError(f"the sampling rate must lie in [0, 1], got {q!r}.")
    return int(n), qf


def _check_rng(rng: PrivacyRNG) -> None:
    if not isinstance(rng, PrivacyRNG):
        raise TypeError(
            f"minibatches are secret: draw them from a PrivacyRNG (via a ReleaseContext), got "
            f"{type(rng).__name__}."
        )


def bernoulli_mask(n: int, q: float, rng: PrivacyRNG) -> np.ndarray:
    """``n`` independent Bernoulli(q) inclusions (booleans), exact for the float ``q``.

    One 64-bit word per record is compared with ⌊q·2⁶⁴⌋ (module docstring); the rare ties are
    resolved with the remaining bits of q, so P(True) = q exactly.

    Raises
    ------
    InvalidPrivacyParameterError
        ``n`` is not an integer >= 0 or ``q`` is not in [0, 1].
    """
    n, q = _check(n, q)
    _check_rng(rng)
    words = np.asarray(rng.random_uint64(n), dtype=np.uint64).reshape(n)
    if q >= 1.0:
        return np.ones(n, dtype=bool)
    num, den = q.as_integer_ratio()  # den = 2**k
    k = den.bit_length() - 1
    if k <= 64:
        return words < np.uint64(num << (64 - k))
    top, low_bits = num >> (k - 64), k - 64
    rest = num & ((1 << low_bits) - 1)
    out = words < np.uint64(top)
    for i in np.flatnonzero(words == np.uint64(top)):  # probability 2**-64 per record
        out[i] = rng.randbits(low_bits) < rest
    return out


def poisson_subsample(n: int, q: float, rng: PrivacyRNG) -> np.ndarray:
    """The indices (``int64``, increasing) of a Poisson(q) batch of ``n`` records: each record
    independently with probability q (:func:`bernoulli_mask`); the size is Binomial(n, q)."""
    return np.flatnonzero(bernoulli_mask(n, q, rng)).astype(np.int64)


def with_replacement_subsample(n: int, q: float, rng: PrivacyRNG) -> np.ndarray:
    """⌊q·n⌋ indices (``int64``) drawn uniformly from {0, ..., n-1} with replacement (the DPVI
    authors' batches), each by exact integer rejection
    (:func:`~dpinfer.privacy.discrete.uniform_below`)."""
    n, q = _check(n, q)
    _check_rng(rng)
    size = int(q * n)
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    return uniform_below(n, size, rng).astype(np.int64)


def subsample(context: ReleaseContext, n: int, q: float, scheme: str = "poisson") -> np.ndarray:
    """The indices of one secret minibatch, drawn with ``context``'s PrivacyRNG.

    For use *inside* a release that the caller has already charged (e.g. the T steps of a DPVI
    fit, charged once up front with :meth:`ReleaseContext.release`): the draw runs through
    :meth:`ReleaseContext.draw`.

    Parameters
    ----------
    context
        The :class:`~dpinfer.privacy.context.ReleaseContext` of the release.
    n, q
        The number of records and the sampling rate q.
    scheme
        ``"poisson"`` (:func:`poisson_subsample`) or ``"with-replacement"``
        (:func:`with_replacement_subsample`).

    Raises
    ------
    InvalidPrivacyParameterError
        An unknown scheme, or ``n``/``q`` out of range (nothing is drawn).
    """
    if not isinstance(context, ReleaseContext):
        raise TypeError(f"subsample needs a ReleaseContext, got {type(context).__name__}.")
    if scheme not in SCHEMES:
        raise InvalidPrivacyParameterError(f"sampling must be one of {SCHEMES}, got {scheme!r}.")
    n, q = _check(n, q)
    draw = poisson_subsample if scheme == "poisson" else with_replacement_subsample
    return context.draw(lambda rng: draw(n, q, rng))


__all__ = ["SCHEMES", "bernoulli_mask", "poisson_subsample", "subsample", "with_replacement_subsample"]
