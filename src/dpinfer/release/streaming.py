"""Clamped sums, means and counts, and ABCDP's embedding mean, from chunked sources.

One entry per release reads a source of any size (:mod:`dpinfer.data.streaming`: arrays in
memory, pyarrow tables, Parquet files or directories streamed in chunks, or Parquet row groups on
a Dask cluster with :class:`~dpinfer.data.streaming.OnDask`) and releases with the same
mechanism as the in-memory path. The confidential statistic is the exact fixed-point sum of
:mod:`dpinfer.privacy.fixed_point` (each record rounded on its own to a grid fixed by the public
bounds, integer totals), so the released value does not depend on the chunking, the partitions
or their order, and memory stays bounded by one chunk. Every check runs during the pass and
refuses before anything is charged; the charge and the noise come after the pass, once.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..data.streaming import EmbeddingSums, accumulate, count_rows
from ..distances.rff_kernels import fixed_point_bits
from ..errors import InvalidDataError, refuse_removed_keywords
from ..privacy.context import FLAT_RELEASE_KEYWORDS, ReleaseContext
from ..privacy.mechanisms.clamped import ClampedRelease, clamped_release
from ..privacy.report import PrivateRelease

__all__ = ["clamped_mean", "clamped_sum", "embedding_mean", "release_clamped"]


@refuse_removed_keywords(FLAT_RELEASE_KEYWORDS)
def release_clamped(
    release: ClampedRelease,
    source: Any,
    *,
    column: str,
    chunk_rows: int | None = None,
    context: ReleaseContext | None = None,
    label: str = "",
) -> PrivateRelease:
    """Release ``release`` (a :func:`~dpinfer.privacy.mechanisms.clamped.clamped_release`) of the
    records in ``column`` of ``source``, streamed in chunks of ``chunk_rows`` (module docstring).

    The same as ``release.release_records(array)`` bit for bit, for every chunking. ``context``:
    the :class:`~dpinfer.privacy.context.ReleaseContext` charged and drawn from (None:
    unaccounted, with a warning); ``label``: the ledger label (default: the context's, else
    ``"clamped <kind> of '<column>'"``). The flat ``ledger=``/``dataset=``/``privacy_rng=``
    keywords are refused with a :class:`TypeError` naming ``context=ReleaseContext(...)``.
    """
    if not isinstance(release, ClampedRelease):
        raise InvalidDataError("release must be a clamped_release(...).")
    if not isinstance(column, str) or not column:
        raise InvalidDataError("column must be the name of the records' column.")
    ctx = ReleaseContext.of(context, label=label)
    sums = accumulate(release.exact_sums(column), source, chunk_rows=chunk_rows)
    return release.release_sums(sums, context=ctx, label=ctx.label or f"clamped {release.kind} of {column!r}")


@refuse_removed_keywords(FLAT_RELEASE_KEYWORDS)
def clamped_mean(
    source: Any,
    *,
    column: str,
    lower: float,
    upper: float,
    n: int,
    epsilon: float,
    mechanism: str = "laplace",
    delta: float = 0.0,
    data_range: tuple[float, float] | None = None,
    chunk_rows: int | None = None,
    context: ReleaseContext | None = None,
    label: str = "",
) -> PrivateRelease:
    """The ε-DP mean of ``column`` clamped to [lower, upper] over the public n records (replace-one,
    sensitivity (upper - lower)/n), from any source (module docstring); ``context`` and ``label``
    as for :func:`release_clamped`."""
    rel = clamped_release("mean", lower, upper, epsilon, n=n, mechanism=mechanism, delta=delta,
                          data_range=data_range)
    return release_clamped(rel, source, column=column, chunk_rows=chunk_rows, context=context, label=label)


@refuse_removed_keywords(FLAT_RELEASE_KEYWORDS)
def clamped_sum(
    source: Any,
    *,
    column: str,
    lower: float,
    upper: float,
    epsilon: float,
    mechanism: str = "laplace",
    delta: float = 0.0,
    neighbouring: str = "replace-one",
    data_range: tuple[float, float] | None = None,
    chunk_rows: int | None = None,
    context: ReleaseContext | None = None,
    label: str = "",
) -> PrivateRelease:
    """The ε-DP sum of ``column`` clamped to [lower, upper] (sensitivity upper - lower under
    replace-one, max(|lower|, |upper|) under add-remove), from any source (module docstring);
    ``context`` and ``label`` as for :func:`release_clamped`."""
    rel = clamped_release("sum", lower, upper, epsilon, mechanism=mechanism, delta=delta,
                          neighbouring=neighbouring, data_range=data_range)
    return release_clamped(rel, source, column=column, chunk_rows=chunk_rows, context=context, label=label)


def embedding_mean(distance: Any, source: Any, *, columns: Any, chunk_rows: int | None = None,
                   n_records: int | None = None) -> np.ndarray:
    """μ̂(Y*) of an :class:`~dpinfer.distances.mmd.RFFMMD` over the records of a source, by the
    release kernel chunk by chunk: the same value, bit for bit, as
    :meth:`~dpinfer.distances.mmd.RFFMMD.fixed_point_mean` of the records in memory (same
    integer sums K, same five roundings ``K·(√(2/D)/N·2⁻ᵇ)``, :mod:`dpinfer.release.embedding`).

    ``n_records`` (public) defaults to the source's row count (Parquet metadata, or one pass);
    the pass refuses a source with another number of records or a non-finite value.
    """
    from ..distances.mmd import RFFMMD

    if not isinstance(distance, RFFMMD) or type(distance)._feature_points is not RFFMMD._feature_points:
        raise InvalidDataError("embedding_mean streams the plain random features of an RFFMMD distance.")
    names = tuple(columns)
    if not names or not all(isinstance(c, str) for c in names):
        raise InvalidDataError("columns must name the data's columns (strings).")
    n = int(n_records) if n_records is not None else count_rows(source, column=names[0])
    bits = fixed_point_bits(n)  # refuses N >= 2^42
    W = distance.frequencies(len(names))
    sums = accumulate(EmbeddingSums(names, W, bits), source, chunk_rows=chunk_rows)
    if sums.rows != n:
        raise InvalidDataError(f"the source holds a different number of records than the {n} declared.")
    if sums.flags["nonfinite"][0]:
        raise InvalidDataError("the observed data hold non-finite values; nothing was released.")
    K = np.array(sums.totals, dtype=np.int64)
    return K.astype(np.float64) * (math.sqrt(2.0 / distance.n_features) / n * 2.0**-bits)
