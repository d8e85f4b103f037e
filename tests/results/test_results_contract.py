"""One result contract for every method: mean(), sample(n, seed), param_names, privacy, save/load.

Every result type round-trips through its own ``load`` and through
``dpinfer.results.format.load_result`` (same type, mean, draws under the same seed, privacy
report); known-broken files (another type, an unknown type, a newer version, content that does
not fit its type, no result at all) are refused with a clear error; files of earlier
formats are refused (no legacy readers); every result exports to ArviZ with its names and privacy
report; and every result class defined in dpinfer is covered here.
"""

from __future__ import annotations

import copy
import json
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

import dpinfer
from dpinfer.datasets import load_abalone
from dpinfer.distances import RFFMMD
from dpinfer.errors import InvalidDataError
from dpinfer.inference import (
    ImportanceResult,
    InferenceResult,
    SMCABCResult,
    TemperedSMCResult,
    mechanism_importance_sampling,
    smc_abc,
    tempered_smc,
)
from dpinfer.inference.exact.baselines import DAMCMCResult, da_mcmc_linreg
from dpinfer.inference.exact.gibbs_ss import GibbsSSResult, gibbs_ss
from dpinfer.inference.glm import GLMPosterior, GLMPosteriorOptions, GLMSamplerOptions
from dpinfer.inference.neural import SPLE, SPPE, NeuralPosterior, SPLEPosterior, SPPEPosterior
from dpinfer.models import GaussianMean, LinearRegression
from dpinfer.models.data_spec import DataSpec
from dpinfer.models.shipped.mixture_uniform import MixtureOfUniforms
from dpinfer.privacy import PrivacyRNG
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release import (
    ABCDPResult,
    ABCResult,
    PrivateSMCResult,
    SimulatedDraws,
    abcdp,
    private_smc_abc,
    rejection_abc,
)
from dpinfer.release.dpvi import DPVI, DPVIResult, LogisticRegression, PrivacyOptions, TrainingOptions
from dpinfer.results.format import FORMAT, PosteriorResult, load_result, read_meta
from dpinfer.results.weighted import WeightedSample

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
            "abcdp": abcdp(
                observed, draws, dist, c=2, epsilon_total=5.0, epsilon_abc=0.2,
                context=ReleaseContext(privacy_rng=_quiet_rng(1)),
            ),
            "smc": smc_abc(gm, [0.6], n_particles=200, schedule=[2.0, 1.0], backend="serial", seed=1,
                           batch_size=200),
            "is": mechanism_importance_sampling(gm, [0.6], n_theta=300, n_inner=2, pilot_theta=100, seed=2),
            "dpvi": DPVI(LogisticRegression(8)).fit(
                d.X_train[:300],
                d.y_train[:300],
                delta=1e-5,
                privacy=PrivacyOptions(noise_multiplier=2.0, clip=1.0),
                training=TrainingOptions(sampling_rate=0.1, steps=20),
                seed=0,
                context=ReleaseContext(privacy_rng=_quiet_rng(2)), data=DataSpec(intercept=False),
            ),
            "sppe": SPPE(gm, flow=SMALL, rounds=1, simulations_per_round=60, atoms=2, rqmc_points=1,
                         training=FAST, seed=0).fit([0.6]),
            "sple": SPLE(gm, flow=SMALL, rounds=1, simulations_per_round=60, rqmc_points=1, training=FAST,
                         seed=0, chains=200, warmup=5, posterior_draws=40).fit([0.6]),  # 200 chains:
            # mean(), sd(), interval() draw 4000 by MCMC each call; 20 steps of 200 chains cost less
            # than 100 steps of 40 (the contract, not the sampling, is checked here)
            "da-mcmc": da_mcmc_linreg(lin, lin.simulate(lin.prior.sample(1, 0), 1)[0], n_samples=50,
                                      burn_in=20, thin=1, seed=0),
            "tempered": tempered_smc(gm, [0.6], n_particles=100, n_inner=10, seed=4),
            "gibbs-ss": gibbs_ss(lin, lin.simulate(lin.prior.sample(1, 0), 1)[0], n_samples=60, burn_in=20,
                                 thin=1, seed=0),
            "infer": dpinfer.infer(gm, [0.6], method="importance", seed=5, backend="serial", warn=False,
                                   n_theta=300, n_inner=2, pilot_theta=100),
            "private-smc": private_smc_abc(
                observed, mix, dist, epsilon_abc_schedule=[0.5, 0.4], c=5, epsilon=20.0, delta=1e-6, seed=1,
                max_draws=20_000, context=ReleaseContext(privacy_rng=_quiet_rng(3)),
            ),
            "glm": dpinfer.private_glm(
                d.X_train[:300, :2], d.y_train[:300], family="logistic", epsilon=2.0,
                delta=1e-6, context=ReleaseContext(privacy_rng=_quiet_rng(4)), seed=0,
                 data=DataSpec(bounds=(-4, 4)),
                 posterior=GLMPosteriorOptions(sampler=GLMSamplerOptions(proposals=500, adapt=1, draws=500,
                                               fallback="none"))
            ),
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
    "tempered": TemperedSMCResult,
    "infer": InferenceResult,
    "private-smc": PrivateSMCResult,
    "glm": GLMPosterior,
    "gibbs-ss": GibbsSSResult,
}


def _saved(res, path):
    out = res.save(path)
    assert isinstance(out, Path)  # save(path) -> Path, for every result
    return out


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
def test_files_of_earlier_formats_are_refused_with_a_clear_error(results, tmp_path):
    """No legacy readers: a pre-format ``.npz``/``.json``/``.pt`` is refused, saying what it needs."""
    smc = results["smc"]
    old = tmp_path / "smc.npz"
    np.savez_compressed(old, meta=np.array(json.dumps({"param_names": list(smc.param_names)})),
                        particles=smc.particles)
    (tmp_path / "old.json").write_text(json.dumps({"n_draws": 1, "epsilon_abc": 0.1, "param_names": ["a"]}))
    torch.save({"meta": "{}"}, tmp_path / "old.pt")
    cases = ((old, SMCABCResult), (tmp_path / "old.json", ABCResult), (tmp_path / "old.pt", SPPEPosterior))
    for path, klass in cases:
        with pytest.raises((InvalidDataError, FileNotFoundError), match="not a dpinfer result|no result"):
            klass.load(path)


def test_abcdp_release_json_is_written_beside_the_result_file(results, tmp_path):
    res = results["abcdp"]
    npz, js = res.save(tmp_path / "release.json"), res.write_release_json(tmp_path / "release.json")
    assert npz == tmp_path / "release.npz" and js == tmp_path / "release.json"
    assert json.loads(js.read_text()) == json.loads(json.dumps(res.release_dict(), default=float))
    assert ABCResult.load(js).privacy == res.privacy  # read from the .npz beside it


@pytest.mark.parametrize("key", list(TYPES))
def test_every_result_exports_to_arviz_with_names_and_privacy(results, key):
    az = pytest.importorskip("arviz")
    res = results[key]
    idata = res.to_arviz(n_draws=50, seed=3)
    assert isinstance(idata, az.InferenceData)
    assert list(idata.posterior.data_vars) == list(res.param_names)
    assert idata.posterior[res.param_names[0]].size == 50  # SPLE: its chains, 50 draws in all
    if res.privacy is not None:
        attrs = idata.posterior.attrs
        assert attrs["epsilon"] == pytest.approx(res.privacy.epsilon)
        assert json.loads(attrs["privacy_report"]) == json.loads(json.dumps(res.privacy.to_dict()))


def test_every_result_class_is_covered_by_the_contract_tests():
    """A new result type without a fixture here fails (every ResultFile subclass in dpinfer)."""
    import importlib
    import pkgutil

    import dpinfer
    from dpinfer.results.format import ResultFile

    for mod in pkgutil.walk_packages(dpinfer.__path__, "dpinfer."):
        if ".cli" not in mod.name and ".demo" not in mod.name:
            importlib.import_module(mod.name)

    def subclasses(k):
        for s in k.__subclasses__():
            yield s
            yield from subclasses(s)

    defined = {k for k in subclasses(ResultFile) if k.__module__.startswith("dpinfer.")}
    covered = set(TYPES.values()) | {WeightedSample, NeuralPosterior}  # bases with no results of their own
    assert defined - covered == set()


# -- display: repr and _repr_html_ (issue 40 item 1) -------------------------------------------------
def _html_tags(text):
    """The start/end tags of an HTML fragment, checked to nest (html.parser)."""
    from html.parser import HTMLParser

    stack, void = [], {"br", "hr", "img", "meta", "input"}

    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag not in void:
                stack.append(tag)

        def handle_endtag(self, tag):
            assert stack and stack.pop() == tag, f"</{tag}> closes nothing open"

    P().feed(text)
    assert stack == [], f"unclosed tags {stack}"


@pytest.mark.parametrize("key", list(TYPES))
def test_every_result_has_a_readable_repr_and_html(results, key):
    res = results[key]
    stored = vars(res).get("draws")
    text, page = repr(res), res._repr_html_()
    assert vars(res).get("draws") is stored  # a display leaves the result as it was (SPLE's chains)
    for out in (text, page):
        assert "object at 0x" not in out and "array(" not in out
        assert type(res).__name__ in out and res.param_names[0] in out
    assert len(text) < 400 and "\n" not in text  # one compact line
    if res.privacy is not None:
        eps = f"{res.privacy.epsilon:.4g}"
        assert f"ε = {eps}" in text and f"ε = {eps}" in page and res.privacy.accountant in page
    else:
        assert "no privacy release" in text and "NON-PRIVATE" in page
    _html_tags(page)
    assert "<table>" in page and page.count("<tr>") == len(res.param_names) + 1  # header + one per parameter
