"""Abalone test accuracy vs clipping threshold C (the paper's ACCvsC experiment).

T = 2000, q = 0.01, delta = 1e-3, C in {1, ..., 5}; the paper fixes sigma in {2, 4, 6, 8, 10}
(eps_MA 0.936, 0.433, 0.284, 0.211, 0.168). We calibrate the noise to the same epsilons with the
PLD accountant (Poisson sampling, replace-one).

Usage: python examples/dpvi/acc_vs_clip.py [--runs 3] [--eps 0.168 0.936]
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from _common import Timer, accuracies, calibrate, savefig, summarize, write_csv  # noqa: E402

from dpinfer.datasets import load_abalone  # noqa: E402

# eps_MA -> accuracies for C = 1..5 (ACCvsC.py, 5 runs)
PAPER = {
    0.9358: [0.7411, 0.7459, 0.7495, 0.7543, 0.7533],
    0.4331: [0.7423, 0.7452, 0.7490, 0.7543, 0.7533],
    0.2837: [0.7421, 0.7474, 0.7462, 0.7481, 0.7531],
    0.2113: [0.7383, 0.7445, 0.7411, 0.7462, 0.7476],
    0.1683: [0.7400, 0.7423, 0.7416, 0.7438, 0.7476],
}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.1683, 0.9358])
    parser.add_argument("--clips", type=float, nargs="+", default=[1.0, 2.0, 3.0, 4.0, 5.0])
    args = parser.parse_args()
    d = load_abalone()
    data = (d.X_train, d.y_train, d.X_test, d.y_test)
    T, q, delta = 2000, 0.01, 1e-3
    rows = []
    nonpriv, _ = accuracies(*data, args.runs, noise_multiplier=None, q=q, steps=T)
    np_mean, _ = summarize(nonpriv)
    fig, ax = plt.subplots(figsize=(6, 4))
    for eps in args.eps:
        z, _ = calibrate(eps, delta, q, T)
        means = []
        for C in args.clips:
            with Timer(f"eps={eps} C={C}"):
                accs, _ = accuracies(*data, args.runs, noise_multiplier=z, delta=delta, clip=C, q=q, steps=T)
            m, se = summarize(accs)
            means.append(m)
            paper = PAPER.get(eps)
            rows.append(
                {
                    "epsilon": eps,
                    "clip": C,
                    "noise_multiplier": z,
                    "acc_mean": m,
                    "acc_se": se,
                    "runs": args.runs,
                    "paper_acc": paper[int(C) - 1] if paper and C in (1, 2, 3, 4, 5) else "",
                }
            )
            print(f"eps {eps:g} C {C:g}: accuracy {m:.4f} +- {se:.4f}")
        line = ax.plot(args.clips, means, marker="o", label=f"dpinfer eps={eps:g}")[0]
        if eps in PAPER:
            ax.plot(
                [1, 2, 3, 4, 5],
                PAPER[eps],
                ls="--",
                marker="s",
                color=line.get_color(),
                label=f"paper eps_MA={eps:g}",
            )
    ax.axhline(np_mean, color="k", lw=1, label=f"non-private {np_mean:.3f}")
    ax.set_xlabel("clipping threshold C")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0.70, 0.78)
    ax.set_title("Abalone: T=2000, q=0.01, delta=1e-3")
    ax.legend(fontsize=8)
    write_csv("acc_vs_clip", rows)
    savefig(fig, "acc_vs_clip")


if __name__ == "__main__":
    main()
