"""The files shipped in ``dpinfer/datasets/data`` (provenance in ``DATA.md``) and their readers."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np

ABALONE_COLUMNS = (
    "Sex",
    "Length",
    "Diameter",
    "Height",
    "Whole weight",
    "Shucked weight",
    "Viscera weight",
    "Shell weight",
    "Rings",
)


def data_path(name: str) -> Path:
    """Path of a shipped data file (see ``DATA.md``)."""
    path = Path(str(resources.files(__package__).joinpath("data", name)))
    if not path.exists():
        raise FileNotFoundError(f"no shipped data file {name!r} in {path.parent}.")
    return path


def load_abalone_raw() -> tuple[np.ndarray, np.ndarray]:
    """The raw UCI Abalone table in file order.

    Returns
    -------
    sex : ndarray of str, shape (4177,)
        ``"M"``, ``"F"`` or ``"I"``.
    values : ndarray of float, shape (4177, 8)
        Length, Diameter, Height, Whole/Shucked/Viscera/Shell weight, Rings.
    """
    raw = np.loadtxt(data_path("abalone.data"), delimiter=",", dtype=str)
    return raw[:, 0], raw[:, 1:].astype(np.float64)
