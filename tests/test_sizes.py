"""Absurd sizes are one clear error before anything is allocated (they were raw MemoryErrors, or
runs that never returned: issue 23, finding 8)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpinfer.errors import InvalidDataError
from dpinfer.inference import mechanism_importance_sampling, smc_abc, tempered_smc
from dpinfer.inference.neural import SPPE
from dpinfer.models import GaussianMean
from dpinfer.sizes import check_allocation, physical_memory

HUGE = 10**12
M = GaussianMean(n=20, epsilon=1.0, clamp=(-2.0, 2.0))
OBS = [0.3]


@pytest.mark.parametrize(
    "call",
    [
        lambda: smc_abc(M, OBS, n_particles=HUGE, backend="serial"),
        lambda: smc_abc(M, OBS, batch_size=HUGE, backend="serial"),
        lambda: mechanism_importance_sampling(M, OBS, n_theta=HUGE, backend="serial"),
        lambda: mechanism_importance_sampling(M, OBS, n_inner=HUGE, backend="serial"),
        lambda: tempered_smc(M, OBS, n_particles=HUGE),
        lambda: tempered_smc(M, OBS, n_inner=HUGE),
        lambda: SPPE(M, simulations_per_round=HUGE, rounds=1),
        lambda: GaussianMean(n=10**15, epsilon=1.0, clamp=(-2.0, 2.0)),
    ],
    ids=["smc-particles", "smc-batch", "is-theta", "is-inner", "tempered-particles", "tempered-inner",
         "sppe-simulations", "model-records"],
)
def test_absurd_sizes_are_refused_at_once_with_the_estimate(call):
    with pytest.raises(InvalidDataError, match=r"would need about .* of memory.*ask for fewer"):
        call()


def test_absurd_draws_from_a_result_are_refused():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = smc_abc(M, OBS, n_particles=100, schedule=[2.0], backend="serial", seed=0)
    assert res.sample(10, 0).shape == (10, 1)
    with pytest.raises(InvalidDataError, match="sample"):
        res.sample(HUGE, 0)


def test_the_guard_passes_what_fits_and_refuses_what_does_not():
    check_allocation("fits", 1000, 10)  # 80 kB
    with pytest.raises(InvalidDataError):  # known-broken: just above the limit is refused
        check_allocation("too big", physical_memory(), 1, itemsize=1)
    assert np.isfinite(physical_memory()) and physical_memory() > 0
