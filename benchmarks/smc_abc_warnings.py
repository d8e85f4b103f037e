"""SMC-ABC's convergence checks on problems with exact posteriors (issue 26; the numbers quoted in
:mod:`dpinfer.inference.smc.convergence`).

For each problem and seed 1-3: the default (adaptive) run's sd over the exact sd, the last two
populations' sd ratio and the warnings; then the paper's absolute schedule on the issue-12 case,
and five Poisson rates released together (5-D statistic, Gamma priors, exact per-coordinate
enumeration), where the default stops on its acceptance floor with sds too wide (issue 26).
Writes ``benchmarks/results/smc_abc_warnings.json``. Run: ``python benchmarks/smc_abc_warnings.py``
(~5 min, serial).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "models")]

from test_user_models_exact import (  # noqa: E402
    CAP,
    NL,
    OBS_COUNT,
    OBS_MEAN,
    SIG,
    UPPER,
    N,
    lognormal_model,
    poisson_model,
)

from dpinfer.inference import smc_abc  # noqa: E402
from dpinfer.models.shipped.gaussian_mean import GaussianMean  # noqa: E402
from user_model_reference import lognormal_gaussian_posterior, poisson_geometric_posterior  # noqa: E402
from user_problems import PoissonClampedSum, TwoClampedMeans  # noqa: E402


def five_rates() -> tuple:
    """Five Poisson rates (Gamma(2, 0.5) priors), each released as a clamped sum of 50 counts (cap
    10) by one 5-D geometric mechanism (L1 sensitivity 50, eps 5): per coordinate the noise of the
    1-D user model (sensitivity 10, eps 1), so the exact posterior factorises into enumerations."""
    from dpinfer.models import GammaPrior, GeometricMechanism, PrivateDataModel

    d = 5
    mech = GeometricMechanism(d, d * CAP, float(d), bounds=([0] * d, [N * CAP] * d))

    def simulate(theta, rng):
        x = rng.poisson(theta[:, None, :], size=(theta.shape[0], N, d))
        return np.minimum(x, CAP).sum(axis=1).astype(float)

    model = PrivateDataModel(GammaPrior([2.0] * d, [0.5] * d), simulate, mech,
                             param_names=[f"rate{j}" for j in range(d)])
    obs = [190.0, 150.0, 240.0, 120.0, 200.0]
    one = GeometricMechanism(1, CAP, 1.0, bounds=([0], [N * CAP]))
    grid = np.linspace(1e-3, 12, 3000)
    sd = [poisson_geometric_posterior(o, N, CAP, one, GammaPrior(2.0, 0.5), grid)[1] for o in obs]
    return model, obs, sd


def problems() -> dict:
    out = {}
    m = PoissonClampedSum()
    e = m.exact_posterior([110.0])
    out["poisson-clamped-sum"] = (m, [110.0], [e.sd])
    m = TwoClampedMeans()
    obs = [0.5, -0.8]
    out["two-clamped-means"] = (m, obs, [x.sd for x in m.exact_marginals(obs)])
    m = poisson_model()
    grid = np.linspace(1e-3, 12, 3000)
    _, sd, _ = poisson_geometric_posterior(OBS_COUNT, N, CAP, m.mechanism, m.prior, grid)
    out["user-poisson-geometric"] = (m, [OBS_COUNT], [sd])
    m = lognormal_model()
    grid = np.linspace(-2, 2, 240)
    _, sd, _ = lognormal_gaussian_posterior(OBS_MEAN, SIG, NL, UPPER, m.mechanism, m.prior, grid)
    out["user-lognormal-gaussian"] = (m, [OBS_MEAN], [sd])
    out["five-poisson-rates"] = five_rates()
    m = GaussianMean(n=100, clamp=(-1.5, 1.5), epsilon=2.0)
    out["issue-12-gaussian-mean"] = (m, [0.4], [m.exact_posterior([0.4], grid_size=301, bins=100).sd])
    return out


def run(model, obs, sd, seed, schedule="adaptive") -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = smc_abc(model, obs, seed=seed, backend="serial", schedule=schedule)
    last, prev = r.populations[-1], r.populations[-2]
    return {
        "seed": seed, "schedule": schedule, "sd_over_exact": (r.sd() / np.array(sd)).round(3).tolist(),
        "last_sd_ratio": (np.array(last.sd) / np.array(prev.sd)).round(3).tolist(),
        "populations": len(r.populations), "n_simulations": r.n_simulations,
        "tolerance_over_spread": round(r.settings["tolerance_over_spread"], 3),
        "tolerance_width_factor": round(r.settings["tolerance_width_factor"], 3),
        "warnings": [f["message"][:60] for f in r.settings["findings"]],
    }


def main() -> None:
    rows = {}
    for name, (model, obs, sd) in problems().items():
        rows[name] = [run(model, obs, sd, s) for s in (1, 2, 3)]
        if name == "issue-12-gaussian-mean":
            rows[name + " (paper schedule)"] = [run(model, obs, sd, s, "paper") for s in (1, 2, 3)]
        print(name, rows[name], flush=True)
    path = ROOT / "benchmarks" / "results" / "smc_abc_warnings.json"
    path.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
