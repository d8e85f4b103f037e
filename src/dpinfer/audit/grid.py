"""Grid membership and reachability of a release's outputs (the floating-point-safety check).

A floating-point-safe release (Mironov 2012, "On significance of the least significant bits for
differential privacy"; Canonne, Kamath & Steinke 2020) outputs only points ``k·γ`` of a grid γ
that depends on public quantities only, with ``|k| < 2⁵³`` so that ``k·γ`` is an exact double,
and the set of outputs reachable from D equals that from D'. :func:`check_grid` counts outputs
off the declared grid, outputs outside the declared output range, and, when no grid is declared,
infers the coarsest power-of-two grid of the outputs of D and of D' separately
(:func:`power_of_two_spacing`): both must be the same and no finer than a public bound (a float
release lands on a grid of about one ulp of the value, so it fails this by many orders of
magnitude).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidPrivacyParameterError

__all__ = ["GridCheck", "Lattice", "check_grid", "flatten_outputs", "power_of_two_spacing"]


@dataclass(frozen=True)
class Lattice:
    """A release grid: ``{k·step}`` with ``step`` a power of two, or ``{k/denominator}``.

    ``denominator`` describes releases computed as ``count / N`` (the binomial release): the
    output is on the grid when ``round(y·N)/N == y`` exactly.
    """

    step: float = 1.0
    denominator: int | None = None

    def __post_init__(self) -> None:
        if self.denominator is None:
            m, _ = math.frexp(self.step)
            if not (math.isfinite(self.step) and self.step > 0 and m == 0.5):
                raise InvalidPrivacyParameterError(f"a grid step must be a power of two, got {self.step!r}.")
        elif int(self.denominator) < 1:
            raise InvalidPrivacyParameterError(f"a grid denominator must be >= 1, got {self.denominator!r}.")

    def units(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(integer units, on-grid mask) of ``values``: exact membership, ``abs(units) < 2**53``."""
        v = np.asarray(values, dtype=np.float64)
        if self.denominator is None:
            u = v / self.step  # exact: division by a power of two
            k = np.rint(u)
            on = (u == k) & (np.abs(k) < 2.0**53)
        else:
            k = np.rint(v * self.denominator)
            on = (k / self.denominator == v) & (np.abs(k) < 2.0**53)
        return k, on & np.isfinite(v)


def power_of_two_spacing(values: Any) -> float:
    """The largest power of two γ with every value an integer multiple of γ (``inf`` if all are 0).

    For a release on a grid γ with integer noise of scale >> 1 unit this is γ itself (with
    overwhelming probability over a few hundred outputs); for ``x + float noise`` it is about the
    ulp of the smallest output, i.e. data-dependent and ~2⁻⁵² of the values.
    """
    v = np.abs(np.asarray(values, dtype=np.float64).reshape(-1))
    v = v[v != 0]
    if v.size == 0:
        return math.inf
    if not np.all(np.isfinite(v)):
        return 0.0
    mant, exp = np.frexp(v)  # v = mant·2^exp, mant in [0.5, 1): 53-bit integer m = mant·2^53
    m = (mant * 2.0**53).astype(np.int64)
    trailing = np.zeros(m.shape, dtype=np.int64)
    rest = m.copy()
    for _ in range(53):  # count trailing zero bits of the 53-bit significand
        even = (rest & 1) == 0
        if not even.any():
            break
        trailing += even
        rest = np.where(even, rest >> 1, rest)
    lowest = exp.astype(np.int64) - 53 + trailing  # v = odd·2^lowest
    return math.ldexp(1.0, int(lowest.min()))


@dataclass(frozen=True)
class GridCheck:
    """The outcome of :func:`check_grid`.

    Attributes
    ----------
    n_outputs
        Outputs checked (D and D' together, every coordinate).
    off_grid
        Outputs not exactly on the grid (declared, or the inferred one of the other input).
    outside_range
        Outputs outside the declared output range of *either* input (reachable from one input
        only).
    spacing, spacing_prime
        The inferred power-of-two spacing of the outputs of D and of D' (:func:`power_of_two_spacing`).
    min_spacing
        The public lower bound the inferred spacing must reach (0: not checked).
    declared
        True when a lattice was declared (membership was checked against it; the inferred spacings
        are then information only).
    """

    n_outputs: int
    off_grid: int
    outside_range: int
    spacing: float
    spacing_prime: float
    min_spacing: float
    declared: bool

    @property
    def same_grid(self) -> bool:
        """The inferred grids of D and D' agree (a grid chosen from public quantities only)."""
        a, b = self.spacing, self.spacing_prime
        return a == b or math.isinf(a) or math.isinf(b)

    @property
    def ok(self) -> bool:
        """On the declared grid (or on one inferred grid for D and D', no finer than ``min_spacing``)
        and inside both output ranges."""
        if self.off_grid or self.outside_range:
            return False
        return self.declared or (self.same_grid and min(self.spacing, self.spacing_prime) >= self.min_spacing)


def flatten_outputs(outputs: Sequence[Any]) -> np.ndarray:
    """Every coordinate of every output, as one float64 vector."""
    parts = [np.asarray(o, dtype=np.float64).reshape(-1) for o in outputs]
    return np.concatenate(parts) if parts else np.zeros(0)


def check_grid(
    outputs: Sequence[Any],
    outputs_prime: Sequence[Any],
    *,
    lattice: Lattice | None = None,
    min_spacing: float = 0.0,
    output_range: tuple[float, float] | None = None,
    output_range_prime: tuple[float, float] | None = None,
) -> GridCheck:
    """Check that the outputs of D and D' lie on one data-independent grid (module docstring).

    Parameters
    ----------
    outputs, outputs_prime
        Releases from D and from D' (arrays of any shape; every coordinate is checked).
    lattice
        The declared grid, or None to check the inferred power-of-two grids instead (the same for
        D and D', at least ``min_spacing``).
    min_spacing
        A public lower bound on the grid step (e.g. the noise scale times 2⁻²⁴).
    output_range, output_range_prime
        The declared output range from D and from D' (None: unbounded). Every output of either
        input must lie in both ranges: an output in one only is reachable from one input only.
    """
    y, y_prime = flatten_outputs(outputs), flatten_outputs(outputs_prime)
    both = np.concatenate([y, y_prime])
    if lattice is not None:
        _, on = lattice.units(both)
        off = int(np.sum(~on))
    else:
        off = int(np.sum(~np.isfinite(both)))
    mask = np.zeros(both.shape, dtype=bool)
    for span in (output_range, output_range_prime):
        if span is not None:
            mask |= (both < span[0]) | (both > span[1])
    outside = int(np.sum(mask))
    if output_range != output_range_prime:  # the declared reachable sets differ: one input only
        outside = max(outside, 1)
    return GridCheck(
        int(both.size), off, outside, power_of_two_spacing(y), power_of_two_spacing(y_prime),
        float(min_spacing), lattice is not None,
    )

