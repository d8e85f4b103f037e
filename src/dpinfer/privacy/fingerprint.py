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
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import Any

import numpy as np

from ..errors import InvalidDataError, InvalidPrivacyParameterError

__all__ = ["as_fingerprint", "data_fingerprint", "file_fingerprint"]

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
