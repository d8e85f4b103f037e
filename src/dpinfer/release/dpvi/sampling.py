"""Minibatch selection: Poisson subsampling (what the accountants assume) or the paper's batches.

* ``"poisson"``: every record joins the batch independently with probability q, so the batch size is
  Binomial(n, q) (it can be empty). This is the sampling scheme analysed by the PLD and RDP
  accountants for :class:`~dpinfer.privacy.PoissonSubsampledGaussianEvent`.
* ``"with-replacement"``: B = int(q n) indices drawn uniformly with replacement, as
  ``np.random.choice(range(N), B)`` in the authors' code (Jälkö, Dikmen & Honkela 2017); recorded
  as a :class:`~dpinfer.privacy.SampledWithReplacementGaussianEvent`, which only the
  ``"advanced"`` accountant reads (by the paper's convention).

Secrecy of the batches
----------------------
Amplification by subsampling, which every accountant here assumes, holds only if nobody can tell
which records were in which batch. The batches of a private fit are therefore drawn by the privacy
core (:func:`dpinfer.privacy.subsampling.subsample`: exact Bernoulli(q) inclusions and exact
uniform indices from the :class:`~dpinfer.privacy.context.ReleaseContext`'s PrivacyRNG, the OS
CSPRNG), never from the user's seed, and nothing that could reproduce them is stored. (An attacker
who could rebuild the batches from a seed turns a fit claimed (1, 1e-5)-DP at q = 0.05, T = 1000
into a (5.7, 1e-5)-DP one.) Only non-private baselines draw their batches here, from a
:class:`torch.Generator` seeded by the simulation seed (public randomness).
"""

from __future__ import annotations

from typing import Any

import torch

from ...privacy.context import ReleaseContext
from ...privacy.subsampling import SCHEMES, subsample


def draw_batch(
    n: int, sampling_rate: float, source: ReleaseContext | Any, sampling: str = "poisson"
) -> torch.Tensor:
    """Indices (``int64``) of one minibatch (module docstring).

    Parameters
    ----------
    n, sampling_rate
        Number of records and q.
    source
        The :class:`~dpinfer.privacy.context.ReleaseContext` of a private fit (the batch is drawn
        by :func:`dpinfer.privacy.subsampling.subsample`, inside the fit's charged release) or a
        :class:`torch.Generator` (non-private baselines only).
    sampling
        ``"poisson"`` or ``"with-replacement"``.
    """
    if sampling not in SCHEMES:
        raise ValueError(f"sampling must be 'poisson' or 'with-replacement', got {sampling!r}.")
    if isinstance(source, ReleaseContext):
        return torch.from_numpy(subsample(source, n, sampling_rate, sampling))
    if not isinstance(source, torch.Generator):
        raise TypeError(
            f"draw_batch needs a ReleaseContext (private fits) or a torch.Generator (non-private "
            f"baselines), got {type(source).__name__}."
        )
    if sampling == "poisson":
        return torch.nonzero(torch.rand(n, generator=source) < sampling_rate).squeeze(1)
    return torch.randint(n, (int(sampling_rate * n),), generator=source)
