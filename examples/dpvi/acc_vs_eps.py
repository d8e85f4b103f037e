"""Abalone test accuracy vs epsilon (paper Fig. 1 / the DPVI vs DP-SGLD comparison).

T = 1000, q = 0.05, C = 5, delta = 1e-3, Poisson sampling, noise calibrated with the PLD accountant
(replace-one). The paper's points (its moments-accountant epsilon, with-replacement batches) are
drawn beside ours; the horizontal line is our non-private VI.

Usage: python examples/dpvi/acc_vs_eps.py [--runs 5]
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from _common import Timer, accuracies, calibrate, savefig, summarize, write_csv  # noqa: E402

from dpinfer.datasets import load_abalone  # noqa: E402

# (sigma_paper, eps_MA, accuracy mean, se): DPBayes/DPVI-code aba_advi_acc_sigmas.p (10 runs each)
PAPER = [
    (1.2214, 7.5921, 0.7620, 0.0012),
    (2.0820, 3.5764, 0.7620, 0.0007),
    (3.5490, 1.9068, 0.7603, 0.0013),
    (6.0496, 1.0713, 0.7604, 0.0010),
    (10.3123, 0.6145, 0.7563, 0.0013),
    (17.5783, 0.3562, 0.7573, 0.0013),
    (29.9641, 0.2076, 0.7487, 0.0013),
    (51.0770, 0.1213, 0.7440, 0.0025),
    (87.0660, 0.0742, 0.7342, 0.0023),
    (148.4132, 0.0569, 0.7353, 0.0043),
]
PAPER_NONPRIVATE = 0.7667


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0])
    args = parser.parse_args()
    d = load_abalone()
    data = (d.X_train, d.y_train, d.X_test, d.y_test)
    T, q, C, delta = 1000, 0.05, 5.0, 1e-3
    rows = []
    nonpriv, _ = accuracies(*data, args.runs, noise_multiplier=None, q=0.01, steps=2000)
    np_mean, np_se = summarize(nonpriv)
    rows.append(
        {"epsilon": "inf", "noise_multiplier": 0.0, "acc_mean": np_mean, "acc_se": np_se, "runs": args.runs}
    )
    for eps in args.eps:
        with Timer(f"eps={eps}"):
            z, _ = calibrate(eps, delta, q, T)
            accs, _ = accuracies(*data, args.runs, noise_multiplier=z, delta=delta, clip=C, q=q, steps=T)
        m, se = summarize(accs)
        rows.append({"epsilon": eps, "noise_multiplier": z, "acc_mean": m, "acc_se": se, "runs": args.runs})
        print(f"eps {eps:g}: sigma {z:.3g}, accuracy {m:.4f} +- {se:.4f}")
    write_csv("acc_vs_eps", rows)
    fig, ax = plt.subplots(figsize=(6, 4))
    pts = [r for r in rows if r["epsilon"] != "inf"]
    ax.errorbar(
        [r["epsilon"] for r in pts],
        [r["acc_mean"] for r in pts],
        [r["acc_se"] for r in pts],
        marker="o",
        label="dpinfer (PLD, Poisson)",
    )
    ax.errorbar(
        [p[1] for p in PAPER],
        [p[2] for p in PAPER],
        [p[3] for p in PAPER],
        marker="s",
        ls="--",
        label="paper (moments accountant)",
    )
    ax.axhline(np_mean, color="k", lw=1, label=f"non-private (ours) {np_mean:.3f}")
    ax.axhline(PAPER_NONPRIVATE, color="gray", lw=1, ls=":", label="non-private (paper) 0.767")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon (delta = 1e-3)")
    ax.set_ylabel("test accuracy")
    ax.set_title("Abalone: T=1000, q=0.05, C=5")
    ax.legend(fontsize=8)
    savefig(fig, "acc_vs_eps")


if __name__ == "__main__":
    main()
