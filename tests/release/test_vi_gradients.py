"""Per-example ELBO gradients: closed forms against autograd, both families, both modes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.func import grad, vmap

from dpinfer.release.dpvi import (
    DPVI,
    FullRankGaussian,
    GaussianLinearRegression,
    LogisticRegression,
    MeanFieldGaussian,
    Model,
    OptimizerOptions,
    PoissonRegression,
    TrainingOptions,
)
from dpinfer.release.dpvi.gradients import combine, per_example_terms

D = 3


def _data(kind, B=17, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(B, D, generator=g, dtype=torch.float64)
    if kind == "logistic":
        y = (torch.rand(B, generator=g) < 0.5).double()
    elif kind == "poisson":
        y = torch.poisson(torch.full((B,), 2.0), generator=g).double()
    else:
        y = torch.randn(B, generator=g, dtype=torch.float64)
    return X, y


MODELS = [
    ("logistic", LogisticRegression(D)),
    ("logistic", LogisticRegression(D, squash=0.0)),
    ("poisson", PoissonRegression(D)),
    ("gaussian", GaussianLinearRegression(D, noise_scale=0.7)),
]


@pytest.mark.parametrize("kind,model", MODELS)
def test_closed_form_per_example_grads_equal_vmap_grad(kind, model):
    X, y = _data(kind)
    theta = torch.tensor([0.3, -0.8, 1.1], dtype=torch.float64)
    closed = model.per_example_grad(theta, X, y)
    generic = Model.per_example_grad(model, theta, X, y)  # the vmap(grad) default
    torch.testing.assert_close(closed, generic)
    torch.testing.assert_close(model.log_prior_grad(theta), grad(model.log_prior)(theta))


@pytest.mark.parametrize("family", [MeanFieldGaussian(D), FullRankGaussian(D)])
def test_pullback_equals_autograd_per_example_jacobian(family):
    model = LogisticRegression(D)
    X, y = _data("logistic")
    params = torch.linspace(-0.5, 0.4, family.n_params, dtype=torch.float64)
    eps = torch.tensor([0.5, -1.2, 0.8], dtype=torch.float64)
    ours = family.pullback(params, eps, model.per_example_grad(family.sample(params, eps), X, y))

    def ell(p, x, yy):
        return model.log_likelihood(family.sample(p, eps), x[None], yy[None]).sum()

    ref = vmap(grad(ell), in_dims=(None, 0, 0))(params, X, y)
    torch.testing.assert_close(ours, ref)
    torch.testing.assert_close(family.entropy_grad(params), grad(family.entropy)(params))


@pytest.mark.parametrize("family", [MeanFieldGaussian(D), FullRankGaussian(D)])
@pytest.mark.parametrize("mode", ["elbo", "likelihood", "theta"])
def test_summed_rows_give_the_gradient_of_the_elbo_estimate(family, mode):
    model = LogisticRegression(D)
    X, y = _data("logistic")
    scale = 12.5
    params = torch.linspace(-0.3, 0.6, family.n_params, dtype=torch.float64)
    eps = torch.randn(2, D, generator=torch.Generator().manual_seed(3), dtype=torch.float64)

    def elbo(p):
        vals = [
            scale * model.log_likelihood(family.sample(p, e), X, y).sum()
            + model.log_prior(family.sample(p, e))
            for e in eps
        ]
        return torch.stack(vals).mean() + family.entropy(p)

    ref = grad(elbo)(params)
    rows, free = per_example_terms(model, family, params, X, y, eps, scale, mode)
    # theta: the θ-gradients at the S = 2 draws, pulled back after the sum (post-processing)
    assert rows.shape == (X.shape[0], 2 * D if mode == "theta" else family.n_params)
    total = combine(rows.sum(0), free, scale, mode, family, params, eps)
    torch.testing.assert_close(total, ref)
    # known-broken variant: dropping the entropy term changes the gradient
    assert not torch.allclose(total - family.entropy_grad(params), ref)
    if mode == "theta":  # known-broken: pulling back with the first draw only
        wrong = scale * family.pullback(params, eps[0], rows.sum(0)[:D].unsqueeze(0))[0] * 2 + free
        assert not torch.allclose(wrong, ref)


def test_custom_model_from_callables_fits():
    def loglik(theta, X, y):
        return -0.5 * (y - X @ theta) ** 2

    def logprior(theta):
        return -0.5 * (theta**2).sum()

    model = Model(loglik, logprior, dim=2, name="my-linear")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 2))
    y = X @ np.array([1.0, -1.0]) + rng.standard_normal(200)
    fit = DPVI(model).fit(
        X,
        y,
        optimizer=OptimizerOptions("adam", lr=0.05),
        training=TrainingOptions(sampling_rate=0.5, steps=400, per_example="likelihood"),
        private=False,
        seed=0,
    )
    np.testing.assert_allclose(fit.mean(), [1.0, -1.0], atol=0.3)
    assert fit.model_name == "my-linear"
