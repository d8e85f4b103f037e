"""The source of privacy noise.

Privacy noise must be unpredictable to anyone who knows the code and the user's simulation
seed. :class:`PrivacyRNG` is therefore seeded from operating-system entropy and never accepts a
user seed, except through :meth:`PrivacyRNG.insecure_deterministic`, which exists for tests only.

Floating-point caveat: like every numpy-based library, samples are IEEE doubles; the attack of
Mironov (2012) on floating-point Laplace samples is not mitigated here.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .errors import InsecureRandomnessWarning


class PrivacyRNG:
    """Random numbers for privacy noise, seeded from OS entropy (``secrets``-quality).

    A fresh instance draws 128 bits from the OS through :class:`numpy.random.SeedSequence`;
    two instances, or two processes, never share a stream.
    """

    __slots__ = ("_gen", "deterministic")

    def __init__(self) -> None:
        self._gen = np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence()))
        self.deterministic = False

    @classmethod
    def insecure_deterministic(cls, seed: int) -> PrivacyRNG:
        """INSECURE, FOR TESTS ONLY: a privacy RNG whose noise is fixed by ``seed``.

        Anyone who knows the seed can subtract the noise and recover the confidential statistic.
        Never use this for a real release; a :class:`InsecureRandomnessWarning` is emitted and
        the privacy report of every release made with it says ``insecure_rng: true``.
        """
        warnings.warn(
            "PrivacyRNG.insecure_deterministic: privacy noise is reproducible from the seed and "
            "gives NO privacy. Use it in tests only.",
            InsecureRandomnessWarning,
            stacklevel=2,
        )
        obj = cls.__new__(cls)
        obj._gen = np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence([0x5EC0, seed])))
        obj.deterministic = True
        return obj

    def laplace(self, scale: Any, size: Any = None) -> Any:
        """Laplace(0, scale) draws."""
        return self._gen.laplace(0.0, scale, size)

    def normal(self, scale: Any, size: Any = None) -> Any:
        """N(0, scale²) draws."""
        return self._gen.normal(0.0, scale, size)

    def uniform(self, size: Any = None) -> Any:
        """U(0, 1) draws (for mechanisms written as maps of uniforms)."""
        return self._gen.random(size)

    def binomial(self, n: Any, p: Any, size: Any = None) -> Any:
        """Binomial(n, p) draws."""
        return self._gen.binomial(n, p, size)

    def exponential(self, scale: Any, size: Any = None) -> Any:
        """Exponential draws with the given scale."""
        return self._gen.exponential(scale, size)

    def spawn(self) -> PrivacyRNG:
        """An independent privacy RNG (OS entropy again, or derived if deterministic)."""
        if not self.deterministic:
            return PrivacyRNG()
        child = PrivacyRNG.__new__(PrivacyRNG)
        child._gen = self._gen.spawn(1)[0]
        child.deterministic = True
        return child

    @property
    def generator(self) -> np.random.Generator:
        """The underlying numpy Generator (for vectorised draws such as torch interop)."""
        return self._gen

    def __repr__(self) -> str:
        kind = "INSECURE deterministic" if self.deterministic else "OS entropy"
        return f"PrivacyRNG({kind})"


def as_privacy_rng(rng: Any) -> PrivacyRNG:
    """Return ``rng`` if it is a :class:`PrivacyRNG`, a fresh one if ``None``; refuse anything else.

    A numpy Generator or an integer seed is refused on purpose: simulation seeds must never
    determine privacy noise.
    """
    if rng is None:
        return PrivacyRNG()
    if isinstance(rng, PrivacyRNG):
        return rng
    raise TypeError(
        f"privacy noise needs a dpinfer.privacy.PrivacyRNG (or None for a fresh one), got "
        f"{type(rng).__name__}. Simulation seeds and numpy Generators are refused so that a known "
        "seed can never reveal the noise; for tests use PrivacyRNG.insecure_deterministic(seed)."
    )
