"""Simulations an analyst uploads for ABCDP: parsed without pickle, validated, stored, never run.

An upload is one ``.npz`` archive (``numpy.savez``) with two members: ``theta`` (T, p), the
parameter draws, and ``sims`` (T, M, d), one simulated data set of M records of d values per draw
(the layout ``dpinfer simulate`` writes; its ``meta`` member is allowed, never read). It is read
with ``allow_pickle=False`` (an object array is refused, nothing is ever unpickled or executed);
each member's uncompressed size is checked
against the limit *before* it is decompressed (a zip bomb is refused unread); both must be real
numbers (float or int), finite, of the shapes above with the same T. The validated arrays are
written again by the service (not the bytes received) under the analyst's own folder of the state,
and only their shapes are recorded and shown.
"""

from __future__ import annotations

import io
import re
import secrets
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .data import FieldError

MEMBERS = ("theta", "sims")
MAX_DRAWS = 1_000_000
UPLOAD_ID = re.compile(r"^[0-9a-f]{16}$")


@dataclass(frozen=True)
class Upload:
    """A stored, validated upload: its id, shapes and where its arrays are."""

    id: str
    path: Path
    shapes: dict[str, list[int]]

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        with np.load(self.path, allow_pickle=False) as z:
            return np.asarray(z["theta"]), np.asarray(z["sims"])


def parse_upload(raw: bytes, max_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(theta, sims)`` of an uploaded ``.npz`` (module docstring); :class:`FieldError` naming
    the member and the rule otherwise."""
    if len(raw) > max_bytes:
        raise FieldError("body", f"the upload exceeds {max_bytes} bytes.")
    if not zipfile.is_zipfile(io.BytesIO(raw)):
        raise FieldError("body", "the upload is not an .npz archive (numpy.savez).")
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        names = {i.filename: i for i in zf.infolist()}
        for m in MEMBERS:
            info = names.get(f"{m}.npy")
            if info is None:
                raise FieldError(m, f"the upload has no member {m!r} (theta (T, p) and sims (T, M, d)).")
            if info.file_size > 4 * max_bytes:
                raise FieldError(m, f"member {m!r} would decompress to more than {4 * max_bytes} bytes.")
        extra = sorted(set(names) - {f"{m}.npy" for m in MEMBERS} - {"meta.npy"})  # dpinfer simulate's meta
        if extra:
            raise FieldError("body", f"the upload has unexpected member(s) {extra[:5]}.")
    out = {}
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            for m in MEMBERS:
                out[m] = z[m]
    except ValueError:  # an object array (pickle) or a malformed member
        raise FieldError(
            "body", "the upload's arrays must be plain numeric arrays (no pickled objects)."
        ) from None
    theta, sims = out["theta"], out["sims"]
    for m, arr, ndim in (("theta", theta, 2), ("sims", sims, 3)):
        if arr.dtype.kind not in "iuf":
            raise FieldError(
                m, f"{m} must hold real numbers (float or int), got dtype kind {arr.dtype.kind!r}."
            )
        if arr.ndim != ndim or min(arr.shape) < 1:
            want = "(T, p)" if m == "theta" else "(T, M, d)"
            raise FieldError(m, f"{m} must have shape {want}, got {arr.shape}.")
        if not np.all(np.isfinite(arr)):
            raise FieldError(m, f"{m} holds NaN or infinite values.")
    if theta.shape[0] != sims.shape[0]:
        raise FieldError("sims", f"theta has {theta.shape[0]} draws, sims {sims.shape[0]}: they must agree.")
    if theta.shape[0] > MAX_DRAWS:
        raise FieldError("theta", f"at most {MAX_DRAWS} draws per upload.")
    return theta.astype(np.float64), sims.astype(np.float64)


def store_upload(root: Path, analyst: str, theta: np.ndarray, sims: np.ndarray) -> Upload:
    """Write validated arrays under ``root/analyst/`` (the service's own file, uncompressed)."""
    uid = secrets.token_hex(8)
    folder = root / analyst
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uid}.npz"
    with open(path, "wb") as fh:
        np.savez(fh, theta=theta, sims=sims)
    return Upload(uid, path, {"theta": list(theta.shape), "sims": list(sims.shape)})


def find_upload(root: Path, analyst: str, uid: str, shapes: dict[str, Any]) -> Upload | None:
    """The analyst's stored upload ``uid`` (None if the id is not theirs or malformed)."""
    if not UPLOAD_ID.match(uid):
        return None
    path = root / analyst / f"{uid}.npz"
    return Upload(uid, path, shapes) if path.is_file() else None


__all__ = ["MAX_DRAWS", "Upload", "find_upload", "parse_upload", "store_upload"]
