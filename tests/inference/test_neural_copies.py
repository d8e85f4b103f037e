"""``TrainingConfig.copies_per_step``: a training step on k of the M privatised copies (issue 14).

The nested losses are means over simulations i and copies m (Xiong et al. 2025, eqs. 8-11), so a
step on one copy per simulation drawn uniformly is an unbiased estimate of the all-copies loss.
Checked exactly in distribution: the average over R independent copy draws matches the
all-copies loss within 4 Monte Carlo standard errors; the known-broken variant (always copy 0,
with copies that differ systematically) is more than 4 standard errors off.
"""

import numpy as np
import pytest
import torch

from dpinfer.errors import InvalidDataError
from dpinfer.inference.neural import TrainingConfig
from dpinfer.inference.neural.flows import build_flow
from dpinfer.inference.neural.losses import apt_loss, choose_atoms, npe_loss
from dpinfer.inference.neural.training import _copies

SMALL = {"kind": "nsf", "transforms": 2, "hidden": 16, "blocks": 1, "bins": 6}
B, M, R = 32, 8, 150


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)  # small tensors: extra threads only add contention
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def problem():
    torch.manual_seed(0)
    flow = build_flow(SMALL, 1, 1)
    theta = torch.randn(B, 1)
    # copies that differ systematically (copy m shifted by 0.4 m), so a fixed copy is biased
    x = theta[:, None, :] + 0.5 * torch.randn(B, M, 1) + 0.4 * torch.arange(M).reshape(1, M, 1)
    return flow, theta, x, torch.randn(B)


def _check_unbiased(loss, x) -> None:
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        full = float(loss(x))
        draws = np.array([float(loss(_copies(x, 1, gen))) for _ in range(R)])
        first = float(loss(x[:, :1]))
    se = draws.std(ddof=1) / np.sqrt(R)
    assert abs(draws.mean() - full) < 4 * se
    assert abs(first - full) > 4 * se  # known-broken: always the first copy


def test_one_copy_per_step_is_unbiased_for_the_npe_loss(problem):
    flow, theta, x, _ = problem
    _check_unbiased(lambda xx: npe_loss(flow, theta, xx), x)


def test_one_copy_per_step_is_unbiased_for_the_atomic_loss(problem):
    flow, theta, x, lp = problem
    idx = choose_atoms(B, 5, torch.Generator().manual_seed(2))  # the same atoms for every draw
    _check_unbiased(lambda xx: apt_loss(flow, theta, xx, lp, atom_index=idx), x)


def test_copies_shape_and_all_copies_consume_no_randomness(problem):
    _, _, x, _ = problem
    gen = torch.Generator().manual_seed(3)
    state = gen.get_state()
    assert _copies(x, None, gen) is x and _copies(x, M, gen) is x
    assert torch.equal(gen.get_state(), state)  # the paper preset's stream is the one before
    got = _copies(x, 3, gen)
    assert got.shape == (B, 3, 1)
    # every selected row is one of that simulation's copies
    assert bool(((got[:, :, None, :] == x[:, None, :, :]).all(-1).any(-1)).all())


def test_presets_and_validation():
    from dpinfer.inference.neural import SPLE, SPPE
    from dpinfer.models import GaussianMean

    model = GaussianMean(n=20)
    # SPPE: one copy per step, patience 10; SPLE's fast training keeps all copies, patience 5
    for training in (None, "fast", {"preset": "fast", "max_epochs": 3}):
        sppe, sple = SPPE(model, training=training).training, SPLE(model, training=training).training
        assert (sppe.copies_per_step, sppe.patience) == (1, 10)
        assert (sple.copies_per_step, sple.patience) == (None, 5)
    assert SPLE(model, training={"copies_per_step": 2}).training.copies_per_step == 2
    assert SPLE(model, training="paper").training == TrainingConfig.from_any("paper")
    assert TrainingConfig().copies_per_step == 1
    assert TrainingConfig.from_any("paper").copies_per_step is None
    assert TrainingConfig.from_any({"copies_per_step": None}).copies_per_step is None
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InvalidDataError, match="copies_per_step"):
            TrainingConfig(copies_per_step=bad)
