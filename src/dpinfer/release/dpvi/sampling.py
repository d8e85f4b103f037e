"""Minibatch selection: Poisson subsampling (what the accountants assume) or the paper's batches.

* ``"poisson"``: every record joins the batch independently with probability q, so the batch size is
  Binomial(n, q) (it can be empty). This is the sampling scheme analysed by the PLD and RDP
  accountants for :class:`~dpinfer.privacy.PoissonSubsampledGaussianEvent`.
* ``"with-replacement"``: B = int(q n) indices drawn uniformly with replacement, as
  ``np.random.choice(range(N), B)`` in the authors' code (METHODS.md §3.1); recorded as a
  :class:`~dpinfer.privacy.SampledWithReplacementGaussianEvent`, which only the ``"advanced"``
  accountant reads (by the paper's convention).

Secrecy of the batches
----------------------
Amplification by subsampling, which every accountant here assumes, holds only if nobody can tell
which records were in which batch. The batches of a private fit are therefore drawn from the
:class:`~dpinfer.privacy.PrivacyRNG` (the OS CSPRNG), never from the user's seed, and nothing that
could reproduce them is stored. (An attacker who could rebuild the batches from a seed turns a fit
claimed (1, 1e-5)-DP at q = 0.05, T = 1000 into a (5.7, 1e-5)-DP one.) Only non-private baselines
draw their batches from the simulation seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ...privacy import PrivacyRNG
from ...privacy.discrete_vector import _uniform_below_vec


def draw_batch(
    n: int, sampling_rate: float, source: PrivacyRNG | Any, sampling: str = "poisson"
) -> torch.Tensor:
    """Indices of one minibatch (module docstring).

    Parameters
    ----------
    n, sampling_rate
        Number of records and q.
    source
        A :class:`~dpinfer.privacy.PrivacyRNG` (private fits: Bernoulli(q) from 64-bit CSPRNG
        words, exact to 2⁻⁶⁴; uniform indices by exact integer rejection) or a
        :class:`torch.Generator` (non-private baselines only).
    sampling
        ``"poisson"`` or ``"with-replacement"``.
    """
    if sampling not in ("poisson", "with-replacement"):
        raise ValueError(f"sampling must be 'poisson' or 'with-replacement', got {sampling!r}.")
    if isinstance(source, PrivacyRNG):
        if sampling == "poisson":
            mask = source.bernoulli(sampling_rate, n)
            return torch.from_numpy(np.flatnonzero(mask).astype(np.int64))
        size = int(sampling_rate * n)
        return torch.from_numpy(_uniform_below_vec(n, size, source).astype(np.int64))
    if not isinstance(source, torch.Generator):
        raise TypeError(f"draw_batch needs a PrivacyRNG or a torch.Generator, got {type(source).__name__}.")
    if sampling == "poisson":
        return torch.nonzero(torch.rand(n, generator=source) < sampling_rate).squeeze(1)
    return torch.randint(n, (int(sampling_rate * n),), generator=source)
