"""The pictures of issue 26 item 5, on a problem with a closed-form posterior.

The problem: a private straight-line fit. ``n = 1000`` confidential records ``y_i = a + b·x_i + e_i``
(``e_i ~ N(0, 1)``, public design ``x_i`` evenly spaced on ``[0, 2]``, ``y`` clamped to ``[-C, C]``,
``C = 10``) are summarised by ``s = (mean y, mean x·y)`` and released with the Gaussian mechanism
(L2 sensitivity ``2C·√5/n`` under replace-one, δ = 10⁻⁶). Prior ``a, b ~ N(0, 1)``. Without the
clamp, ``s | θ ~ N(Aθ, XᵀX/n² + σ_dp² I)`` with ``A = XᵀX/n``, so the posterior given the release is
Gaussian in closed form (:func:`exact_posterior`); the clamp is there for the sensitivity and
almost never binds (the fraction of clamped records over all simulated data sets is counted and
written to ``pictures.json``), so the closed form is exact up to that.

Writes into this folder (about 20 s of CPU):

* ``pair_overlay.png`` — SMC-ABC and importance sampling with the mechanism density against the
  closed form, at ε = 1;
* ``sbc_calibrated.png`` / ``sbc_broken.png`` — SBC (200 replicates, 99 draws) of the
  closed-form posterior (calibrated) and of the naive posterior that ignores the privacy noise
  (too narrow);
* ``privacy_utility.png`` — error of the posterior mean and 95% interval width against ε of the
  closed-form posterior and of the naive one (20 simulated releases per ε; bars ±1 s.e.);
* ``pictures.json`` — the numbers the README quotes;
* with ``--training`` only (about 15 s of CPU more, torch): ``training_sppe.png``, the training
  curves of a 4-round SPPE on the same release (:func:`dpinfer.plots.plot_training`), and its
  numbers in ``training.json``.

Run: ``.venv/bin/python examples/pictures/make_pictures.py [--training]``.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import numpy as np

from dpinfer.diagnostics.calibration import sbc
from dpinfer.inference import mechanism_importance_sampling, smc_abc
from dpinfer.models.contract import PrivateDataModel
from dpinfer.models.posteriors import GaussianPosterior
from dpinfer.models.priors import GaussianPrior
from dpinfer.plots import plot_calibration, plot_pair, plot_privacy_utility
from dpinfer.privacy.mechanisms.gaussian import GaussianMechanism

HERE = Path(__file__).resolve().parent
N, C, DELTA = 1000, 5.0, 1e-6
X = np.linspace(0.0, 2.0, N)
DESIGN = np.column_stack([np.ones(N), X])
TRUTH = np.array([0.3, -0.4])
CLAMPED = [0, 0]  # records clamped, records simulated (all data sets of this script)


class LineFit(PrivateDataModel):
    """The private straight-line fit of the module docstring."""

    name = "line-fit"

    def __init__(self, epsilon: float) -> None:
        self.prior = GaussianPrior([0.0, 0.0], [0.25, 0.25])
        sens = 2 * C * np.sqrt(1 + X.max() ** 2) / N
        self.mechanism = GaussianMechanism(2, sens, epsilon, DELTA)
        self.param_names = ("intercept_a", "slope_b")

    def simulate_confidential(self, theta, seed=None):
        theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        rng = np.random.default_rng(seed)
        y = theta @ DESIGN.T + rng.standard_normal((theta.shape[0], N))
        CLAMPED[0] += int(np.sum(np.abs(y) > C))
        CLAMPED[1] += y.size
        y = np.clip(y, -C, C)
        return y @ DESIGN / N


def exact_posterior(model: LineFit, observed, noise: bool = True) -> GaussianPosterior:
    """The closed form (``noise=False``: the naive posterior that ignores the privacy noise)."""
    a = DESIGN.T @ DESIGN / N
    cov_s = a / N + (model.mechanism.sigma**2 if noise else 0.0) * np.eye(2)
    prec = a.T @ np.linalg.solve(cov_s, a) + np.eye(2) / 0.25
    cov = np.linalg.inv(prec)
    mean = cov @ a.T @ np.linalg.solve(cov_s, np.asarray(observed, dtype=np.float64).reshape(2))
    return GaussianPosterior(mean, cov, model.param_names)


def observed_release(model: LineFit, seed: int) -> np.ndarray:
    """A simulated release at the truth (a simulation study: public seeded randomness)."""
    return np.asarray(model.simulate(TRUTH[None, :], np.random.default_rng(seed)), dtype=np.float64)[0]


def main() -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    facts: dict = {}
    # 1. pair plot: two methods and the closed form at epsilon = 1
    model = LineFit(epsilon=1.0)
    obs = observed_release(model, seed=1)
    exact = exact_posterior(model, obs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        smc = smc_abc(model, obs, n_particles=500, backend="serial", seed=2)
        importance = mechanism_importance_sampling(model, obs, n_theta=1000, n_inner=10, seed=3)
    ref = exact.sample(4000, seed=4)
    plot_pair({"SMC-ABC": smc, "importance sampling": importance}, model.param_names,
              HERE / "pair_overlay.png", reference=ref, reference_label="closed form", truth=TRUTH,
              title=(f"private line fit, Gaussian mechanism ε = 1, δ = 1e-6 "
                     f"(σ_dp = {model.mechanism.sigma:.3g})"),
              note=("n = 1000 records; SMC-ABC: 500 weighted particles; importance sampling (mechanism "
                    "density, 1000 θ × 10 inner simulations); closed form: 4000 exact draws"))
    facts["pair"] = {
        "epsilon": 1.0, "sigma_dp": model.mechanism.sigma,
        "closed_form_mean": exact.mean.tolist(), "closed_form_sd": exact.sd.tolist(),
        "smc_abc_mean": smc.mean().tolist(), "smc_abc_sd": smc.sd().tolist(),
        "importance_mean": importance.mean().tolist(), "importance_sd": importance.sd().tolist(),
    }

    # 2. SBC: the closed form (calibrated) and the naive posterior (ignores the privacy noise)
    for name, noise in (("calibrated", True), ("broken", False)):
        res = sbc(model, lambda o, s, noise=noise: exact_posterior(model, o, noise), 200, 99, seed=5)
        res.method = "closed-form posterior" if noise else "naive posterior (privacy noise ignored)"
        plot_calibration(res, HERE / f"sbc_{name}.png")
        facts[f"sbc_{name}"] = {"verdict": res.verdict(), "passed": res.passed,
                                "coverage_90": res.coverage([0.9])[0].tolist()}

    # 3. privacy-utility: the closed form and the naive posterior, 20 releases per epsilon
    eps = [0.1, 0.3, 1.0, 3.0, 10.0]
    closed, naive = [], []
    for e in eps:
        m = LineFit(epsilon=e)
        obs_e = [observed_release(m, seed=100 + r) for r in range(20)]
        closed.append([_Summary(exact_posterior(m, o)) for o in obs_e])
        naive.append([_Summary(exact_posterior(m, o, noise=False)) for o in obs_e])
    series = {"closed-form posterior": closed, "naive posterior (privacy noise ignored)": naive}
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    plot_privacy_utility(eps, series, reference=TRUTH, metric="error", ax=axes[0],
                         title=f"error of the posterior mean (truth a = {TRUTH[0]}, b = {TRUTH[1]})")
    plot_privacy_utility(eps, series, reference=TRUTH, metric="width", ax=axes[1],
                         title="95% credible interval width")
    fig.suptitle("private line fit, n = 1000, Gaussian mechanism, δ = 1e-6; 20 simulated releases per ε",
                 fontsize=9)
    fig.text(0.01, 0.005, "points: mean over 20 simulated releases at the truth; bars: ±1 standard error",
             fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.04, 1, 0.95))
    fig.savefig(HERE / "privacy_utility.png", dpi=120)
    plt.close(fig)

    def _width(reps):
        return float(np.mean([np.mean(np.diff(p.interval(0.95))) for p in reps]))

    def _cover(reps):  # fraction of (release, parameter) 95% intervals that cover the truth
        return float(np.mean([np.mean((p.interval(0.95)[:, 0] <= TRUTH) & (TRUTH <= p.interval(0.95)[:, 1]))
                              for p in reps]))

    facts["privacy_utility"] = {
        "epsilons": eps,
        "closed_form_width": [_width(r) for r in closed],
        "naive_width": [_width(r) for r in naive],
        "closed_form_coverage_95": [_cover(r) for r in closed],
        "naive_coverage_95": [_cover(r) for r in naive],
    }
    facts["clamped_records"] = {"clamped": CLAMPED[0], "simulated": CLAMPED[1]}
    facts["seconds"] = round(time.perf_counter() - t0, 1)
    facts["cpu_seconds"] = round(time.process_time() - c0, 1)
    (HERE / "pictures.json").write_text(json.dumps(facts, indent=2) + "\n")
    return facts


class _Summary:
    """``mean()`` and ``interval()`` of a closed-form posterior (GaussianPosterior has them as a
    property and a method)."""

    def __init__(self, post: GaussianPosterior) -> None:
        self.post = post

    def mean(self) -> np.ndarray:
        return self.post.mean

    def interval(self, level: float = 0.95) -> np.ndarray:
        return self.post.interval(level)


def training() -> dict:
    """A 4-round SPPE on the ε = 1 release and its training curves (one point per round)."""
    import torch

    from dpinfer.inference.neural import SPPE, NeuralRunOptions
    from dpinfer.plots import plot_training

    torch.set_num_threads(1)
    c0 = time.process_time()
    model = LineFit(epsilon=1.0)
    obs = observed_release(model, seed=1)
    post = SPPE(model, rounds=4, simulations_per_round=500, rqmc_points=4, seed=0,
                run=NeuralRunOptions(progress=False)).fit(obs)
    plot_training(post, HERE / "training_sppe.png",
                  title="SPPE on the private line fit, ε = 1 (4 rounds × 500 simulations, 4 noise copies)")
    exact = exact_posterior(model, obs)
    facts = {
        "rounds": [{"epochs": r.epochs, "best_validation_loss": r.best_validation_loss,
                    "train_loss": r.train_loss} for r in post.rounds],
        "sppe_mean": post.mean().tolist(), "sppe_sd": post.sd().tolist(),
        "closed_form_mean": exact.mean.tolist(), "closed_form_sd": exact.sd.tolist(),
        "cpu_seconds": round(time.process_time() - c0, 1),
    }
    (HERE / "training.json").write_text(json.dumps(facts, indent=2) + "\n")
    return facts


if __name__ == "__main__":
    import sys

    out = main()
    if "--training" in sys.argv[1:]:
        out["training"] = training()
    print(json.dumps(out, indent=2))
