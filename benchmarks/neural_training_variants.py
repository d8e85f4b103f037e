"""SPPE's minibatch size at the user's budget (issue 27, item 3): an experiment, not a default.

A training step of the default flow is dominated by per-operation overhead at 200 simulations
(2-D NSF, one thread: 10.9 ms per step at 200, 15.6 ms at 400, 22.3 ms at 800; ``steps``), so larger
minibatches cost less per epoch. Whether that buys wall time at the same accuracy is measured
here, one fit at a time, against exact references:

* ``base``: the defaults (batch 200, lr 1e-3);
* ``b400``: batch 400; ``b400lr``: batch 400 at lr 1.4e-3 (square-root scaling);
* ``scaled``: the batch grows with the pool, ``max(200, n_train // 5)`` (five steps per epoch).

Problems: the two of ``tests/user_problems.py`` (``SPPE(model, simulations=3000, seed=s)``, seeds
0-3, C2ST of 2000 draws against 2000 exact draws) and the synthetic SIR release of
``examples/private_data/sir_reference.py`` (K = 10^4, ε = 10; SPPE at its defaults, seeds 0-1,
C2ST of 1000 draws against 1000 draws of the importance-sampling reference of
``neural_flow_depth.py --sir``). CPU time (process time) of each fit and its draws.

Usage: ``python benchmarks/neural_training_variants.py VARIANT {user,sir} [SIR_SEEDS]`` (default
``0,1``) prints one line per fit (``... steps``: the step times by batch size);
``results/neural_training_variants.json`` holds the lines of one run of every variant on the
2-core dev machine (two runs at a time, one per core) and the step times (key ``step_ms``).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "private_data"))

import neural_vs_sbi as nvs  # noqa: E402

import dpinfer.inference.neural.sequential as sequential  # noqa: E402
from dpinfer.diagnostics.metrics import c2st  # noqa: E402
from dpinfer.inference.neural import SPPE  # noqa: E402

TRAINING: dict[str, Any] = {
    "base": None,
    "b400": {"batch_size": 400},
    "b400lr": {"batch_size": 400, "learning_rate": 1.4e-3},
    "scaled": None,
}


def _scaled_train_flow(flow: Any, loss_fn: Any, train: Any, val: Any, config: Any, gen: Any, cb: Any = None):
    n = train[0].shape[0]
    config = dataclasses.replace(config, batch_size=max(config.batch_size, n // 5))
    return _TRAIN_FLOW(flow, loss_fn, train, val, config, gen, cb)


_TRAIN_FLOW = sequential.train_flow


def _fit(variant: str, model: Any, obs: Any, seed: int, ref: np.ndarray, budget: int | None) -> dict:
    c0 = time.process_time()
    kw = {} if budget is None else {"simulations": budget}
    post = SPPE(model, seed=seed, training=TRAINING[variant], **kw).fit(obs)
    d = post.sample(len(ref), seed=seed + 1).reshape(len(ref), -1)
    return {
        "cpu": time.process_time() - c0,
        "epochs": [r.epochs for r in post.rounds],
        "c2st": float(c2st(d, ref, seed=seed)),
        "mean_error_in_sd": ((d.mean(0) - ref.mean(0)) / ref.std(0)).round(2).tolist(),
        "sd_ratio": (d.std(0) / ref.std(0)).round(2).tolist(),
        "stopped": post.settings.get("stopped"),
        "last_shift_sd": post.rounds[-1].extra.get("shift_sd"),
        "warnings": [w["category"] for w in post.settings.get("diagnostics", [])],
    }


def step_ms_by_batch(repeats: int = 40) -> dict[str, float]:
    """``steps``: ms per training step (log density, backward, fused Adam) of the default 2-D NSF
    given 2-D context, by minibatch size, one thread (median of 5 blocks of ``repeats`` steps)."""
    from dpinfer.inference.neural.flows import ConditionalFlow, FlowConfig

    torch.manual_seed(0)
    flow = ConditionalFlow(FlowConfig(), 2, 2)
    opt = torch.optim.Adam(flow.parameters(), lr=1e-3, fused=True)
    out: dict[str, float] = {}
    for batch in (100, 200, 400, 800):
        theta, x = torch.randn(batch, 2), torch.randn(batch, 2)

        def step(theta: torch.Tensor = theta, x: torch.Tensor = x) -> None:
            opt.zero_grad()
            (-flow.log_prob(theta, x).mean()).backward()
            opt.step()

        for _ in range(5):
            step()
        blocks = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(repeats):
                step()
            blocks.append((time.perf_counter() - t0) / repeats * 1e3)
        out[str(batch)] = float(np.median(blocks))
    return out


def main() -> None:
    variant, which = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
    if variant == "steps":
        torch.set_num_threads(1)
        print({k: round(v, 2) for k, v in step_ms_by_batch().items()})
        return
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    if variant == "scaled":
        sequential.train_flow = _scaled_train_flow
    if which == "user":
        for prob, seed in itertools.product(["poisson-clamped-sum", "two-clamped-means"], [0, 1, 2, 3]):
            _, model, obs, exact = next(p for p in nvs._user_problems() if p[0] == prob)
            r = _fit(variant, model, obs, seed, exact(2000, seed + 100), 3000)
            print(variant, prob[:8], seed, f"{r['cpu']:.2f}", r["epochs"], f"{r['c2st']:.3f}",
                  r["mean_error_in_sd"], r["sd_ratio"], flush=True)  # fmt: skip
        return
    from sir_reference import benchmark_reference, synthetic_release

    model, obs = synthetic_release(10_000)
    cache = Path(os.environ.get("TMPDIR", "/tmp")) / "sir_ref_K10000_seed11.npy"
    if cache.exists():
        ref = np.load(cache)
    else:
        ref = benchmark_reference(model, obs).sample(1000, seed=5)
        np.save(cache, ref)
    for seed in [int(v) for v in (sys.argv[3] if len(sys.argv) > 3 else "0,1").split(",")]:
        r = _fit(variant, model, obs, seed, ref, None)
        print(variant, "SIR", seed, f"{r['cpu']:.2f}", r["epochs"], f"{r['c2st']:.3f}",
              r["mean_error_in_sd"], r["sd_ratio"], r["stopped"], r["last_shift_sd"], r["warnings"],
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
