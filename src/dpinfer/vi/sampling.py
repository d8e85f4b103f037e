"""Minibatch selection: Poisson subsampling (what the accountants assume) or the paper's batches.

* ``"poisson"``: every record joins the batch independently with probability q, so the batch size is
  Binomial(n, q) (it can be empty). This is the sampling scheme analysed by the PLD and RDP
  accountants for :class:`~dpinfer.privacy.PoissonSubsampledGaussianEvent`.
* ``"with-replacement"``: B = int(q n) indices drawn uniformly with replacement, as
  ``np.random.choice(range(N), B)`` in the authors' code (METHODS.md §3.1); recorded as a
  :class:`~dpinfer.privacy.SampledWithReplacementGaussianEvent`, which only the ``"advanced"``
  accountant reads (by the paper's convention).

The generator is the *simulation* generator (seeded from the user's seed), never the privacy one.
"""

from __future__ import annotations

import torch


def draw_batch(
    n: int, sampling_rate: float, generator: torch.Generator, sampling: str = "poisson"
) -> torch.Tensor:
    """Indices of one minibatch (module docstring)."""
    if sampling == "poisson":
        return torch.nonzero(torch.rand(n, generator=generator) < sampling_rate).squeeze(1)
    if sampling == "with-replacement":
        return torch.randint(n, (int(sampling_rate * n),), generator=generator)
    raise ValueError(f"sampling must be 'poisson' or 'with-replacement', got {sampling!r}.")
