"""A floating-point reachability attack on released vectors (Mironov 2012), for tests and audits.

An adversary who knows the mechanism, the candidate confidential values μ_b (neighbouring data
sets) and the released doubles r asks, for each candidate, whether r can be produced at all:

* ``float_consistent(r, mu, scale)``: "r = fl(μ + n)" for some double n in every coordinate, the
  support of the release ``μ + float_noise``; with ``scale``, n must moreover be ``fl(scale·z)``
  for a double z (noise drawn as a standard normal times σ, as ``PrivacyRNG.normal`` does). The
  set of reals that round to r_j is the interval between the midpoints to r_j's neighbours; a
  candidate is excluded as soon as one coordinate's interval, shifted by -μ_j, contains no
  admissible double. The test is exact (rational arithmetic) and permissive (closed intervals: a
  tie never excludes; more than a few doubles in the interval count as consistent), so it never
  excludes the candidate that produced a float release.
* ``grid_consistent(r, gamma)``: r ∈ γ·Z^D, the support of the grid release γ·(k + Z) whatever
  the data (k, Z integers).

A release *identifies* the data set when exactly one candidate is consistent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np


def _rounds_to(r: float) -> tuple[Fraction, Fraction]:
    """The closed interval of reals that round (to nearest) to the double r."""
    fr = Fraction(r)
    lo = (fr + Fraction(math.nextafter(r, -math.inf))) / 2
    hi = (fr + Fraction(math.nextafter(r, math.inf))) / 2
    return lo, hi


def _is_product(n: float, scale: float) -> bool:
    """Whether n = fl(scale·z) for some double z (z near n/scale: fl is monotone in z)."""
    z = float(Fraction(n) / Fraction(scale))
    return any(scale * c == n for c in (math.nextafter(z, -math.inf), z, math.nextafter(z, math.inf)))


def _has_double(lo: Fraction, hi: Fraction, scale: float | None, cap: int = 8) -> bool:
    """Whether some admissible double lies in [lo, hi] (more than ``cap`` doubles: assumed yes)."""
    c = float(lo)  # nearest double to lo
    if Fraction(c) < lo:
        c = math.nextafter(c, math.inf)
    for _ in range(cap):
        if Fraction(c) > hi:
            return False
        if scale is None or _is_product(c, scale):
            return True
        c = math.nextafter(c, math.inf)
    return True


def float_consistent(released: Sequence[float], mu: Sequence[float], scale: float | None = None) -> bool:
    """Whether ``released = fl(mu + n)`` for some double vector n (``n = fl(scale·z)`` when
    ``scale`` is given); see the module docstring."""
    rel, mus = np.asarray(released, dtype=float).tolist(), np.asarray(mu, dtype=float).tolist()
    for r, m in zip(rel, mus, strict=True):
        lo, hi = _rounds_to(r)
        fm = Fraction(m)
        if not _has_double(lo - fm, hi - fm, scale):
            return False
    return True


def grid_consistent(released: Sequence[float], gamma: float) -> bool:
    """Whether every released value is an exact integer multiple of γ (a power of two)."""
    v = np.asarray(released, dtype=float) / gamma  # exact: γ is a power of two
    return bool(np.all(np.isfinite(v)) and np.all(v == np.floor(v)))


def identifying(consistent: Sequence[bool], true_index: int) -> bool:
    """True when exactly one candidate, the true one, is consistent with the release."""
    return bool(consistent[true_index]) and sum(bool(c) for c in consistent) == 1
