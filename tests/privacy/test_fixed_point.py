"""Exact fixed-point sums: the totals equal an integer reference exactly, are the same bits for
every chunking (1, 7, 1000, all, and random cuts), never overflow at the bounds, count rule
violations per column, and a float-accumulating variant fails the same checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpinfer.inference.glm import StatisticLayout
from dpinfer.privacy import fixed_point
from dpinfer.privacy.fixed_point import (
    BINARY,
    GLM_BITS,
    INTEGER,
    REAL,
    ClampedSums,
    GLMSums,
    HistogramCounts,
    clamp_grid,
)

N = 2000
D = 3


def _data(seed=0, n=N):
    rng = np.random.default_rng(seed)
    X = rng.uniform(10, 30, size=(n, D))
    return {"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": rng.poisson(2.0, n).clip(0, 8).astype(float),
            "o": rng.uniform(-1, 2, n), "z": rng.normal(1, 3, n), "k": rng.integers(0, 6, n).astype(float)}


def _glm_spec(family="poisson", offset=True):
    feats = (("a", 10.0, 30.0), ("b", 10.0, 30.0), ("c", 10.0, 30.0))
    cols = [(lo, hi, (lo + hi) / 2, 2 / (hi - lo), REAL) for _, lo, hi in feats]
    if family == "poisson":
        cols.append((0.0, 8.0, 0.0, 1 / 8, INTEGER))
    elif family == "logistic":
        cols.append((-math.inf, math.inf, 0.0, 1.0, BINARY))
    else:
        cols.append((0.0, 8.0, 4.0, 1 / 4, REAL))
    if offset:
        cols.append((-1.0, 2.0, 0.5, 2 / 3, REAL))
    lo, hi, c, inv, kind = (tuple(v) for v in zip(*cols, strict=True))
    return GLMSums(("a", "b", "c"), "y", "o" if offset else None, lo, hi, c, inv, kind,
                   has_y2=family == "linear")


def _chunked(spec, data, cuts):
    total = spec.zero()
    edges = [0, *sorted(cuts), len(next(iter(data.values())))]
    for s, e in zip(edges[:-1], edges[1:], strict=True):
        total = total + spec.partial({k: v[s:e] for k, v in data.items()})
    return total


def _by_size(spec, data, size):
    n = len(next(iter(data.values())))
    return _chunked(spec, data, list(range(size, n, size)))


SPECS = {
    "glm-poisson-offset": lambda: _glm_spec("poisson", True),
    "glm-linear": lambda: _glm_spec("linear", False),
    "clamped": lambda: ClampedSums("z", -2.0, 5.5),
    "clamped-integer": lambda: ClampedSums("k", 1.0, 4.0, integer=True),
    "histogram": lambda: HistogramCounts(("a", "k"), (12.0, 0.0), (28.0, 5.0), (7, 6), (False, True)),
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_totals_are_the_same_bits_for_chunks_of_1_7_1000_and_all(name):
    spec, data = SPECS[name](), _data()
    runs = [_by_size(spec, data, s) for s in (1, 7, 1000, N)]
    assert all(r == runs[0] for r in runs)  # totals, row count and flags
    assert runs[0].rows == N
    f = [r.as_float(1.0) for r in runs]
    assert all(np.array_equal(v, f[0]) and v.tobytes() == f[0].tobytes() for v in f)



@pytest.mark.parametrize("name", ["glm-poisson-offset", "histogram"])
def test_a_chunk_longer_than_one_kernel_block_gives_the_same_totals(name):
    """A chunk of 2.1 kernel blocks (2^15 rows each) equals chunks of 1000 rows, bit for bit."""
    n = 2 * fixed_point._KERNEL_ROWS + 3277
    spec, data = SPECS[name](), _data(5, n)
    whole = spec.partial(data)
    assert whole == _by_size(spec, data, 1000) and whole.rows == n


def test_the_multi_column_kernels_are_compiled_once_for_any_number_of_columns():
    """One compiled signature serves 1 to 4 features and 1 to 3 histogram columns (a tuple of
    column arrays would compile a new type for each count)."""
    data = _data(6, 50)
    for k in range(1, 4):
        feats = tuple("abc"[:k])
        GLMSums(feats, "y", None, (10.0,) * k + (0.0,), (30.0,) * k + (8.0,), (20.0,) * k + (0.0,),
                (0.1,) * k + (1 / 8,), (REAL,) * k + (INTEGER,)).partial(data)
        HistogramCounts(feats, (10.0,) * k, (30.0,) * k, (4,) * k, (False,) * k).partial(data)
    assert len(fixed_point._glm_kernel.signatures) == 1
    assert len(fixed_point._histogram_kernel.signatures) == 1

@settings(max_examples=40, deadline=None, derandomize=True)
@given(cuts=st.lists(st.integers(0, N), max_size=25), name=st.sampled_from(sorted(SPECS)))
def test_random_chunkings_give_the_same_totals(cuts, name):
    spec, data = SPECS[name](), _data(1)
    assert _chunked(spec, data, cuts) == spec.partial(data)


def test_the_glm_totals_equal_an_integer_reference_exactly():
    """Each value rounded on its own (rint((x - c)·inv·2^b), clipped), then Python-integer sums of
    the products in the StatisticLayout order: the kernel's totals are these integers."""
    spec, data = _glm_spec("poisson", True), _data(2)
    unit = 2**GLM_BITS

    def snap(v, j):
        return np.clip(np.rint((v - spec.center[j]) * spec.inv[j] * unit), -unit, unit).astype(np.int64)

    r = [np.full(N, unit, dtype=np.int64)] + [snap(data[c], j) for j, c in enumerate("abc")]
    r.append(snap(data["o"], 4))
    yk = snap(data["y"], 3)
    lay = StatisticLayout(D, True, False)
    j, k = lay.pairs
    ref = [int(np.sum(yk * r[q])) for q in range(D + 1)]
    ref += [int(np.sum(r[a] * r[b])) for a, b in zip(j, k, strict=True)]
    assert spec.partial(data).totals == tuple(ref)
    # and the released float statistic is the layout's statistic up to the grid (2^-22 per value)
    xs = np.column_stack([(data[c] - 20) / 10 for c in "abc"])
    float_stat = lay.statistic(xs, data["y"] / 8, (data["o"] - 0.5) / 1.5)
    exact = spec.partial(data).as_float(spec.scale) * lay.weights
    assert np.allclose(exact, float_stat, rtol=0, atol=N * 2.0**-GLM_BITS)


def test_the_clamped_sum_is_exact_and_stays_inside_the_clamp_interval():
    data = _data(3)
    spec = ClampedSums("z", -2.0, 5.5)
    g, klo, khi = clamp_grid(-2.0, 5.5)
    assert g == 2.0**-37 and klo * g >= -2.0 and khi * g <= 5.5  # 5.5 < 2^3: g = 2^(3-40)
    k = np.clip(np.rint(np.clip(data["z"], -2.0, 5.5) / g), klo, khi).astype(np.int64)
    total, count = spec.partial(data).totals
    assert total == int(k.sum()) and count == N
    assert float(total) * g == pytest.approx(np.clip(data["z"], -2, 5.5).sum(), rel=1e-12)


def test_no_overflow_with_every_record_at_the_corners():
    """Every value at ±1 (the largest products, 2^44): block sums reach 2^53 exactly, totals n·2^44."""
    n = 5000
    data = {c: np.full(n, 30.0) for c in "abc"} | {"y": np.full(n, 8.0), "o": np.full(n, 2.0)}
    spec = _glm_spec("linear", True)
    tot = spec.partial(data)
    assert set(tot.totals) == {n * 2 ** (2 * GLM_BITS)}
    clamp = ClampedSums("z", -3.0, 2.0**40 - 1)
    big = clamp.partial({"z": np.full(n, 2.0**41)})
    assert big.totals[0] * clamp.grid == n * (2.0**40 - 1)


def test_violations_are_counted_per_column_never_shown():
    data = _data(4)
    data["b"] = data["b"].copy()
    data["b"][[3, 9]] = [31.0, 9.0]
    data["c"] = data["c"].copy()
    data["c"][5] = np.nan
    data["y"] = data["y"].copy()
    data["y"][7] = 2.5
    flags = _glm_spec("poisson", True).partial(data).flags
    assert flags == {"nonfinite": (0, 0, 1, 0, 0), "outside": (0, 2, 0, 0, 0), "kind": (0, 0, 0, 1, 0)}
    h = HistogramCounts(("k",), (0.0,), (5.0,), (6,), (True,)).partial({"k": np.array([1.0, 2.5, np.inf])})
    assert h.flags == {"nonfinite": (1,), "kind": (1,)}


# a known-broken variant: the float sums of the per-record statistic, chunk by chunk
def _float_glm(data, size):
    lay = StatisticLayout(D, True, False)
    total = np.zeros(lay.dim)
    n = len(data["a"])
    for s in range(0, n, size):
        xs = np.column_stack([(data[c][s:s + size] - 20) / 10 for c in "abc"])
        total = total + lay.statistic(xs, data["y"][s:s + size] / 8, (data["o"][s:s + size] - 0.5) / 1.5)
    return total


def _same_bits(arrays):
    return all(a.tobytes() == arrays[0].tobytes() for a in arrays)


def test_the_bit_identity_check_catches_float_accumulation():
    data = _data(5)
    spec = _glm_spec("poisson", True)
    lay = StatisticLayout(D, True, False)
    sizes = (1, 7, 1000, N)
    assert _same_bits([_by_size(spec, data, s).as_float(spec.scale) * lay.weights for s in sizes])
    assert not _same_bits([_float_glm(data, s) for s in sizes])
