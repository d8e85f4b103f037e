"""Fingerprints of confidential data: SHA-256 digests that bind a ledger budget to its data.

A data set may be registered in a :class:`~dpinfer.privacy.ledger.Ledger` with a fingerprint of
its data (:func:`data_fingerprint` for arrays, :func:`file_fingerprint` for files, or any hex
digest), and a charge may carry the fingerprint of the data it releases
(:meth:`~dpinfer.privacy.ledger.Ledger.for_data`; the releasing commands pass the file's). The
ledger looks a fingerprint up across all its data sets: it cannot be registered under a second
name, nor charged to a data set other than the one it is bound to (or was first charged to), so
the same data cannot get a second budget by accident. A fingerprint is a hash of exact values
(arrays) or exact bytes (files): reordered records, one changed value or a reformatted file give
a different fingerprint, so it catches accidental re-registration and mix-ups, not an adversary.

:class:`RecordFingerprint` (what the command line binds budgets to; ``dpinfer.data.record_fingerprint``
reads any file or table into it) identifies a data set by its *records*, not its bytes. Two tables
are the same data set when they hold the same multiset of rows, each row compared cell by cell in
column order, where

* a number is its value as a float64 (``0.1``, ``0.10``, ``1e-1`` and ``1.0``/``1`` are equal;
  booleans are 0/1; ``-0.0`` is ``0.0``); integers beyond 2**53 are compared exactly as int64;
* a text cell is its exact UTF-8 string (case and inner spaces count);
* a missing cell (empty CSV cell, null, NaN) is "missing", whatever the column's type;
* row order, column *names* (headers), line endings (CRLF/LF), a final newline, quoting, the file
  format (CSV, Parquet, Arrow) and how the rows are split into chunks or files do **not** count;
* the number of columns and their *order* do count (columns are matched by position, not by
  name, so that renaming a header keeps the data set), and so does every row's multiplicity
  (a duplicated record is another data set).

Construction (order-independent, streaming): each row's canonical encoding (per cell: a type tag,
then the float64 / int64 bytes, or the length and UTF-8 bytes of text) is hashed with BLAKE2b-256
(keyed with a domain tag); the 256-bit row digest is split into four 64-bit words, each reduced
modulo the Mersenne prime p = 2**61 - 1, and the rows' words are *added* lane by lane modulo p
(the additive multiset hash MSet-Add-Hash of Clarke et al., 2003). Addition commutes, so the result
is independent of row order and of the chunking, and a chunk's contribution needs O(1) memory.
Why it is collision-safe for accidental collisions: two different multisets differ in the
multiplicity c_r of some row r, with 0 < |c_r| < p (fewer than 2**61 rows), so a lane's sums agree
only if c_r·h(r) equals a value fixed by the other rows, mod p; p being prime, c_r is invertible,
and with a random-oracle row hash h(r) mod p takes any one value with probability at most
9/2**64 (a 64-bit word reduced mod p). The four lanes use disjoint digest words, so a collision
has probability at most (9/2**64)**4 < 2**-243 per pair of data sets, whatever their size and
row order (sorting rows, the alternative, would need memory for every row digest). It is *not*
secure against an adversary who crafts colliding data sets (Wagner's generalised birthday attack applies to
additive hashes); like the byte fingerprint it guards against accidental re-registration and
mix-ups. The final fingerprint is SHA-256 over a version tag, the column count, the row count
and the four lane sums.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any

import numpy as np

from ..errors import InvalidDataError, InvalidPrivacyParameterError

__all__ = ["RecordFingerprint", "as_fingerprint", "data_fingerprint", "file_fingerprint"]

_FINGERPRINT_TAG = b"dpinfer-data-fingerprint-v1\0"
_HEX = re.compile(r"[0-9a-fA-F]{16,}")


def data_fingerprint(data: Any) -> str:
    """A SHA-256 hex digest of an array's values, shape and (normalised) dtype.

    The array is made C-contiguous and little-endian; booleans, integers of magnitude up to
    2**53 and floats are hashed as float64 (so the same numbers held as ``int`` or ``float`` give
    the same fingerprint), larger integers as int64/uint64. ``-0.0`` is hashed as ``0.0`` and
    every NaN as the same NaN. Any other change (one value, the order of the records, the shape)
    gives a different fingerprint: it identifies exact data, it does not detect near-copies.
    Pure: nothing is stored or charged.

    Raises
    ------
    InvalidDataError
        If ``data`` is not numeric (strings, objects, complex numbers).
    """
    arr = np.asarray(data)
    kind = arr.dtype.kind
    if kind in "iu" and arr.size and not (-(2**53) <= int(arr.min()) and int(arr.max()) <= 2**53):
        norm = np.ascontiguousarray(arr, dtype=np.dtype("<u8" if kind == "u" else "<i8"))
    elif kind in "biuf":
        norm = np.ascontiguousarray(arr, dtype=np.dtype("<f8")) + 0.0  # -0.0 -> 0.0
        norm[np.isnan(norm)] = np.nan
    else:
        raise InvalidDataError(
            f"cannot fingerprint data of dtype {arr.dtype}: pass a numeric array (or a hex digest "
            "string computed elsewhere)."
        )
    h = hashlib.sha256(_FINGERPRINT_TAG)
    h.update(f"{norm.dtype.str}{norm.shape}".encode())
    h.update(norm.tobytes())
    return h.hexdigest()


def file_fingerprint(path: str | os.PathLike[str]) -> str:
    """SHA-256 hex digest of a file's bytes (what ``sha256sum`` prints).

    This is what ``dpinfer budget init --data FILE`` registers and what ``dpinfer release``,
    ``dpinfer dpvi``, ``dpinfer abcdp`` and ``dpinfer synthesize --covariates`` charge with: the
    same records in a reformatted file (other number formatting, column order, line endings) are
    a different fingerprint.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def as_fingerprint(fingerprint: Any) -> str | None:
    """The fingerprint to register from what :meth:`Ledger.register` accepts.

    ``None`` (no fingerprint), a hex digest string of at least 16 digits (lower-cased), raw
    ``bytes`` (hashed like a file's bytes, as :func:`file_fingerprint`) or array-like data (hashed
    by :func:`data_fingerprint`).
    """
    if fingerprint is None:
        return None
    if isinstance(fingerprint, str):
        fp = fingerprint.strip()
        if not _HEX.fullmatch(fp):
            raise InvalidPrivacyParameterError(
                f"a fingerprint string must be a hex digest of at least 16 digits, got {fingerprint!r}"
                "; pass the data itself to have it hashed."
            )
        return fp.lower()
    if isinstance(fingerprint, (bytes, bytearray, memoryview)):
        return hashlib.sha256(bytes(fingerprint)).hexdigest()  # as file_fingerprint of those bytes
    return data_fingerprint(fingerprint)


_RECORD_TAG = b"dpinfer-records-v1"
_P61 = (1 << 61) - 1
_EXACT = 2**53


class RecordFingerprint:
    """Order-independent fingerprint of a table's records, fed chunk by chunk (module docstring).

    ``update(columns)`` takes one chunk as a sequence of equal-length 1-D columns (numbers,
    booleans or text; ``None``/NaN are missing), always in the same column order; ``hexdigest()``
    gives the SHA-256 hex digest. Chunks may come in any order and any size: the digest is that of
    the multiset of rows. Pure: nothing is stored or charged.
    """

    def __init__(self) -> None:
        self._lanes = [0, 0, 0, 0]
        self._rows = 0
        self._ncols: int | None = None

    def update(self, columns: Any) -> RecordFingerprint:
        cols = [np.asarray(c) for c in columns]
        if self._ncols is None:
            self._ncols = len(cols)
        elif len(cols) != self._ncols:
            raise InvalidDataError(
                f"a chunk has {len(cols)} columns, earlier chunks {self._ncols}: fingerprint one table."
            )
        if not cols:
            return self
        n = cols[0].shape[0]
        if any(c.ndim != 1 or c.shape[0] != n for c in cols):
            raise InvalidDataError("a chunk's columns must be 1-D and of equal length.")
        if n == 0:
            return self
        parts = [_encode_column(c) for c in cols]
        if all(isinstance(p, np.ndarray) for p in parts):
            rows = np.concatenate([p.reshape(n, -1) for p in parts if isinstance(p, np.ndarray)], axis=1)
            buf = np.ascontiguousarray(rows).tobytes()
            w = rows.shape[1]
            encoded: Any = (buf[i * w:(i + 1) * w] for i in range(n))
        else:
            fixed = [p if isinstance(p, list) else [bytes(r) for r in p.reshape(n, -1)] for p in parts]
            encoded = (b"".join(cells) for cells in zip(*fixed, strict=True))
        digests = b"".join(
            hashlib.blake2b(row, digest_size=32, key=_RECORD_TAG).digest() for row in encoded
        )
        words = np.frombuffer(digests, dtype="<u8").reshape(n, 4) % np.uint64(_P61)
        lo = (words & np.uint64(0xFFFFFFFF)).sum(axis=0, dtype=np.uint64)  # < 2**32 rows per chunk
        hi = (words >> np.uint64(32)).sum(axis=0, dtype=np.uint64)
        for j in range(4):
            self._lanes[j] = (self._lanes[j] + (int(hi[j]) << 32) + int(lo[j])) % _P61
        self._rows += n
        return self

    @property
    def rows(self) -> int:
        return self._rows

    def hexdigest(self) -> str:
        h = hashlib.sha256(_RECORD_TAG + b"\0")
        h.update(f"{self._ncols or 0}:{self._rows}:".encode())
        h.update(b"".join(v.to_bytes(8, "little") for v in self._lanes))
        return h.hexdigest()


def _encode_column(col: np.ndarray) -> np.ndarray | list[bytes]:
    """Per-cell canonical encodings: an (n, 9) uint8 array for numbers, a list of bytes for text."""
    n = col.shape[0]
    kind = col.dtype.kind
    if kind in "iu" and n and not (-_EXACT <= int(col.min()) and int(col.max()) <= _EXACT):
        out = np.zeros((n, 9), dtype=np.uint8)
        out[:, 0] = ord("I")
        out[:, 1:] = np.ascontiguousarray(col, dtype="<i8").view(np.uint8).reshape(n, 8)
        return out
    if kind in "biuf":
        v = np.ascontiguousarray(col, dtype="<f8") + 0.0  # -0.0 -> 0.0
        missing = np.isnan(v)
        v[missing] = 0.0
        out = np.zeros((n, 9), dtype=np.uint8)
        out[:, 0] = np.where(missing, ord("Z"), ord("N"))
        out[:, 1:] = v.view(np.uint8).reshape(n, 8)
        return out
    if kind in "USO":
        cells: list[bytes] = []
        for x in col.tolist():
            if x is None or (isinstance(x, float) and x != x):
                cells.append(b"Z" + bytes(8))
            elif isinstance(x, str):
                b = x.encode("utf-8")
                cells.append(b"S" + len(b).to_bytes(8, "little") + b)
            elif isinstance(x, (bool, int, float, np.integer, np.floating, np.bool_)):
                cells.append(bytes(_encode_column(np.asarray([x]))[0]))
            else:
                raise InvalidDataError(
                    f"cannot fingerprint a cell of type {type(x).__name__}: numbers, booleans and text only."
                )
        return cells
    raise InvalidDataError(f"cannot fingerprint a column of dtype kind {kind!r}.")
