"""``binom_ppf`` is exact in both tails, so the Prop. 4 release reaches only outputs the law allows.

Privacy review: the former inverse CDF summed a running CDF outwards from the mode and, for ``u`` near
1, never reached ``u`` (floating-point summation), returning N: ``N = 1000, p = 1/2, u = 1 - 1e-13``
gave 1000 (exact 616), and with ``K = 1e6, ε = 10`` the output N/N was reachable from one infection
count and not from its neighbour, an infinite privacy loss under the pure-ε claim.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpinfer.errors import InvalidDataError
from dpinfer.models.shipped.sir import BinomialTrajectoryMechanism, binom_ppf
from dpinfer.privacy.context import ReleaseContext

# The privacy uniforms are (j + ½)·2⁻⁵³ clipped to [2⁻⁵⁴, 1 − 2⁻⁵³] (dpinfer.randomness.open_uniforms);
# 1 − 2⁻⁵⁴ is not a double (it rounds to 1.0), so the top of the grid is 1 − 2⁻⁵³.
U_LO = 2.0**-54
U_HI = 1.0 - 2.0**-53
EXTREME_U = np.array(
    [U_LO, 1e-16, 1e-13, 1e-9, 0.5, 1 - 1e-9, 1 - 1e-13, U_HI, 1 - 2.0**-54],  # the last is 1.0
)
NS = [1, 10, 100, 1000, 100_000]
PS = [1e-6, 0.001, 0.3, 0.5, 0.9, 1 - 1e-6]


def reference(u, n, p) -> np.ndarray:
    """The exact quantile from scipy: ``ppf(u)`` for u <= 1/2, ``isf(1 - u)`` above.

    ``1 - u`` is exact for u >= 1/2 and scipy's ``isf`` works on the upper tail; scipy's ``ppf`` is
    itself a few units off for u within ~2⁻⁵³ of 1 (e.g. ``ppf(1 - 2⁻⁵³, 10, 1e-6)`` gives 2, exact
    3; checked with mpmath in :func:`test_mpmath_cross_check`).
    """
    u, n, p = np.broadcast_arrays(np.asarray(u, float), np.asarray(n), np.asarray(p, float))
    lower = stats.binom.ppf(u, n, p)
    upper = stats.binom.isf(1.0 - u, n, p)
    return np.where(u > 0.5, upper, lower).astype(np.int64)


def old_binom_ppf(u: float, n: int, p: float) -> int:
    """The former algorithm, kept as the known-broken variant (pure Python, same arithmetic)."""
    if p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    q = 1.0 - p
    m = min(int(math.floor((n + 1) * p)), n)
    logpm = (
        math.lgamma(n + 1)
        - math.lgamma(m + 1)
        - math.lgamma(n - m + 1)
        + m * math.log(p)
        + (n - m) * math.log(q)
    )
    pm = math.exp(logpm)
    c = pm
    term = pm
    k = m
    while k > 0:
        term *= k / (n - k + 1.0) * q / p
        k -= 1
        c += term
        if term < 1e-18 * c:
            break
    k = m
    term = pm
    if u <= c:
        while k > 0 and c - term >= u:
            c -= term
            term *= k / (n - k + 1.0) * q / p
            k -= 1
        return k
    while c < u and k < n:
        term *= (n - k) / (k + 1.0) * p / q
        k += 1
        c += term
    return k


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("p", PS)
def test_extreme_quantiles_match_reference(n, p):
    got = binom_ppf(EXTREME_U, n, p)
    assert got.dtype == np.int64
    assert np.array_equal(got, reference(EXTREME_U, n, p)), (got, reference(EXTREME_U, n, p))


def test_review_example_and_old_algorithm_is_caught():
    assert binom_ppf(1 - 1e-13, 1000, 0.5) == 616
    assert reference(1 - 1e-13, 1000, 0.5) == 616
    # known-broken variant: the former algorithm returns N there, and fails the extreme grid
    assert old_binom_ppf(1 - 1e-13, 1000, 0.5) == 1000
    wrong = 0
    for n in NS[:-1]:  # pure Python: spare the N = 1e5 walks
        for p in PS:
            old = np.array([old_binom_ppf(float(u), n, p) for u in EXTREME_U[:-1]])
            wrong += int(np.sum(old != reference(EXTREME_U[:-1], n, p)))
    assert wrong > 0


def test_mpmath_cross_check():
    """Exact-arithmetic check of a few extreme points, including ones where scipy's ppf is off."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50

    def pmf(i, n, p):
        p = mp.mpf(p)  # the double, exactly
        return mp.exp(
            mp.loggamma(n + 1)
            - mp.loggamma(i + 1)
            - mp.loggamma(n - i + 1)
            + i * mp.log(p)
            + (n - i) * mp.log1p(-p)
        )

    def tail(k, n, p, step):  # P(X <= k) (step -1) or P(X > k) (step +1), summed until negligible
        s, i = mp.mpf(0), (k if step < 0 else k + 1)
        while 0 <= i <= n:
            t = pmf(i, n, p)
            s += t
            if t < s * mp.mpf(10) ** -40:
                break
            i += step
        return s

    cases = [  # (u, N, p, exact k)
        (1 - 1e-13, 1000, 0.5, 616),
        (U_HI, 10, 1e-6, 3),  # scipy.stats.binom.ppf: 2
        (U_HI, 1000, 0.9, 968),  # scipy.stats.binom.ppf: 967
        (U_HI, 100_000, 0.5, 51298),  # scipy.stats.binom.ppf: 51310
        (U_LO, 100_000, 0.3, 28803),
        (1e-300, 1000, 0.5, 1),  # scipy.stats.binom.ppf: 0 (F(0) = 2^-1000 < 1e-300)
        (5e-324, 100_000, 0.5, 43925),  # subnormal u; scipy.stats.binom.ppf: 43926
        (1e-100, 100, 0.9, 1),  # F(0) = (1 - p)^100 is 2.2e-14 (relative) below u
    ]
    for u, n, p, k in cases:
        assert binom_ppf(u, n, p) == k, (u, n, p)
        if u > 0.5:  # smallest k with P(X > k) <= 1 - u
            v = 1 - mp.mpf(u)
            assert tail(k, n, p, +1) <= v < tail(k - 1, n, p, +1), (u, n, p)
        else:  # smallest k with P(X <= k) >= u
            assert tail(k - 1, n, p, -1) < mp.mpf(u) <= tail(k, n, p, -1), (u, n, p)


def test_random_triples_match_reference():
    rng = np.random.default_rng(20250601)
    m = 100_000
    # u: a third on the privacy grid, a third in each tail (log-uniform down to the grid's ends)
    kind = rng.integers(0, 3, m)
    tail = 10.0 ** -rng.uniform(0, 16.3, m)
    u = (rng.integers(0, 2**53, m).astype(np.float64) + 0.5) * 2.0**-53
    u = np.where(kind == 1, np.maximum(tail, U_LO), u)
    u = np.where(kind == 2, 1.0 - np.maximum(tail, 2.0**-53), u)
    # p: uniform, log-uniform towards 0, log-uniform towards 1
    pk = rng.integers(0, 3, m)
    p = np.where(pk == 0, rng.random(m), 10.0 ** -rng.uniform(0, 8, m))
    p = np.where(pk == 2, 1.0 - p, p)
    ns = np.unique(np.round(10 ** rng.uniform(0, 5, 150)).astype(np.int64))
    n = ns[rng.integers(0, ns.size, m)]
    got = np.empty(m, dtype=np.int64)
    for nn in ns:
        sel = n == nn
        got[sel] = binom_ppf(u[sel], int(nn), p[sel])
    ref = reference(u, n, p)
    bad = np.flatnonzero(got != ref)
    assert bad.size == 0, [(u[i], n[i], p[i], got[i], ref[i]) for i in bad[:10]]
    assert np.all((got >= 0) & (got <= n))


def _fine_u() -> np.ndarray:
    t = np.logspace(np.log10(U_LO), np.log10(0.5), 20_001)
    around_half = 0.5 + np.arange(-2000, 2001) * 2.0**-53
    return np.unique(
        np.concatenate(
            [t, 1.0 - t[t >= 2.0**-53], np.linspace(U_LO, U_HI, 100_001), around_half, [U_LO, U_HI]]
        )
    )


def test_privacy_consequence_reachable_outputs_and_ratio_bound():
    K, d, N, eps = 1_000_000, 1, 1000, 10.0
    mech = BinomialTrajectoryMechanism(K, d, N, eps)
    u = _fine_u()
    reach = {}
    for infected in (0, 1, 3, 4):
        p = float(mech.probabilities(np.array([float(infected)]))[0])
        k = binom_ppf(u, N, p)
        reach[infected] = np.unique(k)
        assert binom_ppf(U_HI, N, p) == reach[infected].max() < N  # N/N is out of reach
    assert np.array_equal(reach[0], reach[1])
    assert np.array_equal(reach[3], reach[4])
    assert np.array_equal(reach[0], np.arange(reach[0].max() + 1))  # 0..9, no gaps
    # the Prop. 4 bound on the binomial pmf ratio holds at every k, reachable ones included
    p0, p1 = mech.probabilities(np.array([0.0, 1.0]))
    k = np.arange(N + 1)
    ratio = np.abs(stats.binom.logpmf(k, N, p0) - stats.binom.logpmf(k, N, p1))
    assert np.all(ratio <= mech.epsilon_exact / d + 1e-9)
    assert mech.epsilon_exact <= eps
    # known-broken variant: the former algorithm sends the top uniform to N/N (binomial log-mass
    # about -9200) from I = 3 but not from its neighbour I = 4 -- an unbounded likelihood ratio
    p3, p4 = mech.probabilities(np.array([3.0, 4.0]))
    assert old_binom_ppf(U_HI, N, p3) == N and old_binom_ppf(U_HI, N, p4) < N
    assert stats.binom.logpmf(N, N, p3) < -9000
    # and G, the mechanism's map of uniforms, inherits the exact tails
    s = np.zeros((2, 1))
    out = mech.G(s, np.array([[U_LO], [U_HI]]))
    assert out[0, 0] == 0.0 and out[1, 0] == reach[0].max() / N


@pytest.mark.slow  # issue 25: moved to `make test-all` for a <= 4 min fast suite
def test_monotone_in_u_and_in_range():
    u = _fine_u()
    rng = np.random.default_rng(7)
    cases = [(n, 0.5) for n in (1, 3, 5, 101, 1001, 100_001)]  # exact CDF ties at 1/2 (odd n)
    cases += [(n, p) for n in NS for p in PS]
    cases += [(int(10 ** rng.uniform(0, 5)), float(p)) for p in rng.random(60)]
    cases += [(int(10 ** rng.uniform(0, 5)), float(10 ** -rng.uniform(0, 9))) for _ in range(20)]
    cases += [(int(10 ** rng.uniform(0, 5)), 1 - float(10 ** -rng.uniform(0, 9))) for _ in range(20)]
    for n, p in cases:
        k = binom_ppf(u, n, p)
        assert np.all(np.diff(k) >= 0), (n, p, np.flatnonzero(np.diff(k) < 0)[:5])
        assert k.min() >= 0 and k.max() <= n


def test_every_output_with_mass_is_reachable_and_no_spurious_atoms():
    u = _fine_u()
    # every k of Bin(10, 1/2) has mass >= 2^-10: all are reached
    assert np.array_equal(np.unique(binom_ppf(u, 10, 0.5)), np.arange(11))
    # 0 and N are reached exactly when their mass exceeds the grid ends (2^-50 does, 2^-60 does not)
    assert binom_ppf(U_LO, 50, 0.5) == 0 and binom_ppf(U_HI, 50, 0.5) == 50
    assert binom_ppf(U_LO, 60, 0.5) == 2 and binom_ppf(U_HI, 60, 0.5) == 58
    # no atom at N from rounding: the top uniform stays far from N where the tail is light
    assert binom_ppf(U_HI, 1000, 0.5) == reference(U_HI, 1000, 0.5) < 1000


def test_conventions_and_shapes():
    assert binom_ppf(0.0, 10, 0.3) == 0 and binom_ppf(-1.0, 10, 0.3) == 0  # scipy: -1
    assert binom_ppf(1.0, 10, 0.3) == 10 and binom_ppf(2.0, 10, 0.3) == 10
    assert binom_ppf(0.7, 10, 0.0) == 0 and binom_ppf(0.7, 10, 1.0) == 10
    assert binom_ppf(0.7, 0, 0.3) == 0
    out = binom_ppf(np.full((2, 3), 0.5), 100, np.array([0.1, 0.5, 0.9]))
    assert out.shape == (2, 3) and np.array_equal(out[0], [10, 50, 90])
    with pytest.raises(InvalidDataError):
        binom_ppf(np.nan, 10, 0.3)
    with pytest.raises(InvalidDataError):
        binom_ppf(0.5, 10, np.nan)


def test_the_release_lives_in_privacy_and_the_model_adds_G(tmp_path):
    """The SIR release (validation, exact binomial draw, event, report) is
    dpinfer.privacy.mechanisms.binomial; models.shipped.sir only adds the inference map G, and
    both public names keep working. The release goes through the one release path (charged
    before the draw, nothing charged on a refusal)."""
    import dpinfer.models
    from dpinfer.errors import InvalidDataError
    from dpinfer.privacy import Ledger
    from dpinfer.privacy.mechanisms import BinomialTrajectoryRelease
    from seeded_privacy_rng import prng

    assert dpinfer.models.BinomialTrajectoryMechanism is BinomialTrajectoryMechanism
    assert issubclass(BinomialTrajectoryMechanism, BinomialTrajectoryRelease)
    assert BinomialTrajectoryMechanism._prepare_release is BinomialTrajectoryRelease._prepare_release
    ledger = Ledger(tmp_path / "l.db", create=True)
    ledger.register("d", 25.0)
    mech = BinomialTrajectoryMechanism(1000, 2, 100, 10.0)
    with pytest.raises(InvalidDataError, match="integers"):
        mech.release([3.5, 2.0], context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=prng(0)))
    assert ledger.history("d") == []
    rel = mech.release([3.0, 900.0], context=ReleaseContext(ledger=ledger, dataset="d", privacy_rng=prng(0)))
    counts = rel.value * 100
    assert np.array_equal(counts, np.round(counts))
    assert rel.privacy.epsilon == pytest.approx(mech.epsilon_exact)
    assert [h["status"] for h in ledger.history("d")] == ["released"]
    with pytest.raises(NotImplementedError, match="G"):  # the release class alone has no G
        BinomialTrajectoryRelease(1000, 2, 100, 10.0).G(np.zeros(2), np.full(2, 0.5))
