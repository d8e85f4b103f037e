"""DPVI speed: DP steps per second against Opacus DP-SGD on the same logistic model.

Two set-ups, one run each:

* Abalone (3341 x 8), Poisson sampling with q = 0.05 (expected batch 167);
* the paper's synthetic set (40 000 x 7 training rows), q = 500/40 000 (expected batch 500).

For each: steps/s of ``dpinfer.release.dpvi.DPVI`` (mean-field, per-example ELBO gradients with respect to
the 2D variational parameters, clipping, noise, windowed AdaGrad; float64 and float32), of the same
engine without privacy (no clipping, no noise), and of Opacus (``bench`` extra) doing DP-SGD on
``nn.Linear(D, 1, bias=False)`` with the same batch, clip norm, noise multiplier and Poisson
sampling. Targets: DPVI DP rate >= 1x Opacus's; DP / non-private step time <= 2.

Timing covers the training loop only (noise calibration and data loading excluded): our loop is
timed from the first to the last step callback. Both libraries use one torch thread.

Usage: ``python benchmarks/dpvi.py [--steps 2000]``; writes benchmarks/results/dpvi.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from pathlib import Path

import torch

from dpinfer.datasets import load_abalone, make_synthetic_logistic
from dpinfer.models.data_spec import DataSpec
from dpinfer.privacy import InsecureRandomnessWarning, PrivacyRNG
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.dpvi import DPVI, LogisticRegression, OptimizerOptions, PrivacyOptions, TrainingOptions

CLIP, SIGMA = 5.0, 2.0


def _prng() -> PrivacyRNG:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRandomnessWarning)
        return PrivacyRNG.insecure_deterministic(0)


def time_ours(X, y, q, steps, private, dtype="float64"):
    stamps: list[float] = []

    def cb(t, _params):
        if t == 0 or t == steps - 1:
            stamps.append(time.perf_counter())

    engine = DPVI(LogisticRegression(X.shape[1]))
    training = dict(sampling_rate=q, steps=steps, callback=cb, dtype=dtype, per_example="elbo")
    kw = dict(optimizer=OptimizerOptions(lr=0.1), seed=0)
    if private:
        # the paper's per-example ELBO terms, replace-one, PLD accounting (outside the timed loop)
        engine.fit(
            X, y, delta=1e-5, privacy=PrivacyOptions(noise_multiplier=SIGMA, clip=CLIP),
            training=TrainingOptions(**training), context=ReleaseContext(privacy_rng=_prng()), **kw,
            data=DataSpec(intercept=False),
        )
    else:
        engine.fit(X, y, training=TrainingOptions(**training, track_elbo=False), private=False, **kw,
            data=DataSpec(intercept=False))
    return (steps - 1) / (stamps[1] - stamps[0])


def time_opacus(X, y, q, steps, loader_batches=True):
    """Opacus DP-SGD steps/s; with ``loader_batches=False`` the Poisson batches are drawn by tensor
    indexing instead of Opacus's DataLoader (compute only, a lower bound on Opacus's cost)."""
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    Xt = torch.as_tensor(X, dtype=torch.float32)
    yt = torch.as_tensor(y, dtype=torch.float32)
    model = torch.nn.Linear(X.shape[1], 1, bias=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(Xt, yt), batch_size=max(1, int(q * len(yt))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="rdp")
        model, opt, loader = engine.make_private(
            module=model,
            optimizer=opt,
            data_loader=loader,
            noise_multiplier=SIGMA,
            max_grad_norm=CLIP,
            poisson_sampling=True,
        )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    gen = torch.Generator().manual_seed(0)

    def own_batches():
        for _ in range(steps):
            idx = torch.nonzero(torch.rand(len(yt), generator=gen) < q).squeeze(1)
            yield Xt[idx], yt[idx]

    done, start = 0, None
    warnings.filterwarnings("ignore", message="Full backward hook")
    while done < steps:
        for xb, yb in loader if loader_batches else own_batches():
            if done == 1:
                start = time.perf_counter()
            opt.zero_grad()
            if len(yb):
                loss_fn(model(xb).squeeze(-1), yb).backward()
            opt.step()
            done += 1
            if done >= steps:
                break
    return (steps - 1) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    aba = load_abalone()
    syn = make_synthetic_logistic(seed=0)
    setups = {
        "abalone (q=0.05, batch~167)": (aba.X_train, aba.y_train, 0.05),
        "synthetic 40000x7 (batch~500)": (syn.X_train, syn.y_train, 500 / len(syn.y_train)),
    }
    try:
        import opacus  # noqa: F401

        have_opacus = True
    except ImportError:
        have_opacus = False
        print("opacus not installed (pip install -c constraints.txt '.[bench]'): peer column skipped")
    results = {}
    print(
        f"{'set-up':32s} {'DPVI f64':>10s} {'DPVI f32':>10s} {'non-priv':>10s} {'Opacus':>10s} "
        f"{'Opacus*':>10s} {'vs Opacus':>10s} {'vs Opacus*':>10s} {'DP/nonDP':>9s}   (steps/s)"
    )
    for name, (X, y, q) in setups.items():
        dp64 = time_ours(X, y, q, args.steps, True)
        dp32 = time_ours(X, y, q, args.steps, True, "float32")
        nondp = time_ours(X, y, q, args.steps, False)
        op = time_opacus(X, y, q, args.steps) if have_opacus else float("nan")
        op_nl = time_opacus(X, y, q, args.steps, loader_batches=False) if have_opacus else float("nan")
        best = max(dp64, dp32)
        row = {
            "dpvi_dp_steps_per_s_float64": dp64,
            "dpvi_dp_steps_per_s_float32": dp32,
            "dpvi_nonprivate_steps_per_s_float64": nondp,
            "opacus_dp_sgd_steps_per_s": op,
            "opacus_dp_sgd_steps_per_s_without_dataloader": op_nl,
            "ratio_dpvi_over_opacus_without_dataloader_float64": dp64 / op_nl,
            "ratio_dpvi_over_opacus_float64": dp64 / op,
            "ratio_dpvi_over_opacus_best": best / op,
            "dp_over_nonprivate_step_time_float64": nondp / dp64,
            "sampling_rate": q,
            "n_train": len(y),
        }
        results[name] = row
        print(
            f"{name:32s} {dp64:10.0f} {dp32:10.0f} {nondp:10.0f} {op:10.0f} {op_nl:10.0f} "
            f"{dp64 / op:9.2f}x {dp64 / op_nl:9.2f}x {nondp / dp64:9.2f}"
        )
    print("Opacus* = Opacus with batches drawn by tensor indexing instead of its Poisson DataLoader")
    out = {
        "benchmark": "dpvi",
        "steps": args.steps,
        "clip": CLIP,
        "noise_multiplier": SIGMA,
        "targets": {"dpvi_over_opacus": ">= 1", "dp_over_nonprivate_step_time": "<= 2"},
        "results": results,
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
    }
    path = Path(__file__).parent / "results" / "dpvi.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2, default=float))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
