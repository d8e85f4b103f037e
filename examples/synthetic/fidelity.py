"""Synthetic data from released posteriors: fidelity of their summaries at several ε.

COVID-19 NL (N = 18 cumulative counts): ABCDP (c = 5, T = 50 000, exact MMD, ε_abc = 0.05) at
ε in {13, 22, 44} and non-private rejection ABC; 1000 synthetic curves from each release
(``ABCDPResult.synthesize``). Summaries compared with the confidential series: the RMSE of the
mean synthetic curve and the median synthetic final count (confidential: 1705).

Abalone (3341 training records, logistic regression, the DPVI paper's preprocessing): DPVI at
ε in {0.5, 1, 4} (δ = 1e-5, q = 0.05, C = 5, T = 1000) and non-private; 10 000 synthetic records
(``DPVIResult.synthesize``) whose covariates are resampled from the 836 held-out rows (standing in
for public covariates; the training covariates are never used). Summaries: the positive-label
rate and the per-feature difference of class means E[x | y=1] − E[x | y=0], compared with the same
summaries of the confidential training data (max absolute difference over the 8 features).

Synthesis is post-processing: the printed privacy report of each synthetic set is the release's.
``--repeats`` private runs per ε (fresh privacy noise); medians are reported. Writes
fidelity.csv and fidelity.png to --out.
"""

from __future__ import annotations

import argparse
import csv
import warnings
from pathlib import Path

import numpy as np

from dpinfer.datasets import load_abalone
from dpinfer.datasets.abcdp_data import load_covid_nl
from dpinfer.distances import ExactMMD, median_heuristic
from dpinfer.models.data_spec import DataSpec
from dpinfer.models.shipped.covid import CovidPolynomial
from dpinfer.privacy import PrivacyWarning
from dpinfer.release import ArrayDraws, SimulatedDraws, abcdp, rejection_abc_draws
from dpinfer.release.dpvi import DPVI, LogisticRegression, OptimizerOptions, PrivacyOptions, TrainingOptions


def covid_rows(repeats: int, draws: int) -> list[dict]:
    _, observed = load_covid_nl()
    model = CovidPolynomial()
    thetas, sims = SimulatedDraws(model.prior_sample, model.simulate, draws, seed=1,
                                  batch_size=4096).materialize()
    dist = ExactMMD(median_heuristic(sims[:500], seed=1))
    rows = []

    def record(eps, rep, res):
        syn = res.synthesize(1000, seed=rep)
        rep_priv = syn.privacy_report()
        rows.append({"data": "covid", "epsilon": eps, "repeat": rep,
                     "rmse_mean_curve": float(np.sqrt(np.mean((syn.records.mean(0) - observed) ** 2))),
                     "final_count_median": float(np.median(syn.records[:, -1])),
                     "confidential_final_count": float(observed[-1]),
                     "additional_epsilon": rep_priv["additional_epsilon"]})

    ref = rejection_abc_draws(observed, ArrayDraws(thetas, sims, 4096), dist, 0.05, max_accept=5)
    ref.meta["model"] = "covid"
    record("inf", 0, ref)
    for eps in (44.0, 22.0, 13.0):
        for rep in range(repeats):
            res = abcdp(
                observed, ArrayDraws(thetas, sims, 4096), dist, c=5, epsilon_total=eps, epsilon_abc=0.05,
                meta={"model": "covid"},
            )
            record(eps, rep, res)
    return rows


def class_mean_gap(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    return X[y == 1].mean(0) - X[y == 0].mean(0)


def abalone_rows(repeats: int) -> list[dict]:
    d = load_abalone()
    conf_rate, conf_gap = float(d.y_train.mean()), class_mean_gap(d.X_train, d.y_train)
    engine = DPVI(LogisticRegression(d.X_train.shape[1]))
    common = dict(
        optimizer=OptimizerOptions(lr=0.1), training=TrainingOptions(sampling_rate=0.05, steps=1000)
    )
    rows = []
    for eps in ("inf", 4.0, 1.0, 0.5):
        for rep in range(1 if eps == "inf" else repeats):
            if eps == "inf":
                fit = engine.fit(d.X_train, d.y_train, private=False, seed=rep, **common,
                    data=DataSpec(intercept=False))
            else:
                fit = engine.fit(
                    d.X_train, d.y_train, epsilon=eps, delta=1e-5, privacy=PrivacyOptions(clip=5.0), seed=rep,
                    **common, data=DataSpec(intercept=False),
                )
            syn = fit.synthesize(10_000, d.X_test, seed=rep)
            Xs, ys = syn.records[:, :-1], syn.records[:, -1]
            rows.append({"data": "abalone", "epsilon": eps, "repeat": rep,
                         "positive_rate": float(ys.mean()), "confidential_positive_rate": conf_rate,
                         "max_class_mean_gap_error": float(np.max(np.abs(class_mean_gap(Xs, ys) - conf_gap))),
                         "additional_epsilon": syn.privacy_report()["additional_epsilon"]})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--draws", type=int, default=50_000)
    ap.add_argument("--out", default=str(Path(__file__).parent / "out"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():  # an example: the releases are not charged to a ledger
        warnings.simplefilter("ignore", PrivacyWarning)
        rows = covid_rows(args.repeats, args.draws) + abalone_rows(args.repeats)
    with open(out / "fidelity.csv", "w", newline="") as f:
        keys = list(dict.fromkeys(k for r in rows for k in r))
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    table = summarise(rows)
    for line in table:
        print(line)
    plot(rows, out / "fidelity.png")


def _median(rows, data, eps, key):
    return float(np.median([r[key] for r in rows if r["data"] == data and r["epsilon"] == eps]))


def summarise(rows) -> list[str]:
    lines = ["COVID: epsilon | RMSE of mean synthetic curve | median synthetic final count (conf. 1705)"]
    for eps in ("inf", 44.0, 22.0, 13.0):
        lines.append(f"  {eps!s:>5} | {_median(rows, 'covid', eps, 'rmse_mean_curve'):8.1f} | "
                     f"{_median(rows, 'covid', eps, 'final_count_median'):8.1f}")
    conf = next(r for r in rows if r["data"] == "abalone")["confidential_positive_rate"]
    lines.append(f"Abalone: epsilon | positive rate (conf. {conf:.3f}) | max |class-mean gap error|")
    for eps in ("inf", 4.0, 1.0, 0.5):
        lines.append(f"  {eps!s:>5} | {_median(rows, 'abalone', eps, 'positive_rate'):.3f} | "
                     f"{_median(rows, 'abalone', eps, 'max_class_mean_gap_error'):.3f}")
    return lines


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    panels = ((axes[0], "covid", "rmse_mean_curve", "RMSE of mean synthetic curve (cases)"),
              (axes[1], "abalone", "max_class_mean_gap_error", "max |class-mean gap error| (std. units)"))
    for ax, data, key, label in panels:
        finite = {r["epsilon"] for r in rows if r["data"] == data and r["epsilon"] != "inf"}
        eps_list = ["inf", *sorted(finite, reverse=True)]
        for i, eps in enumerate(eps_list):
            vals = [r[key] for r in rows if r["data"] == data and r["epsilon"] == eps]
            ax.plot([i] * len(vals), vals, "o", alpha=0.6, color="C0")
            ax.plot([i], [np.median(vals)], "_", ms=20, color="C3")
        ax.set_xticks(range(len(eps_list)), ["non-private" if e == "inf" else f"ε={e:g}" for e in eps_list])
        ax.set_ylabel(label)
        ax.set_title(data)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
