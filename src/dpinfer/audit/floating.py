"""The floating-point distinguishing test of Mironov (2012) for the library's float Laplace sampler.

For a release ``y = fl(x + e)`` with ``e`` the output of a floating-point noise sampler, an
output y of D is *impossible* from D' when no output e' of the sampler gives ``fl(x' + e') = y``.
Every such output identifies D with certainty (an infinite privacy loss).
:func:`laplace_float_reaches` decides this exactly for the inverse-CDF Laplace sampler of
:meth:`dpinfer.privacy.rng.PrivacyRNG.laplace` by a binary search over its 2⁵² uniforms;
:func:`impossible_fraction` is the fraction of a release's outputs from D that are impossible
from D' (Mironov 2012, "On significance of the least significant bits for differential privacy").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import InvalidPrivacyParameterError
from .grid import flatten_outputs

__all__ = ["impossible_fraction", "laplace_float_reaches"]

_TWO_M52 = 2.0**-52
_N_UNIFORMS = 2**52


def _laplace_sampler(k: np.ndarray, scale: float) -> np.ndarray:
    """The output of :meth:`PrivacyRNG.laplace` for the uniform of index ``k`` (exactly the same
    floating-point operations: ``u = (k + ½)·2⁻⁵²``, ``−b·sgn(u − ½)·log1p(−2|u − ½|)``)."""
    u = (k.astype(np.float64) + 0.5) * _TWO_M52
    v = u - 0.5
    return -np.asarray(scale, dtype=np.float64) * np.sign(v) * np.log1p(-2.0 * np.abs(v))


def laplace_float_reaches(scale: float) -> Callable[[np.ndarray, float], np.ndarray]:
    """``reaches(y, x)``: whether ``y == fl(x + e)`` for some output ``e`` of
    :meth:`PrivacyRNG.laplace` at ``scale``.

    The sampler is a non-decreasing function of its uniform's index k < 2⁵², and so is
    ``fl(x + e(k))``; a binary search finds the first k whose output is >= y, and the k within
    8 of it (a margin for a last-bit non-monotonicity of ``log1p``) are compared exactly. This is
    the test of Mironov (2012) for the library's own float sampler.
    """
    b = float(scale)

    def reaches(y: np.ndarray, x: float) -> np.ndarray:
        target = np.asarray(y, dtype=np.float64).reshape(-1)
        lo = np.zeros(target.shape, dtype=np.int64)
        hi = np.full(target.shape, _N_UNIFORMS, dtype=np.int64)
        while np.any(lo < hi):  # first k with fl(x + e(k)) >= y (hi = 2^52 if none)
            mid = (lo + hi) // 2
            go_right = (x + _laplace_sampler(np.minimum(mid, _N_UNIFORMS - 1), b)) < target
            active = lo < hi
            lo = np.where(active & go_right, mid + 1, lo)
            hi = np.where(active & ~go_right, mid, hi)
        found = np.zeros(target.shape, dtype=bool)
        for off in range(-8, 9):
            k = lo + off
            ok = (k >= 0) & (k < _N_UNIFORMS)
            kk = np.clip(k, 0, _N_UNIFORMS - 1)
            found |= ok & ((x + _laplace_sampler(kk, b)) == target)
        return found.reshape(np.shape(y))

    return reaches


def impossible_fraction(
    outputs: Sequence[Any], data_prime: float, reaches: Callable[[np.ndarray, float], np.ndarray]
) -> float:
    """The fraction of ``outputs`` (releases from D) that the release cannot produce from D'.

    ``reaches(y, x')`` decides whether ``y`` is a possible output from the input ``x'``
    (e.g. :func:`laplace_float_reaches`). Each impossible output identifies D with certainty: a
    mechanism with a nonzero fraction is not (ε, δ)-DP for any ε when δ is below that fraction
    (Mironov 2012).
    """
    y = flatten_outputs(outputs)
    if y.size == 0:
        raise InvalidPrivacyParameterError("impossible_fraction needs at least one output.")
    return float(np.mean(~np.asarray(reaches(y, float(data_prime)), dtype=bool)))
