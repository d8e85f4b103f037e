"""Uniform dequantization of releases that live on a lattice (binomial, geometric, randomized response).

A mechanism whose output coordinate ``j`` takes values ``k·h_j`` only (``Mechanism.lattice``) has
a probability mass function, not a density. A flow trained on such values directly learns spikes
at the lattice points with an arbitrary density between them: NLE (SPLE) then evaluates a
meaningless likelihood at the observed release, and more so when the counts are small (the real
outbreaks release counts of 0-5 out of N = 100 trials per time point).

Dequantization (Uria, Murray & Larochelle 2013; Theis, van den Oord & Bethge 2016) trains on
``x̃ = x + h·(v - 1/2)``, ``v ~ U(0, 1)^d`` drawn from the public simulation seed. Its density is
piecewise constant,

    p(x̃ | θ) = P(x = k·h | θ) / Π_j h_j   for x̃ in the cell of width h centred on k·h,

so the likelihood a flow learns for x̃ is the pmf up to a constant, and the posterior given any x̃
in the cell of the observed release is the posterior given the release: the dequantized
estimators target the same posterior exactly, and need no change at evaluation time (an observed
release that is off the lattice, like the published outbreak statistics, is read as the cell it
falls in, as the exact importance sampler reads it by rounding).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import InvalidDataError


def mechanism_lattice(mechanism: Any) -> np.ndarray | None:
    """The mechanism's per-output lattice spacing (0: continuous), or None if all continuous."""
    h = getattr(mechanism, "lattice", None)
    if h is None:
        return None
    h = np.asarray(h, dtype=np.float64).reshape(-1)
    if h.shape != (mechanism.out_dim,) or not np.all(np.isfinite(h)) or np.any(h < 0):
        name = type(mechanism).__name__
        raise InvalidDataError(f"{name}.lattice must be out_dim finite spacings >= 0, got {h}.")
    return h if np.any(h > 0) else None


def dequantize(x: np.ndarray, spacing: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``x + h·(v - 1/2)`` with ``v ~ U(0, 1)`` on the lattice coordinates (``h > 0``) of ``x`` (..., d)."""
    x = np.asarray(x, dtype=np.float64)
    v = rng.random(x.shape)
    return x + spacing * (v - 0.5)


__all__ = ["dequantize", "mechanism_lattice"]
