"""Abalone test accuracy vs number of iterations T (the paper's Fig. 4).

q = 0.05, C = 5, delta = 1e-3; the noise grows with T to keep epsilon fixed (PLD accountant).

Usage: python examples/dpvi/acc_vs_T.py [--runs 3]
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
    parser.add_argument("--steps", type=int, nargs="+", default=[100, 300, 1000, 2000])
    parser.add_argument("--eps", type=float, nargs="+", default=[0.1, 0.5, 2.0])
    args = parser.parse_args()
    d = load_abalone()
    data = (d.X_train, d.y_train, d.X_test, d.y_test)
    q = 0.05
    rows = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for T in args.steps:
        means = []
        for eps in args.eps:
            with Timer(f"T={T} eps={eps}"):
                z, _ = calibrate(eps, 1e-3, q, T)
                accs, _ = accuracies(*data, args.runs, noise_multiplier=z, delta=1e-3, clip=5.0, q=q, steps=T)
            m, se = summarize(accs)
            means.append(m)
            rows.append(
                {
                    "steps": T,
                    "epsilon": eps,
                    "noise_multiplier": z,
                    "acc_mean": m,
                    "acc_se": se,
                    "runs": args.runs,
                }
            )
            print(f"T {T} eps {eps:g}: sigma {z:.3g}, accuracy {m:.4f} +- {se:.4f}")
        ax.plot(args.eps, means, marker="o", label=f"T={T}")
    nonpriv, _ = accuracies(*data, args.runs, noise_multiplier=None, q=0.01, steps=2000)
    ax.axhline(summarize(nonpriv)[0], color="k", lw=1, label="non-private")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon (delta = 1e-3)")
    ax.set_ylabel("test accuracy")
    ax.set_title("Abalone: q=0.05, C=5")
    ax.legend(fontsize=8)
    write_csv("acc_vs_T", rows)
    savefig(fig, "acc_vs_T")


if __name__ == "__main__":
    main()
