"""Wall time of the default private-GLM posterior at D = 6 and D = 10 (issue 39, items 1–2): main's
sampler path against this one, on the same releases and the same machine load.

Cases (one release each, the insecure deterministic PrivacyRNG of the tests: reproducible):

* ``mixed10-5000-10-r{0,1}``: the ten-feature design of ``examples/private_glm/sbc_designs.py``
  (4 binary, a 3-level category, 2 uniform, 2 skewed; logistic, n = 5000, ε = 10), replicates 0, 1;
* ``cont10-5000-10-r0``: ten continuous features (5 uniform, 5 skewed), same settings;
* ``survey-6366-1``: the six-feature survey of ``examples/private_glm/survey_ess.py`` (ε = 1).

Per case: ``glm_posterior(release, prior=..., seed=0)`` with the default options (moment-matched
covariates, importance sampling with the HMC fallback), one thread; the seconds, the sampler that
produced the draws, the importance ESS and Pareto k̂, and the posterior mean and sd of θ.

Run the same script on both code paths, one after the other, and label them::

    PYTHONPATH=/path/to/main/src nice -n 10 python benchmarks/glm_speed.py --label before
    PYTHONPATH=$PWD/src nice -n 10 python benchmarks/glm_speed.py --label after

Writes (merged by label) ``benchmarks/results/glm_speed.json``. Not a test: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "examples" / "private_glm"))

from sbc_designs import PRIOR, design  # noqa: E402
from survey_ess import survey_data  # noqa: E402

import dpinfer  # noqa: E402
from dpinfer.inference.glm import glm_posterior  # noqa: E402
from dpinfer.models.data_spec import DataSpec  # noqa: E402
from dpinfer.privacy.context import ReleaseContext  # noqa: E402
from dpinfer.release.glm import release_glm_statistics  # noqa: E402
from seeded_privacy_rng import prng  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "glm_speed.json"
CASES = ["mixed10-5000-10-r0", "mixed10-5000-10-r1", "cont10-5000-10-r0", "survey-6366-1"]


def sbc_release(name: str, n: int, eps: float, r: int) -> tuple:
    cell = f"{name}-{n}-{eps:g}"
    pr = PRIOR["logistic"]
    rng = np.random.default_rng([zlib.crc32(cell.encode()), r])
    X = design(name, n, rng)
    theta = np.concatenate([[rng.normal(0, pr.intercept_sd)], rng.normal(0, pr.coef_sd, X.shape[1])])
    eta = theta[0] + (2 * X - 1) @ theta[1:]
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release_glm_statistics(X, y, family="logistic", epsilon=eps, delta=1e-6,
                                     context=ReleaseContext(privacy_rng=prng(r)),
                                     data=DataSpec(bounds=(0, 1)))
    return rel, pr


def survey_release() -> tuple:
    X, y, bounds = survey_data()  # the data of examples/private_glm/survey_ess.py
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release_glm_statistics(X, y, family="logistic", epsilon=1.0, delta=1e-6,
                                     context=ReleaseContext(privacy_rng=prng(6366)),
                                     data=DataSpec(bounds=bounds))
    return rel, None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True)
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    torch.set_num_threads(1)
    src = str(Path(dpinfer.__file__).resolve().parents[1])
    try:
        commit = subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip()
    except OSError:
        commit = ""
    rows = {}
    for case in args.cases.split(","):
        if case.startswith("survey"):
            rel, pr = survey_release()
        else:
            name, n, eps, r = case.split("-")
            rel, pr = sbc_release(name, int(n), float(eps), int(r[1:]))
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            post = glm_posterior(rel, prior=pr, seed=0)
        sec = time.perf_counter() - t0
        dg = post.diagnostics
        flat = post.flat
        rows[case] = {"seconds": sec, "method": dg.get("method"), "fallback": dg.get("fallback"),
                      "ess": dg.get("ess"), "pareto_khat": dg.get("pareto_khat"),
                      "max_rhat": dg.get("max_rhat"),
                      "mean": flat.mean(0).tolist(), "sd": flat.std(0, ddof=1).tolist(),
                      "warnings": sorted({w.category.__name__ for w in caught})}
        print(case, f"{sec:.1f} s", dg.get("method"), dg.get("ess"), dg.get("pareto_khat"), flush=True)  # noqa: T201
    res = json.loads(OUT.read_text()) if OUT.exists() else {}
    res[args.label] = {"src": src, "commit": commit, "machine": platform.processor() or platform.machine(),
                       "threads": 1, "load_1min_at_end": float(Path("/proc/loadavg").read_text().split()[0])
                       if Path("/proc/loadavg").exists() else None, "cases": rows}
    OUT.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
