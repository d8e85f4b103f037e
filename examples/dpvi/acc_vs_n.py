"""Synthetic logistic regression: test accuracy vs data size n (the paper's Fig. 5).

The paper's synthetic set: 7 standard-normal features, w ~ N(0, I), n in {10 000, 20 000, 50 000}
(80 % train), T = 500, C = 2, q in {0.001, 0.01}; noise calibrated with the PLD accountant
(replace-one, delta = 1e-3). Non-private VI at each n for reference.

Usage: python examples/dpvi/acc_vs_n.py [--runs 3]
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from _common import Timer, accuracies, calibrate, savefig, summarize, write_csv  # noqa: E402

from dpinfer.datasets import make_synthetic_logistic  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--ns", type=int, nargs="+", default=[10_000, 20_000, 50_000])
    parser.add_argument("--qs", type=float, nargs="+", default=[0.001, 0.01])
    parser.add_argument("--eps", type=float, nargs="+", default=[0.1, 1.0])
    parser.add_argument("--data-seed", type=int, default=0)
    args = parser.parse_args()
    full = make_synthetic_logistic(n=max(args.ns), seed=args.data_seed)
    T, C, delta = 500, 2.0, 1e-3
    rows = []
    fig, ax = plt.subplots(figsize=(6, 4))
    curves: dict[str, list[float]] = {}
    import numpy as np

    X_all = np.vstack([full.X_train, full.X_test])
    y_all = np.concatenate([full.y_train, full.y_test])
    for n in args.ns:
        n_train = int(0.8 * n)
        X, y = X_all[:n_train], y_all[:n_train]
        Xt, yt = X_all[n_train:n], y_all[n_train:n]
        accs, _ = accuracies(X, y, Xt, yt, args.runs, noise_multiplier=None, q=0.01, steps=2000)
        m, se = summarize(accs)
        curves.setdefault("non-private", []).append(m)
        rows.append(
            {
                "n": n,
                "q": "",
                "epsilon": "inf",
                "noise_multiplier": 0.0,
                "acc_mean": m,
                "acc_se": se,
                "runs": args.runs,
            }
        )
        for q in args.qs:
            for eps in args.eps:
                with Timer(f"n={n} q={q} eps={eps}"):
                    z, _ = calibrate(eps, delta, q, T)
                    accs, _ = accuracies(
                        X, y, Xt, yt, args.runs, noise_multiplier=z, delta=delta, clip=C, q=q, steps=T
                    )
                m, se = summarize(accs)
                curves.setdefault(f"q={q:g}, eps={eps:g}", []).append(m)
                rows.append(
                    {
                        "n": n,
                        "q": q,
                        "epsilon": eps,
                        "noise_multiplier": z,
                        "acc_mean": m,
                        "acc_se": se,
                        "runs": args.runs,
                    }
                )
                print(f"n {n} q {q:g} eps {eps:g}: batch {q * n_train:.0f}, sigma {z:.3g}, accuracy {m:.4f}")
    for label, means in curves.items():
        ax.plot(args.ns, means, marker="o", ls="-" if label == "non-private" else "--", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("n (80 % train)")
    ax.set_ylabel("test accuracy")
    ax.set_title("Synthetic 7-feature logistic regression: T=500, C=2")
    ax.legend(fontsize=8)
    write_csv("acc_vs_n", rows)
    savefig(fig, "acc_vs_n")


if __name__ == "__main__":
    main()
