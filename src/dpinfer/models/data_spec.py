"""The public description of the data behind a regression release: :class:`DataSpec`.

One class for every release that reads features and a response: :func:`dpinfer.private_glm` and
:func:`~dpinfer.release.glm.release_glm_statistics` (the GLM's sufficient statistics) and
:meth:`DPVI.fit <dpinfer.release.dpvi.DPVI.fit>` (private variational inference) take it as
``data=`` (issue 40 item 4: before, the GLM took ``GLMDataSpec`` plus top-level ``offset=`` and
``intercept=``, DPVI took ``DataOptions``). Everything in it is public, declared from the domain,
never read from the data; the offset's *values* are data, passed here so that the design is
described in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidDataError


@dataclass(frozen=True)
class DataSpec:
    """What the data are: bounds, names, design and schema of a regression release.

    Parameters
    ----------
    bounds
        Public (lower, upper) per feature: a dict ``{column: (lower, upper)}``, one pair per
        feature, or one pair for every feature. Declare them from the domain, never from the data;
        each feature is scaled to [-1, 1] and a value outside its bounds is refused before anything
        is charged.
    y_bounds
        The response's public bounds (GLM only): ``"linear"``, its (lower, upper); ``"poisson"``,
        ``y_max`` or ``(0, y_max)``.
    offset
        A per-record offset of the linear predictor (e.g. log exposure for a Poisson rate), or the
        name of its column in a data source.
    offset_bounds
        The offset's public (lower, upper) (GLM only).
    intercept
        Prepend a column of ones named ``"intercept"``. ``None`` (default): the model's default,
        ``True`` for the GLM and the built-in regressions of DPVI, ``False`` for a user's DPVI
        :class:`~dpinfer.release.dpvi.Model`, whose likelihood reads X as given.
    feature_names
        Names of the features (default: a table's own string labels, else ``x1..xD``); with a data
        source, the feature columns to read. They label the parameters, summaries and warnings.
    schema
        The data set's public :class:`~dpinfer.data.Schema` (or its file): the bounds default to
        its declared bounds (an explicit ``bounds``/``y_bounds``/``offset_bounds`` overrides them),
        the data are refused if they do not match it, and the release's context must charge its
        data set.
    """

    bounds: Any = None
    y_bounds: Any = None
    offset: Any = None
    offset_bounds: Any = None
    intercept: bool | None = None
    feature_names: Sequence[str] | None = None
    schema: Any = None


def data_spec(data: Any) -> DataSpec:
    """``data`` as a :class:`DataSpec` (None: the defaults); anything else is refused."""
    if data is None:
        return DataSpec()
    if not isinstance(data, DataSpec):
        raise InvalidDataError(
            f"data must be a dpinfer.DataSpec(bounds=..., ...), got {type(data).__name__}. "
            "Nothing was charged."
        )
    return data


#: The class names :class:`DataSpec` replaced (issue 40 item 4), refused by the modules that held
#: them with a message naming it.
REMOVED_NAMES = {
    "GLMDataSpec": "dpinfer.DataSpec (from dpinfer.models.data_spec import DataSpec): one description of "
                   "the data for private_glm, release_glm_statistics and DPVI.fit; offset= and intercept= "
                   "moved into it too",
    "DataOptions": "dpinfer.DataSpec (from dpinfer.models.data_spec import DataSpec): one description of "
                   "the data for DPVI.fit and private_glm, with the same fields (intercept, bounds, offset, "
                   "feature_names, schema)",
}


def removed_name(module: str, name: str) -> ImportError:
    """The error a module raises for a class name :class:`DataSpec` replaced."""
    return ImportError(f"{module}.{name} was removed: use {REMOVED_NAMES[name]}.")


__all__ = ["REMOVED_NAMES", "DataSpec", "data_spec", "removed_name"]
