"""One result contract for every method: mean(), sample(n, seed), param_names, privacy, save/load.

Every result type round-trips through its own ``load`` and through
``dpinfer.results.format.load_result`` (same type, mean, draws under the same seed, privacy
report); known-broken files (another type, an unknown type, a newer version, content that does
not fit its type, no result at all) are refused with a clear error; the files of earlier
versions are still read, with a DeprecationWarning.
"""

from __future__ import annotations

import copy
import json
import warnings
import zipfile

import numpy as np
import pytest
import torch

from dpinfer.datasets import load_abalone
from dpinfer.distances import RFFMMD
from dpinfer.errors import InvalidDataError
from dpinfer.inference import ImportanceResult, SMCABCResult, mechanism_importance_sampling, smc_abc
from dpinfer.inference.exact.baselines import DAMCMCResult, da_mcmc_linreg
from dpinfer.inference.neural import SPLE, SPPE, SPLEPosterior, SPPEPosterior
from dpinfer.models import GaussianMean, LinearRegression
from dpinfer.models.shipped.mixture_uniform import MixtureOfUniforms
from dpinfer.privacy import PrivacyRNG
from dpinfer.release import ABCDPResult, ABCResult, SimulatedDraws, abcdp, rejection_abc
from dpinfer.release.dpvi import DPVI, DPVIResult, LogisticRegression
from dpinfer.results.format import FORMAT, PosteriorResult, load_result, read_meta

SMALL = {"kind": "nsf", "transforms": 1, "hidden": 8, "blocks": 1, "bins": 4}
FAST = {"max_epochs": 3, "patience": 2}


def _quiet_rng(seed: int) -> PrivacyRNG:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivacyRNG.insecure_deterministic(seed)


@pytest.fixture(scope="module")
def results() -> dict[str, object]:
    """One small result of every type."""
    gm = GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5)
    mix = MixtureOfUniforms(n_points=100)
    observed = MixtureOfUniforms(n_points=200).observed(seed=1)
    dist = RFFMMD(bandwidth=0.6, n_features=10, seed=0)
    draws = SimulatedDraws(mix.prior_sample, mix.simulate, 150, seed=7, batch_size=64).materialize()
    d = load_abalone()
    lin = LinearRegression(n=20, epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {
            "abc": rejection_abc(observed, mix.prior_sample, mix.simulate, dist, 0.2, 120, seed=3),
            "abcdp": abcdp(observed, draws, dist, 2, 5.0, 0.2, privacy_rng=_quiet_rng(1)),
            "smc": smc_abc(gm, [0.6], n_particles=200, schedule=[2.0, 1.0], backend="serial", seed=1,
                           batch_size=200),
            "is": mechanism_importance_sampling(gm, [0.6], n_theta=300, n_inner=2, pilot_theta=100, seed=2),
            "dpvi": DPVI(LogisticRegression(8)).fit(
                d.X_train[:300], d.y_train[:300], noise_multiplier=2.0, delta=1e-5, clip=1.0,
                sampling_rate=0.1, steps=20, seed=0, privacy_rng=_quiet_rng(2),
            ),
            "sppe": SPPE(gm, flow=SMALL, rounds=1, simulations_per_round=60, atoms=2, rqmc_points=1,
                         training=FAST, seed=0).fit([0.6]),
            "sple": SPLE(gm, flow=SMALL, rounds=1, simulations_per_round=60, rqmc_points=1, training=FAST,
                         seed=0, chains=2, warmup=5, posterior_draws=20).fit([0.6]),
            "da-mcmc": da_mcmc_linreg(lin, lin.simulate(lin.prior.sample(1, 0), 1)[0], n_samples=50,
                                      burn_in=20, thin=1, seed=0),
        }
    return out


TYPES = {
    "abc": ABCResult,
    "abcdp": ABCDPResult,
    "smc": SMCABCResult,
    "is": ImportanceResult,
    "dpvi": DPVIResult,
    "sppe": SPPEPosterior,
    "sple": SPLEPosterior,
    "da-mcmc": DAMCMCResult,
}


def _saved(res, path):
    out = res.save(path)
    return out[0] if isinstance(out, tuple) else out  # ABC results also write a readable .json copy


def _sample(res, n=20, seed=5):
    if isinstance(res, SPLEPosterior):
        return res.sample(n, seed=seed)
    return res.sample(n, seed)


@pytest.mark.parametrize("key", list(TYPES))
def test_every_result_satisfies_the_contract(results, key):
    res = results[key]
    assert isinstance(res, TYPES[key]) and isinstance(res, PosteriorResult)
    mean = res.mean()  # a method everywhere
    assert callable(res.mean) and np.asarray(mean).shape == (len(res.param_names),)
    assert _sample(res).shape == (20, len(res.param_names))
    if key != "abc":
        assert res.privacy is not None and res.privacy.epsilon > 0
    else:
        assert res.privacy is None


@pytest.mark.parametrize("key", list(TYPES))
def test_every_result_has_sd_and_interval(results, key):
    """One posterior interface (issue 12): sd() and interval() on every result type."""
    res = results[key]
    dim = len(res.param_names)
    sd, ci = np.asarray(res.sd()), np.asarray(res.interval(0.9))
    assert sd.shape == (dim,) and np.all(sd > 0)
    assert ci.shape == (dim, 2) and np.all(ci[:, 0] < ci[:, 1])


@pytest.mark.parametrize("key", list(TYPES))
def test_every_result_round_trips_through_one_format(results, key, tmp_path):
    res = results[key]
    path = _saved(res, tmp_path / key)
    assert path.suffix == ".npz" and zipfile.is_zipfile(path)
    meta = read_meta(path)
    assert meta["format"] == FORMAT and meta["version"] == 1 and meta["type"] == type(res).__name__
    assert meta["param_names"] == list(res.param_names)
    for back in (type(res).load(path), load_result(path)):
        ref = copy.deepcopy(res)  # SPLE's sample() restarts its chains from the draws it last stored
        assert type(back) is type(ref) and back.param_names == ref.param_names
        assert back.privacy == ref.privacy
        np.testing.assert_array_equal(back.mean(), ref.mean())
        np.testing.assert_array_equal(_sample(back), _sample(ref))


def test_a_file_of_another_type_is_refused(results, tmp_path):
    smc = _saved(results["smc"], tmp_path / "smc")
    with pytest.raises(InvalidDataError, match="holds a SMCABCResult, not a ImportanceResult"):
        ImportanceResult.load(smc)
    with pytest.raises(InvalidDataError, match="not a DPVIResult"):
        DPVIResult.load(smc)
    with pytest.raises(InvalidDataError, match="not a SPPEPosterior"):
        SPPEPosterior.load(_saved(results["sple"], tmp_path / "sple"))
    with pytest.raises(InvalidDataError, match="not a ABCResult"):
        ABCResult.load(smc)
    # a subclass's file reads through its base class
    assert isinstance(ABCResult.load(_saved(results["abcdp"], tmp_path / "rel")), ABCDPResult)


def _rewrite_meta(path, **changes):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("meta")))
    meta.update(changes)
    with open(path, "wb") as f:
        np.savez(f, meta=np.array(json.dumps(meta)), **arrays)


def test_known_broken_files_are_refused_with_a_clear_error(results, tmp_path):
    # the meta names another type than the content: its own load refuses, load_result says why
    path = _saved(results["dpvi"], tmp_path / "fit")
    _rewrite_meta(path, type="SMCABCResult", module="dpinfer.inference.smc.result")
    with pytest.raises(InvalidDataError, match="holds a SMCABCResult, not a DPVIResult"):
        DPVIResult.load(path)
    with pytest.raises(InvalidDataError, match="does not fit the type it names, SMCABCResult"):
        load_result(path)
    # an unknown type, a type outside dpinfer, a newer version
    path = _saved(results["is"], tmp_path / "is")
    _rewrite_meta(path, type="Nope", module="os")
    with pytest.raises(InvalidDataError, match="unknown result type 'Nope'"):
        load_result(path)
    _rewrite_meta(path, type="ImportanceResult", version=2)
    with pytest.raises(InvalidDataError, match="version 2 is newer"):
        ImportanceResult.load(path)
    # not a result file at all
    other = tmp_path / "x.npz"
    np.savez(other, a=np.zeros(3))
    with pytest.raises(InvalidDataError, match="not a dpinfer result file"):
        load_result(other)
    with pytest.raises(InvalidDataError, match="not a dpinfer result file"):
        SMCABCResult.load(other)
    with pytest.raises(FileNotFoundError):
        load_result(tmp_path / "missing")


def test_a_path_is_written_as_given_and_found_without_its_suffix(results, tmp_path):
    res = results["smc"]
    assert res.save(tmp_path / "run") == tmp_path / "run.npz"
    assert res.save(tmp_path / "run.data") == tmp_path / "run.data"
    np.testing.assert_array_equal(SMCABCResult.load(tmp_path / "run").particles, res.particles)
    np.testing.assert_array_equal(load_result(tmp_path / "run.data").weights, res.weights)


# ---- files of earlier versions: still read for one release -------------------------------------
def test_old_smc_and_importance_files_are_read(results, tmp_path):
    smc, imp = results["smc"], results["is"]
    old = tmp_path / "smc.npz"
    meta = {"populations": [vars(p) for p in smc.populations], "param_names": list(smc.param_names),
            "settings": smc.settings, "complete": True, "stop_reason": "",
            "privacy": smc.privacy.to_dict(), "model": smc.model}
    np.savez_compressed(old, meta=np.array(json.dumps(meta)), particles=smc.particles,
                        weights=smc.weights, distances=smc.distances, observed=smc.observed)
    with pytest.warns(DeprecationWarning, match="before the dpinfer.result format"):
        back = SMCABCResult.load(old)
    np.testing.assert_array_equal(back.mean(), smc.mean())
    assert back.privacy == smc.privacy
    old = tmp_path / "is.npz"
    meta = {"param_names": list(imp.param_names), "n_simulations": imp.n_simulations,
            "settings": imp.settings, "diagnostics": imp.diagnostics}
    np.savez_compressed(old, meta=np.array(json.dumps(meta)), particles=imp.particles,
                        log_weights=imp.log_weights, log_likelihood=imp.log_likelihood, observed=imp.observed)
    with pytest.warns(DeprecationWarning):
        back = ImportanceResult.load(old)
    np.testing.assert_array_equal(back.sample(10, 1), imp.sample(10, 1))
    with pytest.raises(InvalidDataError, match="not a dpinfer result file"):
        load_result(old)  # only the type's own load knows its old format


def test_old_abcdp_pair_and_cli_release_json_are_read(results, tmp_path):
    res = results["abcdp"]
    np.savez(tmp_path / "old.npz", accepted=res.accepted, accepted_index=res.accepted_index)
    (tmp_path / "old.json").write_text(json.dumps(res._json(), default=float))
    with pytest.warns(DeprecationWarning):
        back = ABCResult.load(tmp_path / "old")
    assert isinstance(back, ABCDPResult) and back.privacy == res.privacy
    np.testing.assert_array_equal(back.accepted, res.accepted)
    # the .json that save writes next to the .npz is the release document the CLI publishes
    npz, js = res.save(tmp_path / "new")
    assert json.loads(js.read_text()) == json.loads(json.dumps(res.release_dict(), default=float))
    assert ABCResult.load(js).privacy == res.privacy  # read from the .npz beside it, no warning
    (tmp_path / "release.json").write_text(json.dumps(res.release_dict(), default=float))
    with pytest.warns(DeprecationWarning, match="release JSON"):
        back = ABCDPResult.load(tmp_path / "release.json")
    np.testing.assert_array_equal(back.mean(), res.mean())
    assert back.c == res.c and back.b == res.b and back.privacy == res.privacy


def test_old_neural_torch_file_is_read(results, tmp_path):
    post = results["sple"]
    fields, arrays = post._to_record()
    meta = {**fields, "param_names": list(post.param_names), "observed": post.observed.tolist(),
            "privacy": post.privacy.to_dict()}
    torch.save({"meta": json.dumps(meta), "state_dict": post.flow.state_dict(),
                "draws": torch.as_tensor(post.draws)}, tmp_path / "old.pt")
    with pytest.warns(DeprecationWarning, match="neural posterior"):
        back = SPLEPosterior.load(tmp_path / "old.pt")
    np.testing.assert_array_equal(back.draws, post.draws)
    np.testing.assert_allclose(back.log_prob([[0.5]]), post.log_prob([[0.5]]))
    with pytest.raises(InvalidDataError, match="not a sppe"):
        SPPEPosterior.load(tmp_path / "old.pt")
