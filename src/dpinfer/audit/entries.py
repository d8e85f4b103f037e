"""What an audit knows of a release mechanism: its registry entry, its set-up and its broken variants.

A :class:`RegistryEntry` names a mechanism (the public objects it releases through), its proof
and how to build it; :meth:`RegistryEntry.setup` gives the :class:`AuditSetup` the checks run on:
the release through the public API, neighbouring inputs at the sensitivity bound, the ε it
claims, its declared output grid, and its :class:`BrokenVariant` s, which the audit must catch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidPrivacyParameterError
from ..privacy.rng import PrivacyRNG
from .grid import Lattice

__all__ = ["AuditSetup", "BrokenVariant", "RegistryEntry"]


@dataclass(frozen=True)
class BrokenVariant:
    """A known-broken version of a mechanism, which the audit must catch.

    Attributes
    ----------
    name
        Short name (used in test ids).
    release
        ``release(data, rng) -> output`` of the broken mechanism, claimed at the entry's ε.
    defect
        What is wrong, in words.
    caught_by
        ``"audit"`` (the Clopper–Pearson bound exceeds the claimed ε), ``"grid"`` (outputs off
        every public grid) or ``"float"`` (outputs impossible from the neighbour, Mironov 2012;
        needs ``reaches``).
    true_epsilon
        The variant's actual ε where it has a closed form (report only), else None.
    reaches
        For ``"float"``: ``reaches(y, x)``, whether the float release can output y from input x.
    """

    name: str
    release: Callable[[Any, PrivacyRNG], Any]
    defect: str
    caught_by: str
    true_epsilon: float | None = None
    reaches: Callable[[np.ndarray, float], np.ndarray] | None = None

    def __post_init__(self) -> None:
        if self.caught_by not in ("audit", "grid", "float"):
            raise InvalidPrivacyParameterError(
                f"caught_by must be 'audit', 'grid' or 'float', got {self.caught_by!r}."
            )
        if self.caught_by == "float" and self.reaches is None:
            raise InvalidPrivacyParameterError("a 'float' variant needs reaches(y, x).")


@dataclass(frozen=True)
class AuditSetup:
    """One mechanism built for an audit.

    Attributes
    ----------
    release
        ``release(data, rng) -> output`` through the mechanism's public API.
    data, data_prime
        Neighbouring inputs at the sensitivity bound.
    epsilon, delta
        The guarantee the mechanism claims for one release (its privacy report or event).
    lattice
        The declared output grid, or None to infer the power-of-two grid of the outputs.
    min_spacing
        Public lower bound on the grid step (checked when ``lattice`` is None).
    output_range, output_range_prime
        Declared output range from ``data`` and from ``data_prime`` (None: unbounded).
    statistic
        Output -> number for the audit's rejection sets (None: projection of the output vector).
    broken
        The known-broken variants.
    float_release
        Set (to the reason) when the release is a documented float release: the grid check is then
        expected to *fail*, and the test says so if it starts to pass.
    """

    release: Callable[[Any, PrivacyRNG], Any]
    data: Any
    data_prime: Any
    epsilon: float
    delta: float
    broken: tuple[BrokenVariant, ...]
    lattice: Lattice | None = None
    min_spacing: float = 0.0
    output_range: tuple[float, float] | None = None
    output_range_prime: tuple[float, float] | None = None
    statistic: Callable[[Any], float] | None = None
    float_release: str | None = None

    def __post_init__(self) -> None:
        if self.lattice is None and not self.min_spacing > 0:
            raise InvalidPrivacyParameterError(
                "declare the release grid (lattice=...) or a public lower bound on its step "
                "(min_spacing > 0)."
            )


@dataclass(frozen=True)
class RegistryEntry:
    """A release mechanism with its proof reference and audit set-up.

    Attributes
    ----------
    name
        Registry key.
    targets
        The public classes/functions this entry releases through (the objects themselves).
    proof
        The paper and theorem behind the claimed guarantee.
    build
        ``build(epsilon=..., delta=...) -> AuditSetup``.
    epsilon, delta
        The (ε, δ) the audit builds the mechanism at.
    exercises
        Helpers in :mod:`dpinfer.privacy` that the release draws its noise through (covered by
        this entry's audit).
    fast_runs, full_runs
        Held-out releases per input of the audit in the fast and the full (slow) settings (the
        rejection set is chosen on as many again).
    """

    name: str
    targets: tuple[Any, ...]
    proof: str
    build: Callable[..., AuditSetup]
    epsilon: float = 1.0
    delta: float = 0.0
    exercises: tuple[Any, ...] = ()
    fast_runs: int = 1000
    full_runs: int = 10000

    def setup(self) -> AuditSetup:
        """The mechanism built at the entry's (ε, δ)."""
        return self.build(epsilon=self.epsilon, delta=self.delta)

