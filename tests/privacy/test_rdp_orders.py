"""The rdp accountant's orders beyond dp-accounting's grid (top 1024): calibration at large c."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from dpinfer.privacy import (
    CalibrationError,
    GaussianEvent,
    calibrate_gaussian_svt,
    calibrate_noise_multiplier,
    compose,
    gaussian_svt_rdp,
    get_accountant,
)
from dpinfer.privacy.accountants.rdp import RDPAccountant
from dpinfer.privacy.events import GaussianSparseVectorEvent
from dpinfer.privacy.gaussian_svt import noise_ratio

K, DELTA = 50_000, 1e-6


def continuous_epsilon(curve, delta: float) -> tuple[float, float]:
    """inf over α in (1, 10⁶] of dp-accounting's conversion rdp(α) + ln((α-1)/α) - (ln δ + ln α)/(α-1)
    (Balle et al. 2020, Thm 21), by bounded scalar minimisation in ln α; (ε, α*)."""
    def conv(la: float) -> float:
        a = math.exp(la)
        return float(curve(np.array([a]))[0]) + math.log((a - 1) / a) - (math.log(delta) + la) / (a - 1)

    res = minimize_scalar(conv, bounds=(math.log(1.001), math.log(1e6)), method="bounded",
                          options={"xatol": 1e-6})
    return float(res.fun), math.exp(res.x)


def svt(c: int, s: float) -> GaussianSparseVectorEvent:
    return GaussianSparseVectorEvent(c, s, s * noise_ratio(c, False), K, False)


@pytest.mark.parametrize("c", [100, 1000])
def test_calibration_at_large_c_uses_orders_beyond_1024_and_stays_valid(c):
    """c = 100: 9% less noise than on the capped grid; c = 1000: impossible at ε = 1 on the capped
    grid (its ε floor c·ln(k e/c)/1023 ≈ 4.8), calibrated now. Valid: the accountant's ε is never
    below the continuous infimum of the same conversion (a wrongly extended curve would be), is
    within 1% of it, and meets the target."""
    ev = calibrate_gaussian_svt(1.0, DELTA, c, K)
    eps = get_accountant("rdp").epsilon(ev, DELTA)
    cont, a_star = continuous_epsilon(lambda a: gaussian_svt_rdp(ev, a), DELTA)
    assert a_star > 1024
    assert cont - 1e-9 <= eps <= 1.0 and eps <= cont * 1.01
    capped = RDPAccountant(extend=False)
    assert capped.epsilon(ev, DELTA) > 1.05  # the same noise is not certified on the capped grid
    if c == 100:
        s_cap = calibrate_noise_multiplier(lambda s: svt(c, s), 1.0, DELTA, capped, rtol=1e-4)
        assert ev.threshold_noise_multiplier < 0.93 * s_cap
    else:
        with pytest.raises(CalibrationError):
            calibrate_noise_multiplier(lambda s: svt(c, s), 1.0, DELTA, capped, rtol=1e-3,
                                       max_noise_multiplier=1e4)


def test_extension_leaves_interior_optima_unchanged():
    """A Gaussian composition whose best order is inside the grid: same ε with and without it."""
    ev = compose(*[GaussianEvent(2.0)] * 10)
    assert get_accountant("rdp").epsilon(ev, DELTA) == RDPAccountant(extend=False).epsilon(ev, DELTA)
    # a heavily noised one (best order ≈ 1 + σ√(2 ln(1/δ)) ≈ 5000): tighter, matches the infimum
    big = GaussianEvent(1000.0)
    cont, _ = continuous_epsilon(lambda a: a / (2 * 1000.0**2), DELTA)
    eps = get_accountant("rdp").epsilon(big, DELTA)
    assert cont - 1e-9 <= eps <= cont * 1.01 < RDPAccountant(extend=False).epsilon(big, DELTA)
