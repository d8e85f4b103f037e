"""Seeds and uniforms shared by every model: simulation generators and open-interval uniforms.

Simulation randomness (inference-time) comes from a numpy Generator built by :func:`as_generator`;
release mechanisms consume uniforms strictly inside (0, 1) (:func:`open_uniforms`), drawn either
from such a Generator or from a :class:`~dpinfer.privacy.PrivacyRNG`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

SeedLike = "int | np.random.SeedSequence | np.random.Generator | None"

# Smallest and largest doubles used for uniforms: keep u strictly inside (0, 1).
_U_LO = 2.0**-54
_U_HI = 1.0 - 2.0**-53


def as_generator(seed: Any) -> np.random.Generator:
    """A numpy Generator from an int, a SeedSequence, a Generator (returned as is) or None."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, (int, np.integer, np.random.SeedSequence)):
        return np.random.default_rng(seed)
    raise TypeError(
        f"a simulation seed must be an int, a numpy SeedSequence or Generator, got {type(seed).__name__}."
    )


def open_uniforms(gen: np.random.Generator | Any, shape: tuple[int, ...]) -> np.ndarray:
    """Uniforms strictly inside (0, 1) (``Generator.random`` can return exactly 0).

    ``gen`` may be a numpy Generator or a :class:`~dpinfer.privacy.PrivacyRNG`.
    """
    u = gen.uniform(size=shape) if not isinstance(gen, np.random.Generator) else gen.random(shape)
    return np.clip(u, _U_LO, _U_HI)
