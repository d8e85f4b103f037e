"""Nested RQMC point sets: validity (stratification), independence, variance reduction."""

import numpy as np
import pytest
import torch

from dpinfer.errors import InvalidDataError
from dpinfer.inference.neural.flows import build_flow
from dpinfer.inference.neural.rqmc import (
    check_points,
    check_stratification,
    mc_point_sets,
    point_sets,
    privatize,
    sobol_point_sets,
)
from dpinfer.models import GaussianMean


@pytest.mark.parametrize("m", [0, 1, 3, 6])
@pytest.mark.parametrize("dim", [1, 2, 10])
def test_every_point_in_its_own_stratum(m, dim):
    u = sobol_point_sets(200, 2**m, dim, seed=m + 10 * dim)
    assert u.shape == (200, 2**m, dim)
    assert np.all((u > 0) & (u < 1))
    assert check_stratification(u).all()


def test_monte_carlo_fails_the_stratification_check():
    # known-broken variant: i.i.d. points put two points in one stratum almost surely (16!/16^16)
    u = mc_point_sets(200, 16, 3, seed=1)
    assert not check_stratification(u).any()


def test_point_sets_are_independent_and_uniform():
    u = sobol_point_sets(4000, 8, 2, seed=0)
    # scrambles differ between sets
    assert not np.allclose(u[0], u[1])
    # each single point is marginally U(0,1): mean 1/2, var 1/12 (MC error ~ 0.0046, 0.0023)
    first = u[:, 0, :]
    assert np.all(np.abs(first.mean(axis=0) - 0.5) < 0.02)
    assert np.all(np.abs(first.var(axis=0) - 1 / 12) < 0.01)
    # reproducible from the seed
    assert np.array_equal(u, sobol_point_sets(4000, 8, 2, seed=0))


@pytest.mark.parametrize("bad", [3, 0, -4, 1.5, "8", 2**21])
def test_bad_point_counts_are_rejected(bad):
    with pytest.raises(InvalidDataError, match="rqmc_points|power of two|at most"):
        check_points(bad)


def test_rqmc_reduces_the_variance_of_the_nested_loss_for_a_fixed_network():
    """The inner estimator (1/M) sum_m log q(theta | G(s, u_m)) of eq. 10-11 for one fixed flow."""
    model = GaussianMean(n=50, epsilon=0.5)
    torch.manual_seed(0)
    flow = build_flow({"transforms": 2, "hidden": 16, "blocks": 1, "bins": 8}, 1, 1)
    s = np.array([[0.3]])
    theta = torch.tensor([[0.2]])
    M, reps = 64, 200

    def estimates(qmc_points):
        x = np.stack(
            [privatize(model.mechanism, s, M, seed=1000 + r, qmc_points=qmc_points)[0] for r in range(reps)]
        )  # (reps, M, 1)
        xt = torch.as_tensor(x, dtype=torch.float32)
        with torch.no_grad():
            lq = flow.log_prob(theta.expand(reps, M, 1), xt)
        return lq.mean(dim=1).numpy()

    rq, mc = estimates(True), estimates(False)
    # both unbiased for the same integral (difference within 4 combined standard errors)
    se = np.sqrt(rq.var() / reps + mc.var() / reps)
    assert abs(rq.mean() - mc.mean()) < 4 * se
    # variance ratio: with 200 replicates each variance is known to ~10 %, so 0.5 is a wide margin
    assert rq.var() < 0.5 * mc.var()


def test_privatize_shapes_and_point_sets_switch():
    model = GaussianMean(n=20, epsilon=1.0)
    s = np.zeros((5, 1))
    x = privatize(model.mechanism, s, 4, seed=0)
    assert x.shape == (5, 4, 1)
    assert point_sets(3, 5, 2, seed=0, qmc_points=False).shape == (3, 5, 2)
    with pytest.raises(InvalidDataError):
        point_sets(3, 5, 2, seed=0, qmc_points=True)
