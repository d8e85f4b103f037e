"""Abalone test accuracy vs sampling ratio q (the paper's Fig. 3).

C = 5, delta = 1e-3, T = int(epochs / q) (a fixed number of passes over the data; the paper's
ACCvsQ.py uses T = int(2000 / q), about 100x longer), noise calibrated with the PLD accountant.

Usage: python examples/dpvi/acc_vs_q.py [--runs 3] [--epochs 20]
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from _common import Timer, accuracies, calibrate, savefig, summarize, write_csv  # noqa: E402

from dpinfer.datasets import load_abalone  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--epochs", type=float, default=20.0)
    parser.add_argument("--qs", type=float, nargs="+", default=[0.005, 0.01, 0.0325, 0.055, 0.0775, 0.1])
    parser.add_argument("--eps", type=float, nargs="+", default=[0.2, 1.0])
    args = parser.parse_args()
    d = load_abalone()
    data = (d.X_train, d.y_train, d.X_test, d.y_test)
    rows = []
    nonpriv, _ = accuracies(*data, args.runs, noise_multiplier=None, q=0.01, steps=2000)
    np_mean, _ = summarize(nonpriv)
    fig, ax = plt.subplots(figsize=(6, 4))
    for eps in args.eps:
        means = []
        for q in args.qs:
            T = int(args.epochs / q)
            with Timer(f"eps={eps} q={q}"):
                z, _ = calibrate(eps, 1e-3, q, T)
                accs, _ = accuracies(*data, args.runs, noise_multiplier=z, delta=1e-3, clip=5.0, q=q, steps=T)
            m, se = summarize(accs)
            means.append(m)
            rows.append(
                {
                    "epsilon": eps,
                    "q": q,
                    "steps": T,
                    "batch": q * len(d.y_train),
                    "noise_multiplier": z,
                    "acc_mean": m,
                    "acc_se": se,
                    "runs": args.runs,
                }
            )
            print(f"eps {eps:g} q {q:g} T {T}: sigma {z:.3g}, accuracy {m:.4f} +- {se:.4f}")
        ax.plot(args.qs, means, marker="o", label=f"eps={eps:g}")
    ax.axhline(np_mean, color="k", lw=1, label=f"non-private {np_mean:.3f}")
    ax.set_xscale("log")
    ax.set_xlabel("sampling ratio q")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"Abalone: C=5, T={args.epochs:g}/q, delta=1e-3")
    ax.legend(fontsize=8)
    write_csv("acc_vs_q", rows)
    savefig(fig, "acc_vs_q")


if __name__ == "__main__":
    main()
