"""Private SMC-ABC (one sparse vector per population): weights, composition, ledger."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpinfer.datasets.abcdp_data import load_covid_nl
from dpinfer.distances import ExactMMD
from dpinfer.models.shipped.covid import CovidPolynomial
from dpinfer.privacy import (
    BudgetExceededError,
    InvalidPrivacyParameterError,
    Ledger,
    PrivacyWarning,
    SparseVectorEvent,
    compose,
    get_accountant,
)
from dpinfer.privacy.context import ReleaseContext
from dpinfer.release.private_smc import per_population_epsilon, private_smc_abc
from seeded_privacy_rng import prng


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
@pytest.mark.parametrize("k", [1, 3])
def test_per_population_epsilon_composes_to_the_target(accountant, k):
    e = per_population_epsilon(2.0, 1e-6, 10, k, accountant)
    acc = get_accountant(accountant)
    assert acc.epsilon(compose(*[SparseVectorEvent(10, e)] * k), 1e-6) <= 2.0
    assert acc.epsilon(compose(*[SparseVectorEvent(10, e * 1.01)] * k), 1e-6) > 2.0 or e * k >= 2.0 * 0.99


@pytest.fixture(scope="module")
def covid():
    _, observed = load_covid_nl()
    model = CovidPolynomial()
    dist = ExactMMD(900.0)
    thetas = model.prior_sample(60_000, np.random.default_rng(0))
    prep = dist.prepare(observed)
    sims = model.simulate(thetas)
    rho = np.concatenate([dist.batch(prep, sims[i:i + 4096]) for i in range(0, len(sims), 4096)])
    return observed, model, dist, thetas, rho


def test_weighted_particles_match_rejection_abc_at_the_final_threshold(covid):
    """With negligible noise (ε = 1e7) the last population targets the rejection-ABC posterior at
    the last threshold; the reference is rejection ABC on 60 000 prior draws (600 accepted)."""
    observed, model, dist, thetas, rho = covid
    e1, e2 = np.quantile(rho, [0.05, 0.01])
    ref = thetas[rho <= e2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # a test release, no ledger
        res = private_smc_abc(
            observed, model, dist, epsilon_abc_schedule=[e1, e2], c=400, epsilon=1e7, delta=1e-6,
            max_draws=50_000, seed=2, context=ReleaseContext(privacy_rng=prng(1)),
        )
    assert [p["n_accepted"] for p in res.populations] == [400, 400]
    se = ref.std(0) * np.sqrt(1 / res.ess + 1 / len(ref))
    assert np.all(np.abs(res.mean() - ref.mean(0)) < 4 * se)
    assert np.all(np.abs(res.sd() / ref.std(0) - 1) < 0.25)
    # broken variant: the accepted particles without their importance weights are far too wide
    p = res.particles
    assert np.max(p.std(0) / ref.std(0)) > 1.4
    assert res.n_simulations == sum(p["n_draws"] for p in res.populations) < 60_000


def test_composed_event_charged_before_release(covid, tmp_path):
    observed, model, dist, thetas, rho = covid
    e1, e2 = np.quantile(rho, [0.05, 0.01])
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("c", epsilon=60.0, delta=1e-5, accountant="pld")
    res = private_smc_abc(
        observed, model, dist, epsilon_abc_schedule=[e1, e2], c=5, epsilon=44.0, delta=1e-6, seed=1,
        context=ReleaseContext(ledger=ledger, dataset="c", privacy_rng=prng(2)),
    )
    assert len(ledger.history("c")) == 1 and res.privacy.epsilon <= 44.0 + 1e-9
    assert res.privacy.accountant == "pld" and len(res.populations) == 2
    with pytest.raises(BudgetExceededError):  # 44 + 44 > 60: refused before anything runs
        private_smc_abc(
            observed, model, dist, epsilon_abc_schedule=[e1, e2], c=5, epsilon=44.0, delta=1e-6,
            context=ReleaseContext(ledger=ledger, dataset="c", privacy_rng=prng(3)),
        )
    assert len(ledger.history("c")) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        for kw in (dict(epsilon_abc_schedule=[0.01, 0.02]), dict(epsilon_abc_schedule=[]), dict(c=1)):
            args = dict(epsilon_abc_schedule=[e1, e2], c=5) | kw
            with pytest.raises(InvalidPrivacyParameterError):
                private_smc_abc(
                    observed, model, dist, epsilon_abc_schedule=args["epsilon_abc_schedule"], c=args["c"],
                    epsilon=1.0, delta=1e-6,
                )


def test_refused_inputs_are_not_charged(tmp_path):
    """Issue 23, finding 3: a 3-d observation against 1-d simulations, and absurd sizes, are refused
    before the charge (the old code charged first and spent budget on a release that never came)."""
    from dpinfer.distances import RFFMMD
    from dpinfer.errors import InvalidDataError
    from dpinfer.models.shipped.mixture_uniform import MixtureOfUniforms

    model = MixtureOfUniforms(n_points=50)  # simulates data sets of 50 scalar points
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("m", epsilon=1.0, delta=1e-5, accountant="pld")
    kw = dict(context=ReleaseContext(ledger, "m", prng(4)))
    observed3 = np.random.default_rng(0).uniform(size=(50, 3))
    with pytest.raises(InvalidDataError, match="dimension"):
        private_smc_abc(
            observed3, model, RFFMMD(0.6, 20), epsilon_abc_schedule=[0.3, 0.2], c=5, epsilon=1.0, delta=1e-6,
            **kw,
        )
    observed = model.observed(seed=1)
    for c, extra in ((5, dict(max_draws=10**30)), (10**12, {}), (5, dict(batch_size=0)),
                     (5, dict(accountant="nope"))):
        with pytest.raises((InvalidPrivacyParameterError, ValueError, KeyError)):
            private_smc_abc(observed, model, RFFMMD(0.6, 20), epsilon_abc_schedule=[0.3, 0.2], c=c,
                            epsilon=1.0, delta=1e-6, **kw, **extra)
    assert ledger.history("m") == [] and ledger.spent("m") == 0.0


def test_the_smc_prior_is_found_through_the_models_protocol_not_its_type_name(tmp_path):
    """Issue 37: a model supports private SMC-ABC by implementing ``smc_prior()``; a subclass or a
    wrapper with another type name keeps it (the old dispatch compared ``type(model).__name__`` and
    refused both), and a model without it is refused before anything is charged."""
    from dpinfer.models.smc_prior import SMCPrior
    from dpinfer.release.private_smc import smc_prior

    class RenamedCovid(CovidPolynomial):  # same model, another type name
        pass

    assert isinstance(smc_prior(RenamedCovid()), SMCPrior)
    z = np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(smc_prior(RenamedCovid()).log_density(z), [0.0, -0.5])

    class NoPrior:
        def prior_sample(self, n, rng):
            return rng.standard_normal((n, 1))

    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("m", epsilon=1.0, delta=1e-5, accountant="pld")
    _, observed = load_covid_nl()
    with pytest.raises(InvalidPrivacyParameterError, match=r"smc_prior\(\)"):
        private_smc_abc(observed, NoPrior(), ExactMMD(900.0), epsilon_abc_schedule=[1.0, 0.5], c=5,
                        epsilon=1.0, delta=1e-6, context=ReleaseContext(ledger, "m", prng(4)))
    assert ledger.history("m") == []
