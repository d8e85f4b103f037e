"""Neural posteriors: amortisation (append_simulations, train, sample at several releases), the
training presets, devices and the shared-conditioner losses.

Reference: the exact private posterior of the Gaussian-mean model by quadrature. C2ST with 1000
draws each: chance 0.5, held-out sd about 0.016; 0.6 is far from both a correct posterior and one
conditioned on the wrong release (the two releases used are > 3 posterior sd apart: C2ST ~ 1).
"""

import numpy as np
import pytest
import torch

from dpinfer.diagnostics import c2st
from dpinfer.errors import DeviceUnavailableError, InvalidDataError
from dpinfer.execution.device import resolve_device
from dpinfer.inference.neural import SPLE, SPPE, NeuralRunOptions, TrainingConfig
from dpinfer.inference.neural.flows import build_flow
from dpinfer.inference.neural.losses import apt_loss, nle_loss
from dpinfer.models import GaussianMean

SMALL = {"kind": "nsf", "transforms": 2, "hidden": 24, "blocks": 1, "bins": 8}
RELEASES = ([0.6], [-0.5])


@pytest.fixture(scope="module")
def model():
    return GaussianMean(n=50, clamp=(-2.0, 2.0), epsilon=0.5)


@pytest.fixture(scope="module")
def prior_simulations(model):
    rng = np.random.default_rng(3)
    theta = model.prior.sample(1200, rng)
    return theta, model.simulate(theta, rng)  # one privatised copy each


@pytest.fixture(scope="module")
def amortized_sppe(model, prior_simulations):
    est = SPPE(model, flow=SMALL, rqmc_points=4, training={"max_epochs": 150}, seed=1)
    return est.append_simulations(*prior_simulations).train()


def test_one_training_serves_several_releases(model, amortized_sppe):
    for obs in RELEASES:
        ref = model.exact_posterior(obs, grid_size=301, bins=100).sample(1000, seed=7)
        assert c2st(amortized_sppe.sample(1000, seed=2, x=obs), ref) <= 0.6
    # broken variant: draws at the first release compared with the second one's posterior
    wrong = model.exact_posterior(RELEASES[1], grid_size=301, bins=100).sample(1000, seed=7)
    assert c2st(amortized_sppe.sample(1000, seed=2, x=RELEASES[0]), wrong) > 0.9


def test_amortized_posterior_needs_a_release_and_log_prob_follows_x(amortized_sppe):
    assert amortized_sppe.amortized
    with pytest.raises(InvalidDataError, match="pass x="):
        amortized_sppe.sample(10)
    with pytest.raises(InvalidDataError, match="finite"):
        amortized_sppe.sample(10, x=[np.nan])
    lp_a = amortized_sppe.log_prob([[0.6]], x=RELEASES[0])
    lp_b = amortized_sppe.log_prob([[0.6]], x=RELEASES[1])
    assert lp_a[0] > lp_b[0] + 3  # θ = 0.6 is plausible under the first release only


def test_sple_amortized_and_appended_simulations_are_reused(model, prior_simulations):
    theta, x = prior_simulations
    post = SPLE(model, flow=SMALL, rqmc_points=2, training={"max_epochs": 60}, seed=1, warmup=30)
    post = post.append_simulations(theta[:600], x[:600]).train()
    assert post.n_simulations == 600 and post.rounds[0].n_simulations == 0
    means = [post.sample(400, seed=3, x=obs).mean() for obs in RELEASES]
    exact = [model.exact_posterior(obs, grid_size=301, bins=100).mean for obs in RELEASES]
    assert np.allclose(means, exact, atol=0.15)  # posterior sd ~0.27, MC error < 0.03


def test_multi_round_sppe_refuses_other_releases(model):
    post = SPPE(model, flow=SMALL, rounds=2, simulations_per_round=100, rqmc_points=2,
                training={"max_epochs": 2}, seed=0).fit(RELEASES[0])
    assert not post.amortized
    with pytest.raises(InvalidDataError, match="amortised"):
        post.sample(5, x=RELEASES[1])


@pytest.mark.parametrize(
    "theta, x, match",
    [
        (np.zeros((5, 2)), np.zeros((5, 1)), "shape"),
        (np.zeros((5, 1)), np.zeros((4, 1)), "shape"),
        (np.zeros((5, 1)), np.full((5, 1), np.nan), "finite"),
        (np.zeros((5, 1)), np.zeros((5, 3, 1)), "divide"),
    ],
)
def test_append_simulations_rejects_bad_input(model, theta, x, match):
    with pytest.raises(InvalidDataError, match=match):
        SPPE(model, rqmc_points=4).append_simulations(theta, x)
    with pytest.raises(InvalidDataError, match="append_simulations first"):
        SPPE(model).train()


def test_training_presets():
    paper = TrainingConfig.from_any("paper")
    got = (paper.batch_size, paper.learning_rate, paper.patience, paper.max_epochs)
    assert got == (100, 5e-4, 20, 10_000)
    assert TrainingConfig.from_any({"preset": "paper", "max_epochs": 5}).max_epochs == 5
    assert TrainingConfig.from_any(None) == TrainingConfig.from_any("fast")
    with pytest.raises(InvalidDataError, match="preset"):
        TrainingConfig.from_any("quick")
    with pytest.raises(InvalidDataError, match="unknown training option"):
        TrainingConfig.from_any({"epochs": 3})


def test_device_resolution_on_this_machine(model):
    assert resolve_device("cpu").type == "cpu"
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    with pytest.raises(DeviceUnavailableError, match="unknown device|not supported"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceUnavailableError, match="no CUDA GPU"):
            SPPE(model, run=NeuralRunOptions(device="cuda"))
        with pytest.raises(DeviceUnavailableError):
            SPLE(model, run=NeuralRunOptions(device="cuda:0"))
    post = SPPE(model, flow=SMALL, rounds=1, simulations_per_round=60, rqmc_points=2,
                training={"max_epochs": 2}, seed=0, run=NeuralRunOptions(device="auto")).fit([0.6])
    assert post.device.type == expected
    assert post.to("cpu").sample(5, seed=0).shape == (5, 1)


@pytest.mark.parametrize("kind, features, context", [("nsf", 1, 1), ("nsf", 3, 2), ("maf", 2, 4)])
def test_losses_condition_once_per_context_and_equal_the_pairwise_formula(kind, features, context):
    torch.manual_seed(0)
    B, M, K = 7, 3, 4
    # APT: q(θ | x) with θ of dim `features`, x of dim `context`
    flow = build_flow({"kind": kind, "transforms": 2, "hidden": 16}, features, context)
    theta, x, lp = torch.randn(B, features), torch.randn(B, M, context), torch.randn(B)
    idx = torch.stack([torch.arange(B), *[(torch.arange(B) + k) % B for k in range(1, K)]], dim=1)
    with torch.no_grad():
        got = apt_loss(flow, theta, x, lp, atom_index=idx)
        lq = torch.stack(
            [torch.stack([flow.log_prob(theta[idx[i]], x[i, m].expand(K, context)) for m in range(M)])
             for i in range(B)]
        )  # (B, M, K), one pair at a time
        logits = lq - lp[idx][:, None, :]
        want = -(logits[..., 0] - torch.logsumexp(logits, -1)).mean()
        assert float(got) == pytest.approx(float(want), rel=1e-5, abs=1e-5)
        # broken variant: each atom θ_j scored with its own x_j instead of the row's x_i
        lq_bad = torch.stack(
            [torch.stack([flow.log_prob(theta[idx[i]], x[idx[i], m]) for m in range(M)]) for i in range(B)]
        )
        logits_bad = lq_bad - lp[idx][:, None, :]
        bad = -(logits_bad[..., 0] - torch.logsumexp(logits_bad, -1)).mean()
        assert abs(float(got) - float(bad)) > 1e-2
        # NLE: q(x | θ) with x of dim `features` (M copies) and θ of dim `context`
        xs, th = torch.randn(B, M, features), torch.randn(B, context)
        want_nle = -torch.stack([flow.log_prob(xs[:, m], th) for m in range(M)]).mean()
        assert float(nle_loss(flow, th, xs)) == pytest.approx(float(want_nle), rel=1e-5, abs=1e-5)


def test_regression_standardization_centres_on_the_linear_prediction():
    rng = np.random.default_rng(0)
    c = rng.normal(1.0, 2.0, size=(5000, 1))
    x = 2.0 + 3.0 * c + 0.1 * rng.standard_normal((5000, 1))
    flow = build_flow({"kind": "nsf", "transforms": 1, "hidden": 8}, 1, 1)
    flow.fit_standardization(x, c)
    assert float(flow.x_std[0]) == pytest.approx(0.1, rel=0.05)  # the residual sd
    assert float(flow.x_coef[0, 0]) == pytest.approx(6.0, rel=0.02)  # 3 per unit c, c_sd = 2
    assert float(flow.x_mean[0]) == pytest.approx(5.0, abs=0.05)  # prediction at the mean context
    # broken variant: plain z-scoring leaves the marginal spread (about 6)
    plain = build_flow({"kind": "nsf", "transforms": 1, "hidden": 8, "regress": False}, 1, 1)
    plain.fit_standardization(x, c)
    assert float(plain.x_std[0]) > 5.0 and float(plain.x_coef.abs().sum()) == 0.0
    # the density is the flow's on (x - centre(c)) / x_std, with the change of variables
    xt, ct = torch.tensor([[8.0]]), torch.tensor([[2.0]])
    with torch.no_grad():
        z = (xt - flow.x_mean - (ct - flow.c_mean) / flow.c_std * flow.x_coef[0, 0]) / flow.x_std
        want = flow.flow((ct - flow.c_mean) / flow.c_std).log_prob(z) - torch.log(flow.x_std).sum()
        assert float(flow.log_prob(xt, ct)) == pytest.approx(float(want), abs=1e-5)


def test_cli_training_preset_and_overrides():
    import argparse

    from dpinfer.cli.neural import _training

    args = argparse.Namespace(training="paper", max_epochs=None, patience=7)
    cfg = TrainingConfig.from_any(_training(args))
    assert (cfg.batch_size, cfg.patience, cfg.max_epochs) == (100, 7, 10_000)
    plain = argparse.Namespace(training="fast", max_epochs=None, patience=None)
    assert TrainingConfig.from_any(_training(plain)) == TrainingConfig()
