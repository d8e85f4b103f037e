"""The result contract shared by every inference method, and its one file format.

The contract
------------
Every result — :class:`~dpinfer.release.ABCResult` / :class:`~dpinfer.release.ABCDPResult`,
:class:`~dpinfer.inference.SMCABCResult`, :class:`~dpinfer.inference.ImportanceResult`,
:class:`~dpinfer.release.dpvi.DPVIResult` and the neural posteriors
:class:`~dpinfer.inference.neural.SPPEPosterior` /
:class:`~dpinfer.inference.neural.SPLEPosterior` — satisfies :class:`PosteriorResult`:

* ``mean()`` — the posterior mean of θ, shape ``(dim,)`` (a method everywhere);
* ``sample(n, seed)`` — ``n`` draws of θ, shape ``(n, dim)`` (the same seed gives the same draws);
* ``sd()`` and ``interval(level)`` — marginal standard deviations and equal-tailed credible
  intervals ``(dim, 2)`` (weighted for particle methods; by default from 4000 draws, seed 0);
* ``to_arviz(n_draws, seed)`` — an ``arviz.InferenceData`` with the parameter names and the
  release's privacy report on the ``posterior`` group (:func:`arviz_attrs`);
* ``param_names`` — the names of the ``dim`` parameters;
* ``privacy`` — the :class:`~dpinfer.privacy.PrivacyReport` of the release the result is about
  (its own release for ABCDP and DPVI; the analysed release for post-processing methods), or None;
* ``plot(path, reference=, truth=)`` — a pair plot (:func:`dpinfer.plots.plot_pair`, imported on
  first use; weighted particles drawn with their weights);
* ``save(path) -> Path`` / ``load(path)`` — the file format below (written beside the target and
  renamed, so an interrupted save never leaves a partial file); :func:`load_result` reopens any.

The file format ``dpinfer.result``, version 1
---------------------------------------------
One ``.npz`` archive (numpy's zip of ``.npy`` members, read with ``allow_pickle=False``):

* ``meta``: a 0-d string array holding JSON::

      {"format": "dpinfer.result", "version": 1,
       "type": "<class name>", "module": "<module that defines it>",
       "dpinfer_version": "...", "param_names": [...],
       "privacy": <PrivacyReport.to_dict()> | null,
       "fields": {<the type's own JSON-ready fields: settings, diagnostics, config, ...>}}

* every other member: one named array of the result's numbers (particles, weights, variational
  parameters, network weights, ...), stored exactly (float64; float32 network weights as float32).

:func:`load_result` reopens any such file as the type named in ``meta`` (a registered
:class:`ResultFile` subclass; the defining module is imported on demand, only within ``dpinfer``);
``SomeResult.load(path)`` reads what ``SomeResult.save`` wrote and refuses a file that holds
another type. A path without a suffix gets ``.npz``; any other path is written as given.

Result classes register themselves by subclassing :class:`ResultFile` (no import of the method
packages from here: they sit in a higher layer).
"""

from __future__ import annotations

import importlib
import json
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

import numpy as np

from .._version import __version__
from ..errors import InvalidDataError
from ..privacy.report import PrivacyReport
from .display import DisplayMixin

FORMAT = "dpinfer.result"
VERSION = 1

_REGISTRY: dict[str, type[ResultFile]] = {}
R = TypeVar("R", bound="ResultFile")


@runtime_checkable
class PosteriorResult(Protocol):
    """What every inference result offers (module docstring)."""

    param_names: tuple[str, ...]
    privacy: PrivacyReport | None

    def mean(self) -> np.ndarray:
        """Posterior mean of θ, shape ``(dim,)``."""
        ...

    def sample(self, n: int, seed: Any = None) -> np.ndarray:
        """``n`` draws of θ, shape ``(n, dim)``."""
        ...

    def sd(self) -> np.ndarray:
        """Marginal posterior standard deviations, shape ``(dim,)``."""
        ...

    def interval(self, level: float = 0.95) -> np.ndarray:
        """Equal-tailed marginal credible intervals, shape ``(dim, 2)``."""
        ...

    def to_arviz(self, n_draws: int = 4000, seed: Any = 0) -> Any:
        """An ``arviz.InferenceData`` of draws under the parameter names."""
        ...

    def save(self, path: str | Path) -> Path:
        """Write the result in the ``dpinfer.result`` format."""
        ...


@dataclass(frozen=True)
class Record:
    """The content of a result file: the common entries and the type's own fields and arrays."""

    type: str
    param_names: tuple[str, ...]
    privacy: PrivacyReport | None
    fields: dict[str, Any]
    arrays: dict[str, np.ndarray]


def result_path(path: str | Path) -> Path:
    """``path`` as written: a path without a suffix gets ``.npz``."""
    p = Path(path)
    return p if p.suffix else p.with_name(p.name + ".npz")


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def write_record(result: Any, path: str | Path, fields: dict[str, Any], arrays: dict[str, Any]) -> Path:
    """Write ``result`` (its type, names and privacy report) with ``fields`` and ``arrays``."""
    if "meta" in arrays:
        raise ValueError("'meta' is reserved for the metadata entry.")
    privacy = getattr(result, "privacy", None)
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "type": type(result).__name__,
        "module": type(result).__module__,
        "dpinfer_version": __version__,
        "param_names": list(result.param_names),
        "privacy": None if privacy is None else privacy.to_dict(),
        "fields": fields,
    }
    p = result_path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.partial")
    try:  # written beside the target and renamed: an interrupted save never leaves half a file
        with open(tmp, "wb") as f:
            np.savez_compressed(f, meta=np.array(json.dumps(meta, default=_jsonable)), **arrays)
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)
    return p


def read_meta(path: str | Path) -> dict[str, Any] | None:
    """The ``meta`` JSON of a ``dpinfer.result`` file, or None if ``path`` is not one."""
    p = Path(path)
    if not p.is_file() or not zipfile.is_zipfile(p):
        return None
    try:
        with np.load(p, allow_pickle=False) as z:
            if "meta" not in z.files:
                return None
            meta = json.loads(str(z["meta"]))
    except (ValueError, OSError):
        return None
    return meta if isinstance(meta, dict) and meta.get("format") == FORMAT else None


def _existing(path: str | Path) -> Path:
    p = Path(path)
    if not p.exists() and result_path(p).exists():
        return result_path(p)
    if not p.exists():
        raise FileNotFoundError(f"no result file at {p}")
    return p


def result_class(meta: dict[str, Any], path: Path) -> type[ResultFile]:
    version = meta.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise InvalidDataError(
            f"{path}: result format version {version!r} is newer than this dpinfer reads ({VERSION})."
        )
    name, module = str(meta.get("type")), str(meta.get("module", ""))
    if name not in _REGISTRY and (module == "dpinfer" or module.startswith("dpinfer.")):
        try:
            importlib.import_module(module)  # the defining module registers its classes
        except ImportError:
            pass
    if name not in _REGISTRY:
        raise InvalidDataError(
            f"{path}: unknown result type {name!r} (module {module!r}); import the module that "
            "defines it before loading."
        )
    return _REGISTRY[name]


def read_record(path: str | Path, expect: type[R] | None = None) -> tuple[type[R], Record]:
    """The class and :class:`Record` of a result file; refuses another type than ``expect``."""
    p = _existing(path)
    meta = read_meta(p)
    if meta is None:
        raise InvalidDataError(f"{p} is not a dpinfer result file (format {FORMAT!r}, version {VERSION}).")
    klass = result_class(meta, p)
    if expect is not None and not issubclass(klass, expect):
        raise InvalidDataError(
            f"{p} holds a {klass.__name__}, not a {expect.__name__}; open it with "
            f"{klass.__name__}.load or dpinfer.results.format.load_result."
        )
    with np.load(p, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files if k != "meta"}
    privacy = meta.get("privacy")
    record = Record(
        type=klass.__name__,
        param_names=tuple(meta.get("param_names", ())),
        privacy=None if privacy is None else PrivacyReport.from_dict(privacy),
        fields=dict(meta.get("fields", {})),
        arrays=arrays,
    )
    return klass, record  # type: ignore[return-value]


def _construct(klass: type[R], record: Record, path: str | Path, kwargs: dict[str, Any]) -> R:
    try:
        return klass._from_record(record, **kwargs)
    except KeyError as exc:
        raise InvalidDataError(
            f"{path}: its content does not fit the type it names, {klass.__name__} (no {exc})."
        ) from None


def load_result(path: str | Path, **kwargs: Any) -> Any:
    """Reopen any saved result as the type it was saved from (``kwargs`` go to that type's reader).

    Raises
    ------
    InvalidDataError
        Not a ``dpinfer.result`` file, a newer version, an unknown type, or content that does not
        fit the type it names.
    """
    klass: type[ResultFile]
    klass, record = read_record(path)
    return _construct(klass, record, path, kwargs)


def arviz_attrs(privacy: PrivacyReport | None, **extra: Any) -> dict[str, Any]:
    """The attributes every ``to_arviz()`` puts on its ``posterior`` group: the release's ε, δ,
    mechanism and accountant, and the whole privacy report as JSON (empty without a release)."""
    attrs: dict[str, Any] = {k: v for k, v in extra.items() if v is not None}
    if privacy is not None:
        attrs.update(
            epsilon=float(privacy.epsilon),
            delta=float(privacy.delta),
            mechanism=str(privacy.mechanism),
            accountant=str(privacy.accountant),
            privacy_report=json.dumps(privacy.to_dict(), default=_jsonable),
        )
    return attrs


def draws_to_arviz(
    draws: np.ndarray, names: tuple[str, ...], privacy: PrivacyReport | None, **attrs: Any
) -> Any:
    """An ``arviz.InferenceData`` whose ``posterior`` group holds ``draws`` (``(chains, n, dim)``
    or ``(n, dim)`` for one chain) under ``names``, with :func:`arviz_attrs` on that group."""
    try:
        import arviz as az
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("to_arviz() needs the optional package arviz: pip install arviz") from exc
    d = np.asarray(draws, dtype=np.float64)
    if d.ndim == 2:
        d = d[None]
    posterior = {n: d[:, :, i] for i, n in enumerate(names)}
    dataset = az.dict_to_dataset(posterior)[list(posterior)]  # the parameters' order, not sorted names
    dataset.attrs.update(arviz_attrs(privacy, **attrs))
    idata = az.InferenceData(posterior=dataset)
    return idata


class ResultFile(DisplayMixin):
    """Base of every result class: :meth:`save` / :meth:`load` in the ``dpinfer.result`` format.

    A subclass implements :meth:`sample`, :meth:`_to_record` (its JSON-ready fields and arrays)
    and :meth:`_from_record`, and has ``param_names`` and ``privacy``; the summaries below come
    from draws unless it overrides them with exact ones (weighted particles, closed forms).
    Defining a subclass registers it for :func:`load_result` under its class name, and gives it
    the common ``__repr__`` / ``_repr_html_`` (:mod:`dpinfer.results.display`), also where
    ``@dataclass`` would write a field-by-field repr of its arrays (a class that defines its own
    ``__repr__`` keeps it).
    """

    _registry: ClassVar[dict[str, type[ResultFile]]] = _REGISTRY

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _REGISTRY[cls.__name__] = cls
        if "__repr__" not in cls.__dict__:  # set before @dataclass runs: it keeps a repr it finds
            cls.__repr__ = DisplayMixin.__repr__  # type: ignore[method-assign]

    def _to_record(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:  # pragma: no cover
        raise NotImplementedError

    @classmethod
    def _from_record(cls: type[R], record: Record, **kwargs: Any) -> R:  # pragma: no cover
        raise NotImplementedError

    # -- default posterior summaries from draws (particle methods override them) ---------------
    def sd(self) -> np.ndarray:
        """Marginal standard deviations of 4000 draws (seed 0)."""
        return np.asarray(self.sample(4000, seed=0), dtype=np.float64).std(axis=0, ddof=1)  # type: ignore[attr-defined]

    def interval(self, level: float = 0.95) -> np.ndarray:
        """Equal-tailed marginal credible intervals of 4000 draws (seed 0), shape ``(dim, 2)``."""
        draws = np.asarray(self.sample(4000, seed=0), dtype=np.float64)  # type: ignore[attr-defined]
        return np.quantile(draws, [0.5 - level / 2, 0.5 + level / 2], axis=0).T

    def mean(self) -> np.ndarray:
        """Posterior mean of 4000 draws (seed 0), shape ``(dim,)``."""
        return np.asarray(self.sample(4000, seed=0), dtype=np.float64).mean(axis=0)  # type: ignore[attr-defined]

    def to_arviz(self, n_draws: int = 4000, seed: Any = 0) -> Any:
        """An ``arviz.InferenceData`` of ``n_draws`` draws under the parameter names, with the
        release's privacy report on the ``posterior`` group (:func:`arviz_attrs`)."""
        draws = np.asarray(self.sample(int(n_draws), seed=seed), dtype=np.float64)  # type: ignore[attr-defined]
        return draws_to_arviz(draws, tuple(self.param_names), getattr(self, "privacy", None))  # type: ignore[attr-defined]

    def plot(
        self,
        path: str | Path | None = None,
        reference: Any = None,
        n: int = 2000,
        *,
        truth: Any = None,
        title: str | None = None,
        **options: Any,
    ) -> Any:
        """Pair plot of this posterior (:func:`dpinfer.plots.plot_pair`): weighted particles with
        their weights where the result has them, else ``n`` draws (seed 0); HDR contours, marginal
        densities, the parameter names as axis labels, titled with the method and the ε of the
        release. ``reference``: draws or a result (overlaid in black) or a point; ``truth``: a
        point; ``options`` go to ``plot_pair`` (``units``, ``levels``, ...). Saved to ``path`` if
        given; returns the figure.

        ``dpinfer.plots`` (matplotlib) is imported here, on first use only, so loading or saving a
        result never imports matplotlib.
        """
        from ..plots import plot_pair

        label = str(getattr(self, "method", "") or "") or type(self).__name__
        if title is None:
            privacy = getattr(self, "privacy", None)
            title = f"{label} posterior" + (
                "" if privacy is None else f", release at ε = {privacy.epsilon:.3g}, δ = {privacy.delta:.2g}"
            )
        names = tuple(self.param_names)  # type: ignore[attr-defined]
        return plot_pair({label: self}, names, path, title=title, reference=reference, truth=truth, n=n,
                         **options)

    def save(self, path: str | Path) -> Path:
        """Write the result to ``path`` (``.npz`` appended when it has no suffix); returns the path."""
        fields, arrays = self._to_record()
        return write_record(self, path, fields, arrays)

    @classmethod
    def load(cls: type[R], path: str | Path, **kwargs: Any) -> R:
        """Read a result written by :meth:`save` (a subclass's file reads as that subclass)."""
        p = _existing(path)
        klass, record = read_record(p, expect=cls)
        return _construct(klass, record, p, kwargs)


__all__ = [
    "FORMAT",
    "arviz_attrs",
    "draws_to_arviz",
    "VERSION",
    "PosteriorResult",
    "Record",
    "ResultFile",
    "load_result",
    "read_meta",
    "read_record",
    "result_path",
    "write_record",
]
