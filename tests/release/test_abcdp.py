"""ABCDP (Algorithm 1): noise scale, stopping, agreement with rejection ABC, ledger, results."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpinfer.distances import RFFMMD, Distance, as_batch, as_points
from dpinfer.errors import InferenceWarning, InvalidDataError
from dpinfer.models.shipped.mixture_uniform import MixtureOfUniforms
from dpinfer.privacy import (
    BudgetExceededError,
    InvalidPrivacyParameterError,
    Ledger,
    SparseVectorEvent,
)
from dpinfer.privacy.context import ReleaseContext
from dpinfer.privacy.mechanisms import SparseVector
from dpinfer.privacy.mechanisms.svt import _svt_pass
from dpinfer.release import (
    ABCDPOptions,
    ABCDPResult,
    ABCResult,
    ArrayDraws,
    SimulatedDraws,
    abcdp,
    rejection_abc,
    rejection_abc_draws,
)
from seeded_privacy_rng import prng


@pytest.fixture(scope="module")
def toy():
    """A small toy stream: N = 400 observed points, T = 300 draws of 200 points, D = 20."""
    model = MixtureOfUniforms(n_points=200)
    observed = MixtureOfUniforms(n_points=400).observed(seed=1)
    draws = SimulatedDraws(model.prior_sample, model.simulate, 300, seed=7, batch_size=64)
    thetas, sims = draws.materialize()
    dist = RFFMMD(bandwidth=0.6, n_features=20, seed=0)
    return observed, thetas, sims, dist


@pytest.mark.parametrize("resample", [False, True])
@pytest.mark.parametrize("c", [1, 5])
def test_noise_scale_is_theorem_1(toy, c, resample):
    observed, thetas, sims, dist = toy
    res = abcdp(
        observed, (thetas, sims), dist, c=c, epsilon_total=2.0, epsilon_abc=0.1,
        options=ABCDPOptions(resample=resample), context=ReleaseContext(privacy_rng=prng(0)),
    )
    n = observed.shape[0]
    expected = (2 * c if resample else c + 1) * (2.0 / n) / 2.0
    assert res.b == pytest.approx(expected, rel=1e-12)
    assert res.privacy.epsilon == pytest.approx(2.0)
    assert res.privacy.accountant == "pure"
    assert res.privacy.sensitivity == pytest.approx(2.0 / n)
    assert res.privacy.events == (SparseVectorEvent(c, 2.0, resample),)


@pytest.mark.parametrize("resample", [False, True])
def test_stops_after_c_acceptances(toy, resample):
    observed, thetas, sims, dist = toy
    # a huge threshold accepts everything: the run must stop at the c-th draw
    res = abcdp(
        observed, (thetas, sims), dist, c=7, epsilon_total=1.0, epsilon_abc=100.0,
        options=ABCDPOptions(resample=resample), context=ReleaseContext(privacy_rng=prng(1)),
    )
    assert res.n_accepted == 7 and res.n_draws == 7
    np.testing.assert_array_equal(res.accepted_index, np.arange(7))
    # a moderate threshold: exactly c acceptances and the last examined draw is accepted
    eps_abc = float(np.quantile(dist.batch(dist.prepare(observed), sims), 0.2))
    res = abcdp(
        observed, (thetas, sims), dist, c=3, epsilon_total=50.0, epsilon_abc=eps_abc,
        options=ABCDPOptions(resample=resample), context=ReleaseContext(privacy_rng=prng(2)),
    )
    assert res.n_accepted == 3
    assert res.indicators.sum() == 3 and res.indicators[-1] == 1
    np.testing.assert_array_equal(res.accepted, thetas[res.accepted_index])


def test_tiny_noise_equals_rejection_abc_on_the_same_stream(toy):
    observed, thetas, sims, dist = toy
    rho = dist.batch(dist.prepare(observed), sims)
    eps_abc = float(np.quantile(rho, 0.1))
    for resample in (False, True):
        ref = rejection_abc_draws(observed, (thetas, sims), dist, eps_abc, max_accept=10)
        res = abcdp(
            observed, (thetas, sims), dist, c=10, epsilon_total=1e9, epsilon_abc=eps_abc,
            options=ABCDPOptions(resample=resample), context=ReleaseContext(privacy_rng=prng(3)),
        )
        np.testing.assert_array_equal(res.accepted_index, ref.accepted_index)
        assert res.n_draws == ref.n_draws
    # without early stop, rejection ABC accepts exactly the draws below the threshold
    full = rejection_abc_draws(observed, (thetas, sims), dist, eps_abc)
    np.testing.assert_array_equal(full.accepted_index, np.flatnonzero(rho <= eps_abc))


def test_compiled_pass_is_exactly_the_sequential_algorithm():
    rng = np.random.default_rng(0)
    for resample in (False, True):
        for _ in range(50):
            n, c = 40, int(rng.integers(1, 6))
            rho = rng.random(n)
            v = rng.laplace(0, 0.2, n)
            m = rng.laplace(0, 0.1, n)
            thr0 = 0.3 + 0.05
            out = np.empty(n, dtype=np.uint8)
            processed, count, _ = _svt_pass(rho, v, m, thr0, 0.3, resample, 0, c, out)
            # per-draw reference (Algorithm 1, lines 4-18)
            ref, thr, k, cnt = [], thr0, 0, 0
            for t in range(n):
                if rho[t] + v[t] <= thr:
                    ref.append(1)
                    cnt += 1
                    if resample:
                        thr = 0.3 + m[k]
                        k += 1
                else:
                    ref.append(0)
                if cnt >= c:
                    break
            assert processed == len(ref) and count == cnt
            np.testing.assert_array_equal(out[:processed], ref)


def test_batch_size_does_not_change_the_law_of_stopping(toy):
    """Streaming in batches of 1 or 300 gives the same answers for the same noise draws."""
    observed, thetas, sims, dist = toy
    rho = dist.batch(dist.prepare(observed), sims)

    class Recorded(SparseVector):
        pass

    a = Recorded(3, 1e-9, float(np.quantile(rho, 0.05)), False, prng(9))
    one = np.concatenate([a.process(rho[i : i + 1]) for i in range(rho.size)])
    b = Recorded(3, 1e-9, float(np.quantile(rho, 0.05)), False, prng(9))
    whole = b.process(rho)
    np.testing.assert_array_equal(one, whole)


def test_toy_posterior_mean_error_falls_as_n_grows():
    """At fixed ε_total, b = O(1/N): with N = 100 observed points ABCDP is close to the prior,
    with N = 20000 it is close to ABC (Theorem 2 (2))."""
    model = MixtureOfUniforms(n_points=300)
    draws = SimulatedDraws(model.prior_sample, model.simulate, 1500, seed=3, batch_size=500)
    thetas, sims = draws.materialize()
    dist = RFFMMD(bandwidth=0.6, n_features=20, seed=1)
    errors = {}
    eps_abc = float(np.quantile(dist.batch(dist.prepare(model.observed(seed=11)), sims), 0.02))
    for n in (100, 20000):
        observed = MixtureOfUniforms(n_points=n).observed(seed=11)
        errs = []
        for r in range(8):
            res = abcdp(
                observed, (thetas, sims), dist, c=10, epsilon_total=1.0, epsilon_abc=eps_abc,
                options=ABCDPOptions(resample=False), context=ReleaseContext(privacy_rng=prng(100 + r)),
            )
            errs.append(np.mean(np.abs(res.posterior_mean - model.theta_true)))
        errors[n] = np.array(errs)
    diff = errors[100].mean() - errors[20000].mean()
    se = np.sqrt(errors[100].var(ddof=1) / 8 + errors[20000].var(ddof=1) / 8)
    assert diff > 3 * se, errors


def test_ledger_charged_before_release_and_budget_enforced(tmp_path, toy):
    observed, thetas, sims, dist = toy
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("toy", epsilon=1.5, accountant="pure")
    res = abcdp(
        observed, (thetas, sims), dist, c=2, epsilon_total=1.0, epsilon_abc=0.1,
        context=ReleaseContext(ledger=ledger, dataset="toy", privacy_rng=prng(4)),
    )
    hist = ledger.history("toy")
    assert len(hist) == 1 and hist[0]["status"] == "released"
    assert ledger.spent("toy") == pytest.approx(1.0)
    assert res.privacy.epsilon == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        abcdp(
            observed, (thetas, sims), dist, c=2, epsilon_total=1.0, epsilon_abc=0.1,
            context=ReleaseContext(ledger=ledger, dataset="toy"),
        )
    assert len(ledger.history("toy")) == 1


def test_refuses_numpy_generator_for_privacy_noise(toy):
    observed, thetas, sims, dist = toy
    with pytest.raises(TypeError):
        abcdp(
            observed, (thetas, sims), dist, c=2, epsilon_total=1.0, epsilon_abc=0.1,
            context=ReleaseContext(privacy_rng=np.random.default_rng(0)),
        )


@pytest.mark.parametrize(
    "case",
    ["nan_observed", "inf_observed", "dims", "c0", "c_gt_T", "eps_abc_neg", "eps_total0", "bad_sims"],
)
def test_bad_input_raises_before_charging(tmp_path, toy, case):
    observed, thetas, sims, dist = toy
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("toy", epsilon=10.0)
    kw = dict(c=2, epsilon_total=1.0, epsilon_abc=0.1)
    obs, draws = observed.copy(), (thetas, sims)
    if case == "nan_observed":
        obs[3, 0] = np.nan
    elif case == "inf_observed":
        obs[0, 0] = np.inf
    elif case == "dims":
        obs = np.hstack([obs, obs])
    elif case == "c0":
        kw["c"] = 0
    elif case == "c_gt_T":
        kw["c"] = thetas.shape[0] + 1
    elif case == "eps_abc_neg":
        kw["epsilon_abc"] = -0.1
    elif case == "eps_total0":
        kw["epsilon_total"] = 0.0
    elif case == "bad_sims":
        draws = (thetas, sims[:, :, 0, None, None])
    with pytest.raises((InvalidDataError, InvalidPrivacyParameterError)) as info:
        abcdp(obs, draws, dist, context=ReleaseContext(ledger=ledger, dataset="toy"), **kw)
    assert len(str(info.value)) > 20
    assert ledger.history("toy") == []


def test_bad_bandwidth():
    for bw in (0.0, -1.0, float("nan"), "x"):
        with pytest.raises(InvalidPrivacyParameterError):
            RFFMMD(bandwidth=bw)


def test_theta_rows_must_match_sims(toy):
    observed, thetas, sims, dist = toy
    with pytest.raises(InvalidDataError):
        abcdp(observed, (thetas[:-1], sims), dist, c=2, epsilon_total=1.0, epsilon_abc=0.1)


def test_streaming_from_simulator_matches_arrays(toy):
    observed, thetas, sims, dist = toy
    model = MixtureOfUniforms(n_points=200)
    draws = SimulatedDraws(model.prior_sample, model.simulate, 300, seed=7, batch_size=64)
    a = abcdp(
        observed, draws, dist, c=4, epsilon_total=1e9, epsilon_abc=0.08,
        context=ReleaseContext(privacy_rng=prng(5)),
    )
    b = abcdp(
        observed, ArrayDraws(thetas, sims, batch_size=17), dist, c=4, epsilon_total=1e9, epsilon_abc=0.08,
        context=ReleaseContext(privacy_rng=prng(5)),
    )
    np.testing.assert_array_equal(a.accepted_index, b.accepted_index)
    np.testing.assert_allclose(a.accepted, b.accepted)


def test_rejection_abc_function(toy):
    observed, _, _, dist = toy
    model = MixtureOfUniforms(n_points=200)
    res = rejection_abc(observed, model.prior_sample, model.simulate, dist, 0.08, 300, seed=7, batch_size=64)
    assert isinstance(res, ABCResult) and not res.private
    assert res.n_draws == 300 and res.n_accepted > 0


def test_save_load_roundtrip(tmp_path, toy):
    observed, thetas, sims, dist = toy
    names = ("a", "b", "c", "d", "e")
    res = abcdp(
        observed, (thetas, sims), dist, c=3, epsilon_total=1.0, epsilon_abc=0.1, param_names=names,
        context=ReleaseContext(privacy_rng=prng(6)),
    )
    npz, js = res.save(tmp_path / "release"), res.write_release_json(tmp_path / "release")
    assert npz == tmp_path / "release.npz" and npz.exists() and js == tmp_path / "release.json"
    meta = json.loads(js.read_text())
    assert meta["privacy"]["events"][0]["c"] == 3
    back = ABCResult.load(tmp_path / "release")
    assert isinstance(back, ABCDPResult)
    np.testing.assert_array_equal(back.accepted, res.accepted)
    np.testing.assert_array_equal(back.indicators, res.indicators)
    assert back.privacy == res.privacy and back.b == res.b and back.param_names == res.param_names
    assert back.privacy.insecure_rng


def test_to_arviz(toy):
    pytest.importorskip("arviz")
    observed, thetas, sims, dist = toy
    res = abcdp(
        observed, (thetas, sims), dist, c=3, epsilon_total=1.0, epsilon_abc=100.0,
        context=ReleaseContext(privacy_rng=prng(7)),
    )
    idata = res.to_arviz()
    assert idata.posterior["theta_0"].shape == (1, 3)


def test_simulator_failure_after_charge_is_recorded_as_failed(tmp_path):
    model = MixtureOfUniforms(n_points=50)
    calls = {"n": 0}

    def flaky(theta, rng):
        calls["n"] += 1
        out = model.simulate(theta, rng)
        if calls["n"] > 1:
            out[0, 0, 0] = np.nan
        return out

    draws = SimulatedDraws(model.prior_sample, flaky, 100, seed=0, batch_size=10)
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("toy", epsilon=5.0)
    with pytest.raises(InvalidDataError):
        abcdp(
            model.observed(seed=1), draws, RFFMMD(0.6, 10), c=50, epsilon_total=1.0, epsilon_abc=1e-6,
            context=ReleaseContext(ledger=ledger, dataset="toy", privacy_rng=prng(8)),
        )
    hist = ledger.history("toy")
    assert len(hist) == 1 and hist[0]["status"] == "failed"


# ---- issue 23: sensitivity from public bounds, query limits, validation before the charge ------


class _RangePrepared:
    def __init__(self, points):
        self.points = points


class RangeSensitivityDistance(Distance):
    """Planted user distance whose sensitivity is read off the data it is given: the range
    max - min of the observed values (the old interface passed it the prepared data). Given a
    number of records (the new interface) it can only declare a public value, 1.0."""

    name = "range-user"

    def prepare(self, observed):
        return _RangePrepared(as_points(observed))

    def batch(self, prepared, sims):
        arr = as_batch(sims, prepared.points.shape[1])
        return np.abs(arr.mean(axis=(1, 2)) - prepared.points.mean())

    def sensitivity(self, prepared_or_n):
        pts = getattr(prepared_or_n, "points", None)
        return float(np.ptp(pts)) if pts is not None else 1.0


def test_report_contains_nothing_derived_from_the_data(tmp_path, toy):
    """The range of the observed data (a planted data-derived 'sensitivity') must appear nowhere in
    what is published: the report and the release file. Old interface: reported exactly."""
    _, thetas, sims, _ = toy
    observed = np.random.default_rng(3).uniform(0.0, 1.0, size=(50, 1))
    observed[0, 0], observed[1, 0] = 0.0, 0.7853981633974483  # range π/4, a distinctive value
    data_range = float(np.ptp(observed))
    with pytest.warns(InferenceWarning, match="clips the distance"):
        res = abcdp(
            observed, (thetas, sims), RangeSensitivityDistance(), c=2, epsilon_total=1.0, epsilon_abc=0.1,
            context=ReleaseContext(privacy_rng=prng(11)),
        )
    published = res.privacy.to_json() + res.write_release_json(tmp_path / "r.json").read_text()
    assert res.privacy.sensitivity == 1.0 and res.privacy.details["sensitivity_proof"].startswith("enforced")
    for text in (repr(data_range), f"{data_range:.6g}", f"{data_range:.10g}"):
        assert text not in published


@pytest.mark.parametrize("case", ["sens_1e-300", "eps_1e300", "user_zero"])
def test_vanishing_noise_is_refused_before_charging(tmp_path, toy, case):
    observed, thetas, sims, dist = toy
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("toy", epsilon=1e301, accountant="pure")

    class Tiny(RangeSensitivityDistance):
        def sensitivity(self, n_records):
            return 1e-300 if case == "sens_1e-300" else 0.0

    distance, eps = (dist, 1e300) if case == "eps_1e300" else (Tiny(), 1.0)
    with pytest.raises(InvalidPrivacyParameterError, match="noise|sensitivity"):
        abcdp(
            observed, (thetas, sims), distance, c=2, epsilon_total=eps, epsilon_abc=0.1,
            context=ReleaseContext(ledger=ledger, dataset="toy"),
        )
    assert ledger.history("toy") == [] and ledger.spent("toy") == 0.0


class LyingSource:
    """A draw source that declares ``declared`` draws and yields every row of ``thetas``/``sims``."""

    def __init__(self, thetas, sims, declared, batch=100):
        self.thetas, self.sims, self.n_draws, self.batch = thetas, sims, declared, batch

    def batches(self):
        for a in range(0, len(self.thetas), self.batch):
            yield self.thetas[a:a + self.batch], self.sims[a:a + self.batch]


def test_laplace_abcdp_answers_at_most_the_declared_draws(toy):
    observed, thetas, sims, dist = toy
    with pytest.warns(InferenceWarning, match="declared n_draws"):
        res = abcdp(
            observed, LyingSource(thetas, sims, 5), dist, c=3, epsilon_total=1.0, epsilon_abc=0.0,
            context=ReleaseContext(privacy_rng=prng(12)),
        )
    assert res.n_draws <= 5 and res.indicators.size <= 5
    for declared in (0, 2.5, "10", True):
        with pytest.raises(InvalidDataError, match="n_draws"):
            abcdp(
                observed, LyingSource(thetas, sims, declared), dist, c=1, epsilon_total=1.0, epsilon_abc=0.0,
                context=ReleaseContext(privacy_rng=prng(12)),
            )


def test_sparse_vector_engine_counts_its_queries():
    eng = SparseVector(2, 0.1, 0.0, False, prng(13), max_queries=7)
    out = eng.process(np.full(1000, 50.0))  # far above the threshold: never accepted
    assert out.size == 7 and eng.done and eng.exhausted and eng.n_queries == 7
    assert eng.process(np.zeros(10)).size == 0
    with pytest.raises(InvalidPrivacyParameterError):
        SparseVector(3, 0.1, 0.0, False, prng(13), max_queries=2)  # fewer queries than c
    with pytest.raises(TypeError):
        SparseVector(1, 0.1, 0.0, False, np.random.default_rng(0))  # never a user's generator


@pytest.mark.parametrize(
    "args, kw, match",
    [
        ((2, 1.0, 0.1), {}, "positional"),  # c, ε and ε_abc are keywords: no silent swap of the two ε
        ((), {"noise": "gaussian"}, "noise"),  # the settings of ABCDPOptions are not keywords
        ((), {"ledger": None}, "ledger"),  # nor are the context's
        ((), {"options": {"noise": "gaussian"}}, "ABCDPOptions"),
        ((), {"context": "toy"}, "ReleaseContext"),
    ],
)
def test_misplaced_options_are_refused_before_charging(tmp_path, toy, args, kw, match):
    observed, thetas, sims, dist = toy
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("toy", epsilon=10.0)
    kw = {"context": ReleaseContext(ledger, "toy"), **kw}
    if not args:
        kw.update(c=2, epsilon_total=1.0, epsilon_abc=0.1)
    with pytest.raises(TypeError, match=match):
        abcdp(observed, (thetas, sims), dist, *args, **kw)
    assert ledger.history("toy") == []


def test_release_is_charged_under_the_context_label_or_abcdp(tmp_path, toy):
    observed, thetas, sims, dist = toy
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("toy", epsilon=10.0)
    kw = dict(c=1, epsilon_total=1.0, epsilon_abc=100.0)
    abcdp(observed, (thetas, sims), dist, context=ReleaseContext(ledger, "toy", prng(13)), **kw)
    abcdp(observed, (thetas, sims), dist, context=ReleaseContext(ledger, "toy", prng(14), "mine"), **kw)
    assert [h["label"] for h in ledger.history("toy")] == ["abcdp", "mine"]
