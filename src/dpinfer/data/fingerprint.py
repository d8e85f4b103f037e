"""The fingerprint of a data set's records, read from any source in bounded memory.

:func:`record_fingerprint` streams a file, query or table (:func:`~dpinfer.data.iter_chunks`)
into a :class:`~dpinfer.privacy.fingerprint.RecordFingerprint`: the same records give the same
fingerprint whatever their order, header names, number formatting, line endings or file format
(exactly what counts as the same data set is stated in :mod:`dpinfer.privacy.fingerprint`). The
ledger binds a budget to it, so trivially changed copies of a file share one budget.
"""

from __future__ import annotations

from typing import Any

from ..errors import DPInferError
from ..privacy.fingerprint import RecordFingerprint, file_fingerprint
from .table import iter_chunks

__all__ = ["data_file_fingerprint", "record_fingerprint"]

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


def data_file_fingerprint(path: Any, *, ledger: Any = None, dataset: str | None = None) -> str:
    """The fingerprint a data file's budget is bound to: its records (:func:`record_fingerprint`).

    A file that cannot be parsed as a table is identified by its bytes (its release is refused by
    the reader anyway); a budget that an earlier version bound to the file's SHA-256 (``ledger``
    and ``dataset`` given) keeps being matched by it.
    """
    try:
        fp = record_fingerprint(path)
    except (DPInferError, OSError, ValueError):
        return file_fingerprint(path)  # not a table: its bytes
    if ledger is not None and dataset is not None:
        try:
            registered = ledger.budget(dataset).fingerprint
        except DPInferError:
            registered = None
        if registered is not None and registered != fp:
            legacy = file_fingerprint(path)
            if registered == legacy:  # bound to the file's bytes by an earlier version
                return legacy
    return fp
