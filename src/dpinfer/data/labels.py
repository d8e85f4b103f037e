"""Column labels of a confidential table: only declared names or the container's own string labels.

A container's "columns" are not always its labels: a pyarrow ``Table`` or ``RecordBatch`` answers
``.columns`` with the column *arrays*, so naming a coefficient ``str(column)`` writes confidential
values into every summary, ArviZ variable and saved result (issue 36). The labels are therefore
read from where each container keeps its names, and every one must already be a string:

* pyarrow ``Table`` / ``RecordBatch``: ``column_names``;
* polars ``DataFrame``: ``columns`` (strings by construction);
* pandas ``DataFrame``: ``columns``, each a ``str`` (a number, a tuple of a MultiIndex or any other
  object is refused: it may be a value, and the stringified form is ambiguous);
* a mapping of name to column: its keys, each a ``str``;
* anything else (numpy arrays, lists, unknown containers): no labels: the caller declares them.

Nothing here stringifies anything; an error names the *position* and the *type* of a bad label,
never the label or any value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidDataError

__all__ = ["check_names", "column_labels", "container_kind"]


def container_kind(X: Any) -> str:
    """``"pyarrow"``, ``"polars"``, ``"pandas"``, ``"mapping"``, ``"duckdb"`` or ``"array"``.

    Decided from the type's module, so no optional library is imported to ask.
    """
    mod = type(X).__module__ or ""
    top = mod.split(".", 1)[0]
    if top == "pyarrow" and hasattr(X, "column_names") and hasattr(X, "num_rows"):
        return "pyarrow"
    if top == "polars" and type(X).__name__ == "DataFrame":
        return "polars"
    if top == "pandas" and type(X).__name__ == "DataFrame":
        return "pandas"
    if top == "duckdb" and hasattr(X, "fetch_record_batch"):
        return "duckdb"
    if isinstance(X, Mapping):
        return "mapping"
    return "array"


def check_names(names: Sequence[Any], what: str = "feature_names") -> tuple[str, ...]:
    """Declared names as a tuple of non-empty, distinct strings (errors show positions, not labels)."""
    if isinstance(names, (str, bytes)):
        raise InvalidDataError(f"{what} must be a sequence of column names, not one string.")
    out: list[str] = []
    for j, name in enumerate(names):
        if not isinstance(name, str) or not name.strip():
            raise InvalidDataError(
                f"{what}: label number {j + 1} is not a non-empty string (it is a {type(name).__name__}); "
                "column labels must be strings declared by the data owner. Nothing was charged or released."
            )
        out.append(str(name))
    if len(set(out)) != len(out):
        dup = sorted({n for n in out if out.count(n) > 1})
        raise InvalidDataError(
            f"{what}: the label(s) {dup} appear more than once, so the columns are ambiguous. Nothing was "
            "charged or released."
        )
    return tuple(out)


def column_labels(X: Any, *, declared: Sequence[Any] | None = None) -> tuple[str, ...] | None:
    """The labels of ``X``'s columns: ``declared`` if given, else the container's own string labels.

    Returns ``None`` for containers without labels (numpy arrays, lists). A container whose labels
    are not all distinct strings, or an unknown container with a ``columns`` attribute (which may
    hold values rather than labels), is refused unless ``declared`` names the columns.

    Raises
    ------
    InvalidDataError
        A declared or container label that is not a string, or one that appears twice.
    """
    if declared is not None:
        return check_names(declared)
    kind = container_kind(X)
    if kind == "pyarrow":
        return check_names(list(X.column_names), "the table's column names")
    if kind in ("polars", "pandas"):
        return check_names(list(X.columns), "the data frame's column labels")
    if kind == "mapping":
        return check_names(list(X.keys()), "the mapping's keys")
    if kind == "duckdb":
        return check_names([c[0] for c in X.description], "the query's column names")
    if hasattr(X, "columns") or hasattr(X, "column_names"):
        raise InvalidDataError(
            f"cannot tell the column labels of a {type(X).__name__}: its columns are not known to be "
            "string labels. Pass feature_names=[...] (or a pandas/polars/pyarrow table with string "
            "column names). Nothing was charged or released."
        )
    return None
