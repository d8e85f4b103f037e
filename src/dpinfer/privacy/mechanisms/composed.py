"""Per-coordinate composition: blocks of one statistic released by different mechanisms.

``s = (s_1, ..., s_m)`` with block ``s_i`` released by ``parts[i]``: ``G`` splits ``s`` and ``u``
and concatenates the outputs, the density is the product of the blocks' densities (the noises
are independent), and the privacy event is the sequential composition of the parts' events (all
blocks are computed from the same records), charged once, before any block is drawn. Every part
releases through its own floating-point-safe construction (a part of your own through its
declared noise family); a part without one makes the whole release refused unless the caller
passes ``unsafe_float_release=True`` (:mod:`.base`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...errors import InvalidDataError
from ..events import PrivacyEvent, compose
from ..rng import PrivacyRNG
from .base import Mechanism


def _cuts(sizes: list[int]) -> list[tuple[int, int]]:
    edges = np.cumsum([0, *sizes])
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]


class ComposedMechanism(Mechanism):
    """Blocks of the statistic through different mechanisms (module docstring).

    Parameters
    ----------
    parts
        The mechanisms, in the order of the blocks of ``s``. All must declare the same
        neighbouring relation.
    """

    name = "composed"

    def __init__(self, parts: Sequence[Mechanism]) -> None:
        self.parts = list(parts)
        if not self.parts or not all(isinstance(p, Mechanism) for p in self.parts):
            raise InvalidDataError("ComposedMechanism needs a non-empty list of Mechanism objects.")
        relations = {p.neighbouring for p in self.parts}
        if len(relations) > 1:
            raise InvalidDataError(
                "the parts of a composed mechanism must share one neighbouring relation, got "
                f"{sorted(relations)}."
            )
        self.neighbouring = relations.pop()
        self._stat = _cuts([p.stat_dim for p in self.parts])
        self._out = _cuts([p.out_dim for p in self.parts])
        self._noise = _cuts([p.noise_dim for p in self.parts])
        self.stat_dim, self.out_dim, self.noise_dim = self._stat[-1][1], self._out[-1][1], self._noise[-1][1]
        self.has_density = all(p.has_density for p in self.parts)
        sources = [p._family() or p for p in self.parts]  # a part of your own: its declared family
        self.delta = float(sum(p.delta for p in sources))
        accountants = {p.accountant for p in sources}
        self.accountant = "pure" if accountants == {"pure"} else ("rdp" if "rdp" in accountants else "pld")
        self.name = " + ".join(p.name for p in self.parts)

    @property
    def sensitivity(self) -> list[Any]:
        return [p.sensitivity for p in self.parts]

    @property
    def releases_exactly(self) -> bool:
        """Every part releases through an exact construction."""
        return all(p.releases_exactly for p in self.parts)

    @property
    def lattice(self) -> np.ndarray | None:
        """The parts' spacings side by side (0 for continuous parts); None if all are continuous."""
        hs = [p.lattice for p in self.parts]
        if all(h is None for h in hs):
            return None
        parts = zip(self.parts, hs, strict=True)
        return np.concatenate([np.zeros(p.out_dim) if h is None else np.asarray(h, float) for p, h in parts])

    def G(self, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        s = np.asarray(s, dtype=np.float64)
        u = np.asarray(u, dtype=np.float64)
        outs = [
            p.G(s[..., a:b], u[..., c:d])
            for p, (a, b), (c, d) in zip(self.parts, self._stat, self._noise, strict=True)
        ]
        shape = np.broadcast_shapes(*(o.shape[:-1] for o in outs))
        return np.concatenate([np.broadcast_to(o, shape + o.shape[-1:]) for o in outs], axis=-1)

    def log_density(self, s_dp: np.ndarray, s: np.ndarray) -> np.ndarray:
        x = np.asarray(s_dp, dtype=np.float64)
        s = np.asarray(s, dtype=np.float64)
        return sum(  # type: ignore[return-value]  # a sum of arrays (at least one part)
            p.log_density(x[..., c:d], s[..., a:b])
            for p, (a, b), (c, d) in zip(self.parts, self._stat, self._out, strict=True)
        )

    def event(self) -> PrivacyEvent:
        return compose(*(p._release_event() for p in self.parts))

    def _release_event(self) -> PrivacyEvent:
        return self.event()

    def details(self) -> dict[str, Any]:
        return {"parts": [{"mechanism": p.name, **p.details()} for p in self.parts]}

    def check_observed(self, s_dp: Any) -> np.ndarray:
        arr = np.asarray(s_dp, dtype=np.float64).reshape(-1)
        if arr.shape[0] != self.out_dim:
            raise InvalidDataError(
                f"{self.name}: observed statistics must have length {self.out_dim}, got {arr.shape[0]}."
            )
        blocks = zip(self.parts, self._out, strict=True)
        return np.concatenate([p.check_observed(arr[c:d]) for p, (c, d) in blocks])

    def validate_statistic_range(self, s: np.ndarray) -> None:
        for p, (a, b) in zip(self.parts, self._stat, strict=True):
            p.validate_statistic_range(p.check_statistic(s[a:b]))

    def _prepare_release(
        self, s: np.ndarray, *, unsafe_float_release: bool = False
    ) -> Callable[[PrivacyRNG], np.ndarray]:
        draws = [
            p._prepare_release(s[a:b], unsafe_float_release=unsafe_float_release)
            for p, (a, b) in zip(self.parts, self._stat, strict=True)
        ]
        return lambda gen: np.concatenate([np.asarray(d(gen), dtype=np.float64).reshape(-1) for d in draws])

    def __repr__(self) -> str:
        return f"ComposedMechanism({self.parts!r})"


__all__ = ["ComposedMechanism"]
