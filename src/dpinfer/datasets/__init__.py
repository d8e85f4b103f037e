"""Data sets shipped inside the package (provenance in ``DATA.md``)."""

from .abalone import (
    ClassificationSplit,
    SyntheticLogisticData,
    abalone_labels,
    load_abalone,
    make_synthetic_logistic,
)
from .abcdp_data import load_covid_nl, load_tb_sanfrancisco
from .files import ABALONE_COLUMNS, data_path, load_abalone_raw

__all__ = [
    "ABALONE_COLUMNS",
    "ClassificationSplit",
    "SyntheticLogisticData",
    "abalone_labels",
    "data_path",
    "load_abalone",
    "load_abalone_raw",
    "load_covid_nl",
    "make_synthetic_logistic",
    "load_tb_sanfrancisco",
]
