"""Seeded fingerprints of the runs the issue-#37 refactor (w-seams) touched, for a before/after
bit-identity check: ``python benchmarks/seams_bit_identity.py > out.json`` on both trees and diff.

smc_abc (short run on the shipped Gaussian-mean model), mechanism_importance_sampling, an SPPE fit
with tiny settings, and ABCDP's threshold noise under a fixed test PrivacyRNG.  Each value is a
SHA-256 of the raw float64 bytes, so "identical" means bit for bit.

``--releases`` runs only the releases under a fixed test PrivacyRNG (ABCDP, the private SMC-ABCs,
``privacy.laplace``/``gaussian``, a mechanism's release, the clamped and streamed means, the GLM
statistic and ``private_glm``, the covariate model and a DPVI fit): the check of issue 37 item 4
(one calling convention). It also runs on the tree before that change, where ``laplace`` and
``gaussian`` took ``rng`` and returned a ``(value, event)`` tuple (:func:`_grid_release`).
"""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def _h(*arrays: object) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a, dtype=np.float64)).tobytes())
    return h.hexdigest()[:16]


def main() -> dict[str, str]:
    from dpinfer.inference.exact.importance import mechanism_importance_sampling
    from dpinfer.inference.neural import SPPE
    from dpinfer.inference.smc.schedule import QuantileSchedule
    from dpinfer.inference.smc.smc_abc import smc_abc
    from dpinfer.models.shipped.gaussian_mean import GaussianMean

    out: dict[str, str] = {}
    model = GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5, prior_sd=1.0, noise_sd=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = smc_abc(model, [1.3], n_particles=300, schedule=QuantileSchedule(alpha=0.5, max_populations=4),
                      backend="serial", seed=11)
        out["smc_abc"] = _h(res.particles, res.weights, res.tolerances if hasattr(res, "tolerances") else 0)
        res = smc_abc(model, [1.3], n_particles=200, backend="serial", seed=5, max_simulations=20_000)
        out["smc_abc_adaptive"] = _h(res.particles, res.weights)
        imp = mechanism_importance_sampling(model, [1.3], n_theta=3000, n_inner=20, seed=3, pilot_theta=1000,
                                            pilot_inner=10)
        out["mechanism_is"] = _h(imp.particles, imp.weights)
        imp = mechanism_importance_sampling(model, [1.3], n_theta=2000, n_inner=20, seed=4, proposal="prior")
        out["mechanism_is_prior"] = _h(imp.particles, imp.weights)
        flow = {"kind": "nsf", "transforms": 1, "hidden": 8, "blocks": 1, "bins": 4}
        post = SPPE(model, flow=flow, rounds=2, simulations_per_round=40, rqmc_points=2, atoms=3,
                    training={"max_epochs": 3, "patience": 2}, seed=0).fit([0.6])
        out["sppe"] = _h(post.sample(200, seed=1))
        from dpinfer.inference.neural import SPLE, sple_mle

        post = SPLE(model, flow=flow, rounds=1, simulations_per_round=40, rqmc_points=2, chains=4, warmup=5,
                    posterior_draws=40, training={"max_epochs": 3, "patience": 2}, seed=0).fit([0.6])
        out["sple"] = _h(post.draws)
        mle = sple_mle(post)
        out["sple_mle"] = _h(mle.theta, mle.se, mle.log_likelihood, mle.n_distinct_optima)
    out.update(_abcdp())
    out.update(_more(model))
    return out


def _more(model: object) -> dict[str, str]:
    """The other refactored loops: slice sampling, tempered SMC, an SPLE fit, c2st."""
    from dpinfer.diagnostics import c2st
    from dpinfer.inference.exact.tempered import tempered_smc
    from dpinfer.inference.neural.mcmc import slice_sample

    out = {}
    rng = np.random.default_rng(0)
    draws = slice_sample(lambda x: -0.5 * np.sum(x**2, axis=1) - np.abs(x[:, 0]), rng.normal(size=(6, 2)), 40,
                         seed=2, warmup=20)
    out["slice_sample"] = _h(draws)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = tempered_smc(model, [1.3], n_particles=200, n_inner=10, seed=4)
        out["tempered_smc"] = _h(res.particles, res.weights)
        out["c2st"] = _h(c2st(rng.normal(size=(300, 2)), rng.normal(0.2, 1, size=(300, 2)), seed=1))
    return out


def _abcdp() -> dict[str, str]:
    from dpinfer.distances import RFFMMD
    from dpinfer.models.shipped.mixture_uniform import MixtureOfUniforms
    from dpinfer.privacy.context import ReleaseContext
    from dpinfer.release import ABCDPOptions, SimulatedDraws, abcdp
    from seeded_privacy_rng import prng

    model = MixtureOfUniforms(n_points=200)
    observed = MixtureOfUniforms(n_points=400).observed(seed=1)
    thetas, sims = SimulatedDraws(model.prior_sample, model.simulate, 150, seed=7,
                                   batch_size=64).materialize()
    dist = RFFMMD(bandwidth=0.6, n_features=20, seed=0)
    out = {}
    for resample in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = abcdp(observed, (thetas, sims), dist, c=5, epsilon_total=2.0, epsilon_abc=0.1,
                        options=ABCDPOptions(resample=resample), context=ReleaseContext(privacy_rng=prng(0)))
        fields = [res.b, res.n_accepted, res.n_draws, res.accepted_index]
        for name in ("noisy_threshold", "threshold_noise", "rho"):
            if getattr(res, name, None) is not None:
                fields.append(getattr(res, name))
        out[f"abcdp_resample={resample}"] = _h(*fields)
    out.update(_private_smc(prng))
    return out


def _private_smc(prng: object) -> dict[str, str]:
    """The two private SMC-ABC releases, under fixed test PrivacyRNGs."""
    from dpinfer.datasets.abcdp_data import load_covid_nl
    from dpinfer.distances import ExactMMD
    from dpinfer.models.shipped.covid import CovidPolynomial
    from dpinfer.privacy.context import ReleaseContext
    from dpinfer.release import gaussian_weights_smc_abc, private_smc_abc

    _, observed = load_covid_nl()
    model, dist = CovidPolynomial(), ExactMMD(900.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = ReleaseContext(privacy_rng=prng(2))  # type: ignore[operator]
        res = private_smc_abc(observed, model, dist, epsilon_abc_schedule=[3.0, 2.0], c=5, epsilon=44.0,
                              delta=1e-6, seed=1, context=ctx)
        a = _h(res.particles if hasattr(res, "particles") else res.theta, res.weights)
        ctx = ReleaseContext(privacy_rng=prng(2))  # type: ignore[operator]
        res = gaussian_weights_smc_abc(observed, model, dist, n_particles=50, n_populations=3, epsilon=6.0,
                                       delta=1e-6, seed=1, context=ctx)
        b = _h(res.particles if hasattr(res, "particles") else res.theta, res.weights)
    return {"private_smc_abc": a, "gaussian_weights_smc_abc": b}


def _grid_release(fn: object, *args: object, context: object) -> object:
    """``laplace``/``gaussian`` with ``context=`` (after issue 37 item 4), or with the privacy RNG
    as the argument after the statistic's parameters (before it): the released value."""
    try:
        return fn(*args, context=context).value  # type: ignore[operator]
    except TypeError as exc:
        if "context" not in str(exc):
            raise
        value, _ = fn(*args, context.privacy_rng)  # type: ignore[operator, attr-defined]
        return value


def _releases() -> dict[str, str]:
    """Every release entry point converted to ``context=ReleaseContext(...)`` (issue 37 item 4)."""
    from dpinfer.privacy import gaussian, laplace
    from dpinfer.privacy.context import ReleaseContext
    from dpinfer.privacy.mechanisms import GaussianMechanism, LaplaceMechanism
    from dpinfer.privacy.mechanisms.clamped import clamped_release
    from dpinfer.release.streaming import clamped_mean
    from seeded_privacy_rng import prng

    def ctx(seed: int) -> ReleaseContext:
        return ReleaseContext(privacy_rng=prng(seed))

    out: dict[str, str] = {}
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["laplace"] = _h(_grid_release(laplace, 3.25, 1.0, 0.5, context=ctx(1)),
                            _grid_release(laplace, rng.normal(size=5), 2.0, 1.5, context=ctx(2)))
        out["gaussian"] = _h(_grid_release(gaussian, 3.25, 1.0, 0.5, 1e-6, context=ctx(3)),
                             _grid_release(gaussian, rng.normal(size=5), 2.0, 1.5, 1e-6, context=ctx(4)))
        lap, gau = LaplaceMechanism(2, 1.0, 1.0), GaussianMechanism(3, 1.0, 1.0, 1e-6)
        out["laplace_mechanism"] = _h(lap.release(np.array([0.3, -1.2]), context=ctx(5)).value)
        out["gaussian_mechanism"] = _h(gau.release(np.array([0.3, -1.2, 2.0]), context=ctx(6)).value)
        x = rng.uniform(-1, 3, size=200)
        rel = clamped_release("mean", 0.0, 2.0, 1.0, n=200)
        out["clamped_mean_records"] = _h(rel.release_records(x, context=ctx(7)).value)
        out["clamped_mean_streamed"] = _h(clamped_mean({"v": x}, column="v", lower=0.0, upper=2.0, n=200,
                                                       epsilon=1.0, chunk_rows=64, context=ctx(7)).value)
        out.update(_glm_and_synthesis(ctx))
        out.update(_dpvi(ctx))
    return out


def _glm_and_synthesis(ctx: object) -> dict[str, str]:
    from dpinfer.models.data_spec import DataSpec
    from dpinfer.pipelines.glm import GLMPosteriorOptions, GLMSamplerOptions, private_glm
    from dpinfer.release.glm import release_glm_statistics
    from dpinfer.release.synthesis import release_covariate_model

    rng = np.random.default_rng(1)
    X = rng.uniform(10, 30, size=(300, 2))
    y = (rng.uniform(size=300) < 1 / (1 + np.exp(-(X[:, 0] - 20) / 5))).astype(float)
    spec = DataSpec(bounds=[(10, 30), (10, 30)])
    rel = release_glm_statistics(X, y, family="logistic", epsilon=1.0, delta=1e-6, data=spec,
                                 context=ctx(8))  # type: ignore[operator]
    fit = private_glm(X, y, family="logistic", epsilon=1.0, delta=1e-6, data=spec, seed=0,
                      posterior=GLMPosteriorOptions(sampler=GLMSamplerOptions(proposals=500, draws=200)),
                      context=ctx(9))  # type: ignore[operator]
    cov = release_covariate_model(X, bounds=[(10, 30), (10, 30)], epsilon=1.0, bins=8,
                                  context=ctx(10))  # type: ignore[operator]
    return {"release_glm_statistics": _h(rel.z, rel.sigma), "private_glm": _h(fit.draws),
            "release_covariate_model": _h(*cov.counts)}


def _dpvi(ctx: object) -> dict[str, str]:
    from dpinfer.datasets import load_abalone
    from dpinfer.release.dpvi import DPVI, DataSpec, LogisticRegression, PrivacyOptions, TrainingOptions

    ab = load_abalone()
    fit = DPVI(LogisticRegression(8)).fit(
        ab.X_train[:300], ab.y_train[:300], delta=1e-5, seed=0, context=ctx(11),  # type: ignore[operator]
        privacy=PrivacyOptions(noise_multiplier=3.0, clip=1.0),
        training=TrainingOptions(sampling_rate=0.1, steps=20), data=DataSpec(intercept=False),
    )
    return {"dpvi_fit": _h(fit.params)}


if __name__ == "__main__":
    if "--releases" in sys.argv[1:]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = {**_abcdp(), **_releases()}
        print(json.dumps(result, indent=1, sort_keys=True))
    else:
        print(json.dumps(main(), indent=1, sort_keys=True))
