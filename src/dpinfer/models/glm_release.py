"""The public description of a private GLM release, shared by the data owner and the analyst.

What is released
----------------
:func:`dpinfer.release.glm.release_glm_statistics` (the data owner) scales every feature to
``x̃ ∈ [-1, 1]`` by its declared public bounds (the offset too, ``õ``), scales the response to ``ỹ``
(``[-1, 1]`` for the linear family, ``y / y_max`` for Poisson, ``{0, 1}`` otherwise) and releases

    z = Σ_i t(x_i, y_i) + N(0, σ² I),     t = [ỹ·r_y / R_y,  vech(r rᵀ)∖{1} / R_x,  (ỹ²)],

with ``r = (1, x̃, õ)``, ``r_y = (1, x̃)``, ``R_y`` and ``R_x`` the largest norms of the two blocks
under the bounds (so each block has norm at most 1; ``ỹ²`` only for the linear family) and σ the
Gaussian mechanism's for the L2 sensitivity 2·√(number of blocks) (replace-one,
:attr:`StatisticLayout.sensitivity`).

* :class:`StatisticLayout` — the statistic's index bookkeeping, block norms and sensitivity;
* :class:`GLMRelease` — the release record (the noisy statistic, σ, n and the public scaling), and
  its (de)serialisation;
* the public description of the data the owner declares (bounds, names, design, schema) is
  :class:`dpinfer.models.data_spec.DataSpec`, shared with DPVI (``GLMDataSpec`` before issue 40).

The owner's computation of the statistic is :mod:`dpinfer.release.glm`; the analyst's posterior is
:mod:`dpinfer.inference.glm`. Neither imports the other: both import this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..privacy.report import PrivacyReport
from .data_spec import removed_name

FAMILIES = ("logistic", "probit", "poisson", "linear")


@dataclass(frozen=True)
class GLMRelease:
    """What the data owner released: the noisy statistic and the public facts to read it.

    Attributes
    ----------
    family
        ``"logistic"``, ``"probit"``, ``"poisson"`` or ``"linear"``.
    z
        The released noisy statistic (module docstring for its layout).
    sigma
        The standard deviation of the Gaussian noise on every coordinate (public).
    n
        The number of records (public under replace-one neighbours).
    feature_names
        The names of the D features.
    intercept
        Whether the linear predictor has an intercept.
    has_offset
        Whether an offset (e.g. log exposure) enters η with coefficient 1.
    offset_bounds
        The declared (lower, upper) of the offset (used to map õ back to the offset's units).
    y_scale
        ``y_max`` for Poisson; the half-width of the response's bounds for the linear family.
    y_center
        The midpoint of the response's bounds (linear family), else 0.
    feature_bounds
        The declared (lower, upper) of every feature, shape (D, 2).
    privacy
        The release's privacy report.
    """

    family: str
    z: np.ndarray
    sigma: float
    n: int
    feature_names: tuple[str, ...]
    intercept: bool
    has_offset: bool
    offset_bounds: tuple[float, float] | None
    y_scale: float
    y_center: float
    feature_bounds: np.ndarray
    privacy: PrivacyReport | None = None

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def layout(self) -> StatisticLayout:
        return StatisticLayout(self.n_features, self.has_offset, self.family == "linear")

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family, "z": np.asarray(self.z).tolist(), "sigma": self.sigma, "n": self.n,
            "feature_names": list(self.feature_names), "intercept": self.intercept,
            "has_offset": self.has_offset,
            "offset_bounds": None if self.offset_bounds is None else list(self.offset_bounds),
            "y_scale": self.y_scale, "y_center": self.y_center,
            "feature_bounds": np.asarray(self.feature_bounds).tolist(),
            "privacy": None if self.privacy is None else self.privacy.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GLMRelease:
        ob = d.get("offset_bounds")
        return cls(
            family=str(d["family"]), z=np.asarray(d["z"], dtype=np.float64), sigma=float(d["sigma"]),
            n=int(d["n"]), feature_names=tuple(d["feature_names"]), intercept=bool(d["intercept"]),
            has_offset=bool(d["has_offset"]),
            offset_bounds=None if ob is None else (float(ob[0]), float(ob[1])),
            y_scale=float(d["y_scale"]), y_center=float(d["y_center"]),
            feature_bounds=np.asarray(d["feature_bounds"], dtype=np.float64),
            privacy=None if d.get("privacy") is None else PrivacyReport.from_dict(d["privacy"]),
        )



@dataclass(frozen=True)
class StatisticLayout:
    """Index bookkeeping of the released statistic (shared by the owner and the analyst).

    ``r = (1, x̃_1..x̃_D[, õ])`` has ``Q`` entries; the y block is ``ỹ·r[:D+1]``; the x block is
    ``r_j r_k`` for ``j <= k`` except ``(0, 0)``; the linear family adds ``ỹ²``.
    """

    n_features: int
    has_offset: bool
    has_y2: bool

    @property
    def Q(self) -> int:
        return 1 + self.n_features + int(self.has_offset)

    @property
    def y_index(self) -> np.ndarray:
        return np.arange(self.n_features + 1)

    @property
    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        j, k = np.triu_indices(self.Q)
        keep = ~((j == 0) & (k == 0))
        return j[keep], k[keep]

    @property
    def R_y(self) -> float:
        """Largest norm of ỹ·r_y: |ỹ| <= 1 and |r_y|² <= D + 1."""
        return math.sqrt(self.n_features + 1)

    @property
    def R_x(self) -> float:
        """Largest norm of vech(r rᵀ) without the constant: Σ_{j<=k} r_j² r_k² - 1 with |r_j| <= 1
        equals (|r|⁴ + Σ r_j⁴)/2 - 1 <= (Q² + Q)/2 - 1."""
        return math.sqrt((self.Q**2 + self.Q) / 2 - 1)

    @property
    def n_blocks(self) -> int:
        return 3 if self.has_y2 else 2

    @property
    def sensitivity(self) -> float:
        """L2 sensitivity of Σ_i t_i under replace-one: each block has norm <= 1, so one record's
        t has norm <= √(blocks), and replacing it moves the sum by at most 2·√(blocks)."""
        return 2 * math.sqrt(self.n_blocks)

    @property
    def dim(self) -> int:
        return len(self.y_index) + len(self.pairs[0]) + int(self.has_y2)

    @property
    def weights(self) -> np.ndarray:
        """Per-coordinate scale of the released statistic (each block's norm <= 1)."""
        w = [np.full(len(self.y_index), 1 / self.R_y), np.full(len(self.pairs[0]), 1 / self.R_x)]
        if self.has_y2:
            w.append(np.ones(1))
        return np.concatenate(w)

    def statistic(self, xs: np.ndarray, ys: np.ndarray, os: np.ndarray | None) -> np.ndarray:
        """Σ_i t_i of scaled records (x̃ in [-1,1]^D, ỹ, õ in [-1,1]), weighted (owner side)."""
        n = xs.shape[0]
        cols = [np.ones((n, 1)), xs] + ([os[:, None]] if self.has_offset and os is not None else [])
        r = np.concatenate(cols, axis=1)
        j, k = self.pairs
        parts = [(ys[:, None] * r[:, self.y_index]).sum(0), (r[:, j] * r[:, k]).sum(0)]
        if self.has_y2:
            parts.append(np.array([(ys**2).sum()]))
        return np.concatenate(parts) * self.weights



def __getattr__(name: str) -> object:
    """``GLMDataSpec`` became :class:`dpinfer.DataSpec` (issue 40 item 4): refused, naming it."""
    if name == "GLMDataSpec":
        raise removed_name(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["FAMILIES", "GLMRelease", "StatisticLayout"]
