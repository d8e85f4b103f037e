"""Distances: feature norms, agreement RFF vs exact MMD, sensitivity bounds, clipping."""

from __future__ import annotations

import numpy as np
import pytest

from dpinfer.distances import (
    RFFMMD,
    BinnedRFFMMD,
    ClippedDistance,
    Distance,
    ExactMMD,
    SensitivityClippedDistance,
    count_records,
    median_heuristic,
    release_sensitivity,
    weighted_euclidean,
)
from dpinfer.distances.enforce import ENFORCED
from dpinfer.errors import InferenceWarning, InvalidDataError
from dpinfer.privacy import InvalidPrivacyParameterError


def test_rff_features_have_unit_norm_in_both_precisions():
    x = np.random.default_rng(0).normal(size=(50, 3)) * 10
    for dtype in ("float64", "float32"):
        for backend in ("numba", "numpy"):
            d = RFFMMD(1.3, 64, dtype=dtype, backend=backend)
            W = d.frequencies(3)
            for row in x[:10]:
                assert np.linalg.norm(d.embed(row[None], W)) == pytest.approx(1.0, abs=1e-6)


def test_backends_and_precisions_agree():
    rng = np.random.default_rng(1)
    obs, sims = rng.normal(size=(300, 2)), rng.normal(0.2, 1, size=(9, 150, 2))
    ref = RFFMMD(0.8, 200, backend="numpy").batch(RFFMMD(0.8, 200).prepare(obs), sims)
    for dtype in ("float64", "float32"):
        for backend in ("numba", "numpy"):
            d = RFFMMD(0.8, 200, dtype=dtype, backend=backend)
            tol = 1e-10 if dtype == "float64" else 1e-4
            np.testing.assert_allclose(d.batch(d.prepare(obs), sims), ref, atol=tol)


def test_rff_approximates_exact_mmd():
    rng = np.random.default_rng(2)
    obs = rng.normal(size=(200, 1))
    sims = np.stack([rng.normal(mu, 1, size=(200, 1)) for mu in (0.0, 0.5, 1.0, 2.0)])
    exact = ExactMMD(1.0)
    rff = RFFMMD(1.0, 20000, seed=4)
    e = exact.batch(exact.prepare(obs), sims)
    r = rff.batch(rff.prepare(obs), sims)
    # RFF error of the kernel mean: O(1/sqrt(D)) per entry
    np.testing.assert_allclose(r, e, atol=0.03)
    assert np.all(np.diff(e) > 0)


@pytest.mark.parametrize("make", [lambda: RFFMMD(0.7, 50, seed=1), lambda: ExactMMD(0.7)])
def test_replace_one_sensitivity_bound_holds(make):
    """|ρ(Y*, Y) - ρ(Y*', Y)| <= 2/N for many random replacements (Lemma 1)."""
    dist = make()
    rng = np.random.default_rng(3)
    n = 7
    obs = rng.normal(size=(n, 1))
    sims = rng.normal(size=(30, 12, 1)) * 2
    rho = dist.batch(dist.prepare(obs), sims)
    worst = 0.0
    for v in np.linspace(-8, 8, 161):
        obs2 = obs.copy()
        obs2[int(v * 10) % n, 0] = v
        worst = max(worst, np.abs(dist.batch(dist.prepare(obs2), sims) - rho).max())
    assert dist.sensitivity(n) == pytest.approx(2 / n)
    assert worst <= 2 / n + 1e-12
    assert worst > 0.5 / n  # the search does move rho substantially


def test_clipped_distance_sensitivity_and_nan_handling():
    base = weighted_euclidean([1.0, 2.0])
    dist = ClippedDistance(base, clip=3.0)
    obs = np.zeros((5, 2))
    prep = dist.prepare(obs)
    assert dist.sensitivity(5) == pytest.approx(3.0 / 5)
    sims = np.zeros((2, 5, 2))
    sims[0, 0] = [100.0, 0.0]
    sims[1, 1] = [0.0, 0.5]
    np.testing.assert_allclose(dist.batch(prep, sims), [3.0 / 5, 1.0 / 5])

    def nan_base(o, s):
        out = np.zeros(s.shape[:2])
        out[0, 0] = np.nan
        return out

    d2 = ClippedDistance(nan_base, clip=2.0)
    assert d2.batch(d2.prepare(obs), sims)[0] == pytest.approx(2.0 / 5)
    with pytest.raises(InvalidDataError):
        dist.batch(prep, np.zeros((2, 4, 2)))
    with pytest.raises(InvalidPrivacyParameterError):
        ClippedDistance(base, clip=0.0)


def test_bad_inputs():
    d = RFFMMD(1.0, 10)
    with pytest.raises(InvalidDataError):
        d.prepare([1.0, np.nan])
    prep = d.prepare(np.zeros((4, 2)))
    with pytest.raises(InvalidDataError):
        d.batch(prep, np.zeros((3, 5, 1)))
    with pytest.raises(InvalidPrivacyParameterError):
        RFFMMD(1.0, 7)
    with pytest.raises(InvalidPrivacyParameterError):
        ExactMMD(-2.0)


def test_median_heuristic_on_simulated_data():
    rng = np.random.default_rng(4)
    sims = rng.normal(size=(20, 100, 1))
    med = median_heuristic(sims)
    # median |X - Y| for X, Y ~ N(0,1): sqrt(2) * 0.6745
    assert med == pytest.approx(np.sqrt(2) * 0.6745, rel=0.08)
    with pytest.raises(InvalidDataError):
        median_heuristic(np.ones((10, 1)))


def _pairwise_median(points):
    diffs = points[:, None, :] - points[None, :, :]
    iu = np.triu_indices(points.shape[0], k=1)
    return float(np.median(np.sqrt(np.sum(diffs**2, axis=-1))[iu]))


def _gives_the_bandwidth_of_20_dimensional_points(heuristic) -> bool:
    """A single (N, 20) data set: the bandwidth is the median distance of its 20-d points."""
    points = np.random.default_rng(5).normal(size=(300, 20))
    return heuristic(points) == pytest.approx(_pairwise_median(points), rel=1e-9)


def _old_median_heuristic(simulated, max_points=2000, seed=0):
    # the former shape rule: any (N, d) array with d > 16 was read as a stack of scalar data sets
    arr = np.asarray(simulated, dtype=np.float64)
    if arr.ndim == 2 and arr.shape[1] > 16:
        arr = arr.reshape(-1, 1)
    return median_heuristic(arr, max_points, seed)


def test_median_heuristic_reads_an_n_by_d_array_as_one_data_set_of_d_dimensional_points():
    assert _gives_the_bandwidth_of_20_dimensional_points(median_heuristic)
    # known-broken variant: the old heuristic computed the bandwidth of the scalar entries
    assert not _gives_the_bandwidth_of_20_dimensional_points(_old_median_heuristic)


def test_median_heuristic_stacks_are_explicit():
    rng = np.random.default_rng(6)
    scalar_sets = rng.normal(size=(30, 40))  # 30 data sets of 40 scalar points
    pooled = scalar_sets.reshape(-1, 1)
    assert median_heuristic(scalar_sets, stacked=True) == median_heuristic(pooled)
    assert median_heuristic(scalar_sets[:, :, None]) == median_heuristic(pooled)  # (T, N, d)
    assert median_heuristic(scalar_sets[:, :, None], stacked=True) == median_heuristic(pooled)
    # without stacked=True the same array is 30 points of dimension 40
    assert median_heuristic(scalar_sets) == pytest.approx(_pairwise_median(scalar_sets), rel=1e-9)
    with pytest.raises(InvalidDataError, match="stacked=True"):
        median_heuristic(pooled[:, 0], stacked=True)
    assert RFFMMD.from_simulations(scalar_sets, stacked=True).bandwidth == median_heuristic(pooled)
    assert ExactMMD.from_simulations(scalar_sets, stacked=True).bandwidth == median_heuristic(pooled)


def test_vectorised_sincos_kernel_is_accurate():
    from dpinfer.distances.rff_kernels import sincos_array

    for scale in (1.0, 100.0, 2.0**19):
        x = np.random.default_rng(5).uniform(-scale, scale, 200_000)
        s, c = sincos_array(x)
        assert np.abs(s - np.sin(x)).max() < 4.5e-16
        assert np.abs(c - np.cos(x)).max() < 4.5e-16


def test_large_arguments_fall_back_to_libm():
    obs = np.array([[1e6], [2e6]])
    sims = np.array([[[1e6], [3e6]]])
    a = RFFMMD(0.5, 8, backend="numba")
    b = RFFMMD(0.5, 8, backend="numpy")
    np.testing.assert_allclose(a.batch(a.prepare(obs), sims), b.batch(b.prepare(obs), sims), atol=1e-9)


def test_binned_rff_has_unit_norm_exact_sensitivity_and_small_error():
    from dpinfer.distances import BinnedRFFMMD

    rng = np.random.default_rng(6)
    obs = rng.uniform(0, 5, size=(1000, 1))
    sims = rng.uniform(0, 5, size=(6, 400, 1))
    binned = BinnedRFFMMD(0.6, 100, lo=0.0, hi=5.0, n_bins=4096)
    exact = RFFMMD(0.6, 100)
    for x in (-3.0, 0.0, 2.2, 7.0):  # also outside the grid: edge bins
        assert np.linalg.norm(binned.embed(np.array([[x]]))) == pytest.approx(1.0)
    pb, pe = binned.prepare(obs), exact.prepare(obs)
    assert binned.sensitivity(1000) == pytest.approx(2 / 1000)
    err = np.abs(binned.batch(pb, sims) - exact.batch(pe, sims)).max()
    # each feature moves by at most ||w||·h/2 per point
    h = 5.0 / 4096
    bound = np.abs(exact.frequencies(1)).max() * h / 2 * 2
    assert err < bound


def test_vectorised_float32_sincos_kernel_matches_numpy_float32_accuracy():
    from dpinfer.distances.rff_kernels import sincos32_array

    x = np.random.default_rng(7).uniform(-(2.0**12), 2.0**12, 200_000).astype(np.float32)
    s, c = sincos32_array(x)
    xd = x.astype(np.float64)
    ref_err = max(np.abs(np.sin(x) - np.sin(xd)).max(), np.abs(np.cos(x) - np.cos(xd)).max())
    assert np.abs(s - np.sin(xd)).max() < 2.5 * ref_err
    assert np.abs(c - np.cos(xd)).max() < 2.5 * ref_err
    np.testing.assert_allclose(s.astype(np.float64) ** 2 + c.astype(np.float64) ** 2, 1.0, atol=1e-6)


# ---- sensitivity from public bounds only (issue 23, finding 5) ------------------------------


class MeanAbsDistance(Distance):
    """A user's distance: mean over n records of min(|y_j - y*_j|, 1); true Δρ = 1/n, declared
    ``factor``/n (factor 0.5: half the true sensitivity)."""

    name = "mean-abs"

    def __init__(self, factor: float = 1.0) -> None:
        self.factor = factor

    def prepare(self, observed):
        return np.asarray(observed, dtype=np.float64).reshape(-1)

    def batch(self, prepared, sims):
        sims = np.asarray(sims, dtype=np.float64).reshape(-1, prepared.size)
        return np.minimum(np.abs(sims - prepared[None]), 1.0).mean(axis=1)

    def sensitivity(self, n_records):
        return self.factor / n_records


def test_library_distances_declare_sensitivity_and_bound_from_n_only():
    for dist, sens, bound in ((RFFMMD(0.7, 20), 2 / 9, 2.0), (ExactMMD(0.7), 2 / 9, 2.0),
                              (BinnedRFFMMD(0.7, 20), 2 / 9, 2.0),
                              (ClippedDistance(weighted_euclidean([1.0]), 3.0), 3 / 9, 3.0)):
        # the declared values cover the rounding of the computed distance: a hair above the exact ones
        assert sens <= dist.sensitivity(9) == pytest.approx(sens, rel=1e-9)
        assert bound <= dist.bound(9) == pytest.approx(bound, rel=1e-3)
        plan = release_sensitivity(dist, 9)
        assert plan.distance is dist and not plan.enforced and "Park et al. 2021" in plan.proof
        # the data never reach it: a prepared object (the old interface) is refused
        with pytest.raises(InvalidPrivacyParameterError):
            dist.sensitivity(dist.prepare(np.zeros((9, 1))))
    assert count_records(np.zeros((7, 3))) == 7 and count_records([1.0, 2.0]) == 2
    for bad in (np.zeros((0, 2)), 3.0, [[1.0], [2.0, 3.0]]):
        with pytest.raises(InvalidDataError):
            count_records(bad)


def test_unproven_distance_is_clipped_to_its_declared_sensitivity():
    """A user's distance (or a subclass of a library one) is not trusted: the release clips it to
    [0, Δρ], so two neighbours' distances differ by at most the declared Δρ whatever it computes.
    Half the true sensitivity: the raw distance moves by 2x the declaration, the clipped one by
    at most the declaration (known-broken variant: trusting it)."""
    n = 4
    obs = np.zeros(n)
    obs_prime = obs.copy()
    obs_prime[0] = 5.0  # one record replaced
    sims = np.full((3, n), 1.0 / 3.0)
    sims[:, 0] = [5.0, 5.0, 0.0]
    half = MeanAbsDistance(0.5)
    with pytest.warns(InferenceWarning, match="clips the distance"):
        plan = release_sensitivity(half, n)
    assert plan.enforced and plan.proof == ENFORCED and plan.sensitivity == 0.5 / n == plan.bound
    assert isinstance(plan.distance, SensitivityClippedDistance)
    raw = np.abs(half.batch(half.prepare(obs), sims) - half.batch(half.prepare(obs_prime), sims)).max()
    d = plan.distance
    clipped = np.abs(d.batch(d.prepare(obs), sims) - d.batch(d.prepare(obs_prime), sims)).max()
    assert raw == pytest.approx(1.0 / n)  # the true sensitivity, 2x the declaration (broken: trusted)
    assert clipped <= plan.sensitivity + 1e-15
    # NaN, ±inf and negative values land in [0, Δρ] too (no data-dependent refusal)

    class Wild(MeanAbsDistance):
        def batch(self, prepared, sims):
            return np.array([np.nan, np.inf, -np.inf, -1.0, 0.01])

    with pytest.warns(InferenceWarning):
        wild = release_sensitivity(Wild(), n).distance
    np.testing.assert_array_equal(wild.batch(None, None), [1.0 / n, 1.0 / n, 0.0, 0.0, 0.01])
    # a subclass of a proven distance is enforced too (it may change batch)

    class Tweaked(RFFMMD):
        pass

    with pytest.warns(InferenceWarning):
        assert release_sensitivity(Tweaked(0.5, 10), 10).enforced


@pytest.mark.parametrize("declared", [1e-310, 0.0, -1.0, float("nan"), float("inf"), 1e301, "x", True])
def test_vanishing_or_invalid_sensitivity_is_refused(declared):
    class Declared(MeanAbsDistance):
        def sensitivity(self, n_records):
            return declared

    with pytest.raises(InvalidPrivacyParameterError, match="sensitivity"):
        release_sensitivity(Declared(), 4)


def test_writable_and_read_only_simulations_share_one_compiled_kernel():
    """numba specialises on the writeable flag; the distances hand their kernels read-only views
    (no copy), so read-only simulations (a memory map, a cached batch) compile nothing new."""
    from dpinfer.distances import mmd, rff_kernels

    rng = np.random.default_rng(3)
    obs = rng.normal(size=(20, 2))
    frozen = rng.normal(size=(3, 20, 2))
    frozen.flags.writeable = False
    for d in (RFFMMD(0.9, 16, backend="numba"), ExactMMD(0.9)):
        p = d.prepare(obs)
        assert np.array_equal(d.batch(p, frozen), d.batch(p, frozen.copy()))
    assert len(rff_kernels.rff_sums_fast.signatures) == 1
    assert len(mmd._exact_mmd2.signatures) == 1
