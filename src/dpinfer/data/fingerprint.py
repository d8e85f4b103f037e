"""The fingerprint of a data set's records, read from any source in bounded memory.

:func:`record_fingerprint` streams a file, query or table (:func:`~dpinfer.data.iter_chunks`)
into a :class:`~dpinfer.privacy.fingerprint.RecordFingerprint`: the same records give the same
fingerprint whatever their order, header names, number formatting, line endings or file format
(exactly what counts as the same data set is stated in :mod:`dpinfer.privacy.fingerprint`). The
ledger binds a budget to it, so trivially changed copies of a file share one budget.
"""

from __future__ import annotations

from typing import Any

from ..privacy.fingerprint import RecordFingerprint
from .table import iter_chunks

__all__ = ["record_fingerprint"]

CHUNK_ROWS = 1 << 16


def record_fingerprint(source: Any, *, chunk_rows: int = CHUNK_ROWS) -> str:
    """SHA-256 hex digest of the multiset of ``source``'s records (every column, by position).

    ``source`` is anything :func:`~dpinfer.data.read_table` reads (a numpy array is fingerprinted
    without names: its columns by position). Memory is bounded by ``chunk_rows``.
    """
    fp = RecordFingerprint()
    names = None
    if hasattr(source, "ndim") and getattr(source, "ndim", 0) in (1, 2) and not hasattr(source, "columns"):
        ncol = 1 if source.ndim == 1 else source.shape[1]
        names = [f"c{j}" for j in range(ncol)]
    for chunk in iter_chunks(source, columns=None, chunk_rows=chunk_rows, names=names):
        fp.update(list(chunk.values()))
    return fp.hexdigest()
