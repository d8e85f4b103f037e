"""Nested (RQMC) losses of sequential private posterior and likelihood estimation.

Every training simulation ``i`` carries a parameter ``θ_i`` and ``M`` privatised copies
``x_{i,m} = G(s_i, u_{i,m})`` of its confidential summary ``s_i`` (``{u_{i,m}}`` a scrambled Sobol
net, :mod:`dpinfer.inference.neural.rqmc`). The losses average over both (Xiong, Ju & Zhang 2025, eqs. 9-11):

* NPE / PPE (eq. 6 with the nested estimator): ``L = -(1/N) Σ_i (1/M) Σ_m log q(θ_i | x_{i,m})``.
* Atomic APT / PPE-A (eq. 8; Greenberg et al. 2019, App. A.2):
  ``L = -(1/N) Σ_i (1/M) Σ_m log q̃(θ_i | x_{i,m})``, with
  ``q̃(θ_i | x) = [q(θ_i | x)/p(θ_i)] / Σ_{j ∈ A_i} [q(θ_j | x)/p(θ_j)]`` over a set ``A_i`` of
  ``K`` atoms: ``θ_i`` and ``K - 1`` other parameters of the same minibatch, drawn uniformly without
  replacement.
* NLE / PLE (eq. 5): ``L = -(1/N) Σ_i (1/M) Σ_m log q(x_{i,m} | θ_i)``.

With ``M = 1`` these are the single-draw losses of the authors' public code.

Cost: the flow is conditioned once per distinct context (``x_{i,m}`` for APT, ``θ_i`` for NLE) and
evaluated at all the points that share it (:meth:`ConditionalFlow.log_prob_grid`); for a
one-dimensional modelled variable the conditioner then runs ``B·M`` (APT) or ``B`` (NLE) times
per minibatch instead of ``B·M·K`` or ``B·M``.
"""

from __future__ import annotations

import torch

from .flows import ConditionalFlow


def npe_loss(flow: ConditionalFlow, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Nested NPE loss ``-mean_{i,m} log q(θ_i | x_{i,m})``.

    Parameters
    ----------
    theta
        ``(B, d)`` parameters.
    x
        ``(B, M, o)`` privatised copies.
    """
    B, M, _ = x.shape
    th = theta[:, None, :].expand(B, M, theta.shape[-1])
    return -flow.log_prob(th, x).mean()


def choose_atoms(batch: int, atoms: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Atom indices ``(B, K)``: column 0 is ``i`` itself, the others ``K - 1`` distinct ``j != i``.

    ``K`` is capped at the batch size.
    """
    K = min(int(atoms), batch)
    device = generator.device if generator is not None else torch.device("cpu")
    rows = torch.arange(batch, device=device)[:, None]
    if K <= 1:
        return rows
    probs = (1.0 - torch.eye(batch, device=device)) / (batch - 1)
    others = torch.multinomial(probs, K - 1, replacement=False, generator=generator)
    return torch.cat([rows, others], dim=1)


def apt_loss(
    flow: ConditionalFlow,
    theta: torch.Tensor,
    x: torch.Tensor,
    log_prior: torch.Tensor,
    atoms: int = 10,
    generator: torch.Generator | None = None,
    atom_index: torch.Tensor | None = None,
) -> torch.Tensor:
    """Nested atomic APT loss (eq. 8): ``-mean_{i,m} log q̃(θ_i | x_{i,m})``.

    Parameters
    ----------
    theta, x
        ``(B, d)`` parameters and ``(B, M, o)`` privatised copies.
    log_prior
        ``(B,)`` prior log densities ``log p(θ_i)``.
    atoms
        ``K``, the size of each atom set (capped at ``B``).
    atom_index
        Optional ``(B, K)`` atom indices (default :func:`choose_atoms`).
    """
    B, M, o = x.shape
    d = theta.shape[-1]
    idx = choose_atoms(B, atoms, generator) if atom_index is None else atom_index
    K = idx.shape[1]
    idx_t = idx.t()  # (K, B): atom k of every row
    # the flow is conditioned once per distinct context x_{i,m} and evaluated at its K atoms
    th = theta[idx_t][:, :, None, :].expand(K, B, M, d).reshape(K, B * M, d)
    lq = flow.log_prob_grid(th, x.reshape(B * M, o)).reshape(K, B, M)
    logits = lq - log_prior[idx_t][:, :, None]
    return -(logits[0] - torch.logsumexp(logits, dim=0)).mean()


def nle_loss(flow: ConditionalFlow, theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Nested likelihood loss (eq. 5): ``-mean_{i,m} log q(x_{i,m} | θ_i)``."""
    # conditioned once per θ_i and evaluated at its M copies (x as (M, B, o))
    return -flow.log_prob_grid(x.transpose(0, 1), theta).mean()


__all__ = ["apt_loss", "choose_atoms", "nle_loss", "npe_loss"]
