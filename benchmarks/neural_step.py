"""One training step of the SPPE (atomic APT) and SPLE (NLE) losses: pairwise vs shared conditioner.

Before issue 14 the losses expanded every (atom θ_j, copy x_{i,m}) pair and ran the whole flow on
each (``B·M·K`` conditioner evaluations for APT, ``B·M`` for NLE). Now the flow is conditioned once
per distinct context and evaluated at all the points sharing it
(:meth:`dpinfer.inference.neural.flows.ConditionalFlow.log_prob_grid`); for a one-dimensional modelled
variable zuko's conditioner then runs ``B·M`` (APT) or ``B`` (NLE) times. Both versions run side by
side in one process on the same flow (one torch thread, Adam step included).

For a θ of two or more dimensions zuko's autoregressive conditioner takes θ as an input, so the
shared context saves only the context's z-scoring: the APT step still runs the whole flow on
``B·M·K`` pairs (393 ms at B = 200, M = 8, K = 10 on the SIR-like shape). What removes that cost is
the ``"fast"`` training preset's ``copies_per_step=1``: a step uses one randomly drawn copy of each
simulation (an unbiased minibatch estimate of the same nested loss, :mod:`dpinfer.inference.neural.training`),
so ``B·K`` pairs. The columns ``apt_one_copy_ms`` / ``nle_one_copy_ms`` time that step (the copy
selection included) beside the all-copies step, in the same process.

Usage: ``python benchmarks/neural_step.py``; writes ``results/neural_step.json``.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

import torch

from dpinfer.inference.neural.flows import build_flow
from dpinfer.inference.neural.losses import apt_loss, choose_atoms, nle_loss
from dpinfer.inference.neural.training import _copies


def pairwise_apt(flow: Any, theta: Any, x: Any, lp: Any, atoms: int, gen: Any) -> Any:
    """The loss as computed before: every (atom, copy) pair through the whole flow."""
    B, M, o = x.shape
    d = theta.shape[-1]
    idx = choose_atoms(B, atoms, gen)
    K = idx.shape[1]
    th = theta[idx]
    lq = flow.log_prob(th[:, None, :, :].expand(B, M, K, d), x[:, :, None, :].expand(B, M, K, o))
    logits = lq - lp[idx][:, None, :]
    return -(logits[..., 0] - torch.logsumexp(logits, dim=-1)).mean()


def pairwise_nle(flow: Any, theta: Any, x: Any) -> Any:
    B, M, _ = x.shape
    return -flow.log_prob(x, theta[:, None, :].expand(B, M, theta.shape[-1])).mean()


def _ms_per_step(flow: Any, loss: Any, n: int = 8) -> float:
    opt = torch.optim.Adam(flow.parameters(), lr=1e-5)

    def step() -> None:
        opt.zero_grad()
        loss().backward()
        opt.step()

    step()
    t0 = time.process_time()  # CPU time: the machine is shared
    for _ in range(n):
        step()
    return (time.process_time() - t0) / n * 1e3


def _row(d: int, o: int, B: int, M: int, K: int) -> dict[str, float]:
    theta, x, lp = torch.randn(B, d), torch.randn(B, M, o), torch.randn(B)
    gen = torch.Generator().manual_seed(0)
    post = build_flow("nsf", d, o)
    like = build_flow("nsf", o, d)
    return {
        "apt_pairwise_ms": _ms_per_step(post, lambda: pairwise_apt(post, theta, x, lp, K, gen)),
        "apt_shared_ms": _ms_per_step(post, lambda: apt_loss(post, theta, x, lp, K, gen)),
        "nle_pairwise_ms": _ms_per_step(like, lambda: pairwise_nle(like, theta, x)),
        "nle_shared_ms": _ms_per_step(like, lambda: nle_loss(like, theta, x)),
        "apt_one_copy_ms": _ms_per_step(post, lambda: apt_loss(post, theta, _copies(x, 1, gen), lp, K, gen)),
        "nle_one_copy_ms": _ms_per_step(like, lambda: nle_loss(like, theta, _copies(x, 1, gen))),
    }


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    B, M, K = 200, 8, 10
    rows = []
    for d, o in ((1, 1), (2, 10)):  # Gaussian mean; SIR-like (θ 2-dim, release 10-dim)
        row = {"theta_dim": d, "release_dim": o, "B": B, "M": M, "K": K, **_row(d, o, B, M, K)}
        rows.append(row)
        print(
            f"θ {d}-dim, release {o}-dim, B={B} M={M} K={K}: APT step {row['apt_pairwise_ms']:.0f} -> "
            f"{row['apt_shared_ms']:.0f} ms; NLE step {row['nle_pairwise_ms']:.0f} -> "
            f"{row['nle_shared_ms']:.0f} ms; one copy per step: APT {row['apt_one_copy_ms']:.0f} ms, "
            f"NLE {row['nle_one_copy_ms']:.0f} ms",
            flush=True,
        )
    out = {"machine": platform.platform(), "torch": torch.__version__, "torch_threads": 1,
           "clock": "process_time (CPU ms per step)", "rows": rows}
    path = Path(__file__).parent / "results" / "neural_step.json"
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
