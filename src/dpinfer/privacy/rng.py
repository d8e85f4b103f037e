"""The source of privacy noise: the operating system's CSPRNG.

The rule, for the whole library
-------------------------------
**All randomness that a privacy analysis treats as secret** — mechanism noise, DPVI's minibatch
subsampling, the sparse vector technique's threshold and distance noise, any randomized
response — comes from a :class:`PrivacyRNG`. It is never derived from the user's seed, and
nothing that could reproduce it (a seed, a state, an entropy value) is stored in a result, a log
or the ledger. The user's seed governs only randomness the analysis treats as public: Monte Carlo
draws of θ, initialisation, simulations.

Implementation
--------------
A :class:`PrivacyRNG` holds *no* generator state: every draw reads fresh bytes from the OS
cryptographically secure generator (``os.urandom``, i.e. ``getrandom(2)`` on Linux). Hence

* an adversary who sees any number of outputs cannot predict the next ones (unlike a Mersenne
  Twister or PCG stream, whose state can be recovered from outputs);
* a forked child never repeats its parent's stream: there is no user-space state to copy;
* pickling or copying an instance copies nothing secret.

Floating-point uniforms carry 52 random bits (``(k + ½)·2⁻⁵²``, in [2⁻⁵³, 1 − 2⁻⁵³], strictly
inside (0, 1): with 53 bits the top value (2⁵³ − ½)·2⁻⁵³ would round to exactly 1.0); the
continuous samplers below are inverse-CDF maps of them. Values that are *released* never come
from these continuous samplers directly: releases go through the exact integer samplers of
:mod:`dpinfer.privacy.discrete` on a power-of-two grid (:mod:`dpinfer.privacy.grid`).

:meth:`PrivacyRNG.insecure_deterministic` exists for tests only: its noise is a function of a
seed, it warns, and every release made with it is flagged (report ``insecure_rng: true``, ledger
status ``insecure``).
"""

from __future__ import annotations

import os
import random
import warnings
from typing import Any

import numpy as np
from scipy.special import ndtri

from ..errors import InsecureRandomnessWarning

_TWO_M52 = 2.0**-52


def _shape(size: Any) -> tuple[int, ...]:
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        return (int(size),)
    return tuple(int(s) for s in size)


class PrivacyRNG:
    """Random numbers for privacy noise, read from the OS CSPRNG at every draw.

    Two instances, two processes, or a parent and its forked child never share a stream, and
    no instance can be reproduced from anything the library stores.
    """

    __slots__ = ("_det_np", "_det_py", "deterministic")

    def __init__(self) -> None:
        self._det_np: np.random.Generator | None = None
        self._det_py: random.Random | None = None
        self.deterministic = False

    @classmethod
    def insecure_deterministic(cls, seed: int) -> PrivacyRNG:
        """INSECURE, FOR TESTS ONLY: a privacy RNG whose noise is fixed by ``seed``.

        Anyone who knows the seed can subtract the noise and recover the confidential statistic.
        Never use this for a real release; a :class:`InsecureRandomnessWarning` is emitted, the
        privacy report of every release made with it says ``insecure_rng: true`` and a ledger
        records its charges as ``insecure``.
        """
        warnings.warn(
            "PrivacyRNG.insecure_deterministic: privacy noise is reproducible from the seed and "
            "gives NO privacy. Use it in tests only.",
            InsecureRandomnessWarning,
            stacklevel=2,
        )
        obj = cls.__new__(cls)
        ss = np.random.SeedSequence([0x5EC0, int(seed)])
        obj._det_np = np.random.Generator(np.random.PCG64DXSM(ss))
        obj._det_py = random.Random(int(ss.generate_state(2, dtype=np.uint64)[0]))
        obj.deterministic = True
        return obj

    # -- raw integer randomness ---------------------------------------------------------------
    def random_uint64(self, size: Any = None) -> Any:
        """Uniform 64-bit unsigned integers (numpy ``uint64``)."""
        shape = _shape(size)
        n = int(np.prod(shape)) if shape else 1
        if self._det_np is not None:
            out = self._det_np.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)
        else:
            out = np.frombuffer(os.urandom(8 * n), dtype=np.uint64).copy()
        return out.reshape(shape) if shape else out[0]

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``{0, ..., n-1}`` (exact, any size of ``n >= 1``)."""
        n = int(n)
        if n < 1:
            raise ValueError(f"randbelow needs n >= 1, got {n}.")
        if self._det_py is not None:
            return self._det_py.randrange(n)
        k = n.bit_length()
        while True:  # rejection sampling: exact uniform
            r = int.from_bytes(os.urandom((k + 7) // 8), "little") >> ((-k) % 8)
            if r < n:
                return r

    def randbits(self, k: int) -> int:
        """``k`` uniform random bits as a Python int."""
        k = int(k)
        if k <= 0:
            return 0
        if self._det_py is not None:
            return self._det_py.getrandbits(k)
        return int.from_bytes(os.urandom((k + 7) // 8), "little") >> ((-k) % 8)

    # -- continuous samplers (inverse-CDF maps of 53-bit uniforms) ----------------------------
    def uniform(self, size: Any = None) -> Any:
        """U(0, 1) draws ``(k + ½)·2⁻⁵²``, k uniform below 2⁵²: exact doubles in [2⁻⁵³, 1 − 2⁻⁵³]."""
        bits = np.asarray(self.random_uint64(size))
        u = ((bits >> np.uint64(12)).astype(np.float64) + 0.5) * _TWO_M52
        return float(u) if u.ndim == 0 else u

    def laplace(self, scale: Any, size: Any = None) -> Any:
        """Laplace(0, scale) draws (inverse CDF; tail truncated beyond 36 scales, mass 2⁻⁵²)."""
        v = np.asarray(self.uniform(size)) - 0.5
        out = -np.asarray(scale, dtype=np.float64) * np.sign(v) * np.log1p(-2.0 * np.abs(v))
        return float(out) if out.ndim == 0 else out

    def normal(self, scale: Any, size: Any = None) -> Any:
        """N(0, scale²) draws.

        Each draw is the sum of four inverse-CDF normals divided by two (the construction of
        Holohan & Braghin 2021, used by Opacus's secure mode): it is exactly N(0, scale²) up to
        the 52-bit resolution of the uniforms, and its support reaches 16.4 scales, so the tail
        truncation of a single inverse-CDF draw (8.2 scales) costs nothing measurable.
        """
        shape = _shape(size)
        z = ndtri(np.asarray(self.uniform((4, *shape)))).sum(0) / 2.0
        out = np.asarray(scale, dtype=np.float64) * z
        return float(out) if out.ndim == 0 else out

    def bernoulli(self, p: float, size: Any = None) -> Any:
        """Bernoulli(p) draws as booleans: ``uint64 < ⌊p·2⁶⁴⌋`` (exact to 2⁻⁶⁴)."""
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must lie in [0, 1], got {p}.")
        bits = np.asarray(self.random_uint64(size))
        if p >= 1.0:
            return np.ones(bits.shape, dtype=bool)
        threshold = np.uint64(int(p * 2.0**64))
        return bits < threshold

    def exponential(self, scale: Any, size: Any = None) -> Any:
        """Exponential draws with the given scale."""
        out = -np.asarray(scale, dtype=np.float64) * np.log(np.asarray(self.uniform(size)))
        return float(out) if out.ndim == 0 else out

    def spawn(self) -> PrivacyRNG:
        """An independent privacy RNG (a new OS-entropy one, or derived if deterministic)."""
        if not self.deterministic:
            return PrivacyRNG()
        assert self._det_np is not None
        child = PrivacyRNG.__new__(PrivacyRNG)
        child._det_np = self._det_np.spawn(1)[0]
        child._det_py = random.Random(int(child._det_np.integers(0, 2**63)))
        child.deterministic = True
        return child

    def __reduce__(self) -> Any:
        if self.deterministic:
            raise TypeError("an insecure deterministic PrivacyRNG cannot be pickled.")
        return (PrivacyRNG, ())

    def __repr__(self) -> str:
        kind = "INSECURE deterministic" if self.deterministic else "OS CSPRNG"
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
