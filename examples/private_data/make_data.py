"""Regenerate the private-data sets shipped in ``src/dpinfer/datasets/data/`` (see DATA.md).

The confidential data are synthetic, drawn from fixed seeds with the designs of Xiong et al.
(2025) / Ju et al. (2022): nothing from their (unlicensed) repositories is copied. The releases
are genuine: the privacy noise comes from ``PrivacyRNG`` (operating-system entropy), so a rerun
gives different released values. Each release is charged to a ledger (``--ledger``).

    python examples/private_data/make_data.py --out src/dpinfer/datasets/data
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from dpinfer.models import SIR, LinearRegression, NaiveBayes
from dpinfer.privacy import Ledger, PrivacyRNG
from dpinfer.privacy.context import ReleaseContext

EPSILONS = (10.0, 1.0, 0.1)
LINREG_BETA = (-1.79497, -2.889, -0.66203)  # Ju et al. (2022) beta*
LINREG_X_MEAN = (0.90014, -1.17335)  # Ju et al. (2022) m*
SIR_THETA = (-0.5, -3.0)  # Xiong et al. (2025) synthetic truth (log beta, log gamma)
NB_THETA_P = (0.3887, 0.7537, 0.6534, 0.5834, 0.8489)  # P(feature=1 | class) x4, P(class 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="src/dpinfer/datasets/data")
    ap.add_argument("--ledger", default="out/make_data_ledger.db")
    ap.add_argument("--seed", type=int, default=20251121)
    args = ap.parse_args()
    out = Path(args.out)
    ledger = Ledger(args.ledger, create=True)
    prng = PrivacyRNG()
    rng = np.random.default_rng(args.seed)

    # -- linear regression ---------------------------------------------------------------------
    x, y = LinearRegression(x_mean=LINREG_X_MEAN).simulate_data(LINREG_BETA, rng)
    with open(out / "linreg_confidential_n100.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["x1", "x2", "y"])
        for row in zip(x[:, 0], x[:, 1], y, strict=True):
            w.writerow([f"{v:.10g}" for v in row])
    rows = []
    for eps in EPSILONS:
        model = LinearRegression(epsilon=eps, x_mean=LINREG_X_MEAN)
        name = f"linreg-synthetic-eps{eps:g}"
        ledger.register(name, epsilon=eps)
        rel = model.mechanism.release(model.statistic(x, y),
                                      context=ReleaseContext(ledger=ledger, dataset=name, privacy_rng=prng))
        rows.append([eps, model.mechanism.sensitivity, *rel.value])
    with open(out / "linreg_released.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "epsilon",
                "sensitivity",
                "mean(y)",
                "mean(x1*y)",
                "mean(x2*y)",
                "mean(y^2)",
                "mean(x1)",
                "mean(x2)",
                "mean(x1^2)",
                "mean(x1*x2)",
                "mean(x2^2)",
            ]
        )
        for r in rows:
            w.writerow([f"{v:.10g}" for v in r])

    # -- SIR -----------------------------------------------------------------------------------
    sir = SIR(population=1_000_000)
    counts = sir.simulate_confidential(np.array([SIR_THETA]), rng)[0]
    with open(out / "sir_synthetic.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["kind", "epsilon", "N", "M", *[f"t={t:g}" for t in sir.times]])
        w.writerow(["confidential_counts", "", "", "", *[f"{int(v)}" for v in counts]])
        for eps in EPSILONS:
            model = SIR(population=1_000_000, epsilon=eps)
            name = f"sir-synthetic-eps{eps:g}"
            ledger.register(name, epsilon=eps)
            rel = model.mechanism.release(counts,
                                          context=ReleaseContext(ledger=ledger, dataset=name,
                                                                 privacy_rng=prng))
            w.writerow(
                [
                    "released_proportion",
                    eps,
                    model.mechanism.n_trials,
                    f"{model.mechanism.M:g}",
                    *[f"{v:.4f}" for v in rel.value],
                ]
            )

    # -- naive Bayes ---------------------------------------------------------------------------
    nb = NaiveBayes(n=100, epsilon=1.0)
    theta = np.log(np.array(NB_THETA_P) / (1 - np.array(NB_THETA_P)))
    cls, feats = nb.simulate_data(theta, rng)
    s = nb.statistic(cls, feats)
    ledger.register("naive-bayes-synthetic", epsilon=1.0)
    rel = nb.mechanism.release(s,
                               context=ReleaseContext(ledger=ledger, dataset="naive-bayes-synthetic",
                                                      privacy_rng=prng))
    with open(out / "naive_bayes_synthetic.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["kind", "epsilon", "n111", "n112", "n121", "n122", "n211", "n212", "n221", "n222"])
        w.writerow(["confidential_proportion", "", *[f"{v:.4f}" for v in s]])
        w.writerow(["released_proportion", 1.0, *[f"{v:.6f}" for v in rel.value]])
    print(f"wrote data to {out}; ledger {args.ledger}")


if __name__ == "__main__":
    main()
