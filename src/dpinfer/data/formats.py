"""The data file formats read by :mod:`dpinfer.data`, told by the file's extension."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InvalidDataError

__all__ = ["ARROW", "CSV", "PARQUET", "file_format"]

PARQUET = (".parquet", ".pq")
ARROW = (".arrow", ".feather", ".ipc")
CSV = (".csv", ".tsv", ".txt")


def file_format(path: str | os.PathLike[str]) -> str:
    """``"parquet"``, ``"arrow"`` or ``"csv"`` from a file's extension (refused otherwise)."""
    suffix = Path(path).suffix.lower()
    for fmt, exts in (("parquet", PARQUET), ("arrow", ARROW), ("csv", CSV)):
        if suffix in exts:
            return fmt
    raise InvalidDataError(
        f"cannot read {Path(path).name!r}: the data file must be Parquet ({', '.join(PARQUET)}), Arrow IPC "
        f"({', '.join(ARROW)}) or CSV ({', '.join(CSV)})."
    )
