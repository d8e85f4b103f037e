"""The API reference pages, generated from the public names at every build.

The public API is what ``dpinfer/__init__.py`` exports and the ``__all__`` of the main
subpackages (``dpinfer.models`` has no ``__all__``: its public names are its explicit
``import X as X`` re-exports). Each object is documented once, on the first page (in
:data:`PAGES` order) that exports it; a later page that re-exports it links to that entry.
The pages are written to ``docs/api/generated/`` (not committed) only when their text changes.
"""

from __future__ import annotations

import importlib
from pathlib import Path

#: (module, what it is for), in the order of the reference.
PAGES: list[tuple[str, str]] = [
    ("dpinfer", "the entry points (``infer``, ``private_glm``, ``connect``) and the core names"),
    ("dpinfer.privacy", "mechanisms' events, accountants, calibration, the ledger, reports"),
    ("dpinfer.privacy.mechanisms", "release mechanisms (each draws its noise through privacy's samplers)"),
    ("dpinfer.release", "releases from confidential data: ABCDP and private SMC-ABC"),
    ("dpinfer.release.dpvi", "DPVI: private variational inference"),
    ("dpinfer.inference", "post-processing of releases: exact samplers, SMC-ABC, ``infer``"),
    ("dpinfer.inference.neural", "SPPE and SPLE: neural posteriors from privatised statistics"),
    ("dpinfer.models", "priors, the private-data model contract, the shipped models"),
    ("dpinfer.results", "the one posterior contract and its file format"),
    ("dpinfer.distances", "distances and their sensitivities"),
    ("dpinfer.execution", "backends: serial, processes, Dask"),
    ("dpinfer.diagnostics", "metrics and checks"),
    ("dpinfer.data", "data input: tables, schemas, fingerprints of records"),
    ("dpinfer.datasets", "the data files shipped with dpinfer"),
    ("dpinfer.service.client", "the analyst's client of the data owner's service (``dpinfer.connect``)"),
    ("dpinfer.service.config", "the service's configuration: data sets, ledger, analysts, limits"),
    ("dpinfer.service.core", "the data owner's service without HTTP"),
    ("dpinfer.audit", "black-box privacy audits: empirical lower bounds on ε and known-broken variants"),
]

#: The entry points, documented first on the pages that export them.
FIRST = ("infer", "private_glm", "connect")


def public_names(modname: str) -> list[str]:
    """The public names of ``modname``: its ``__all__``, or its explicit ``X as X`` re-exports."""
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in vars(mod) if not n.startswith("_") and not _is_module(getattr(mod, n))]
    return [n for n in names if n != "__version__"]


def _is_module(obj: object) -> bool:
    return type(obj).__name__ == "module"


def _directive(obj: object) -> str:
    if isinstance(obj, type):
        return "autoexception" if issubclass(obj, BaseException) else "autoclass"
    if callable(obj):
        return "autofunction"
    return "autodata"


def render() -> dict[str, str]:
    """``{file name: reST text}`` of every API page."""
    seen: dict[int, str] = {}  # id(object) -> its documented target
    pages: dict[str, str] = {}
    for modname, what in PAGES:
        mod = importlib.import_module(modname)
        title = f"``{modname}``"
        lines = [title, "=" * len(title), "", f"{what[0].upper()}{what[1:]}.", "",
                 f".. currentmodule:: {modname}", ""]
        again: list[str] = []
        names = public_names(modname)
        names = [n for n in FIRST if n in names] + [n for n in names if n not in FIRST]
        for name in names:
            obj = getattr(mod, name)
            if id(obj) in seen:
                again.append(f"* ``{name}``: :py:obj:`{seen[id(obj)]}`")
                continue
            target = f"{modname}.{name}"
            seen[id(obj)] = target
            directive = _directive(obj)
            lines += [f".. {directive}:: {name}"]
            if directive in ("autoclass", "autoexception"):
                lines += ["   :members:", "   :show-inheritance:"]
            lines += [""]
        if again:
            lines += ["Also exported here", "------------------", "", *again, ""]
        pages[f"{modname}.rst"] = "\n".join(lines)
    return pages


def write_pages(folder: Path) -> None:
    """Write the pages into ``folder``, touching only those whose text changed; remove stale ones."""
    folder.mkdir(parents=True, exist_ok=True)
    pages = render()
    for name, text in pages.items():
        path = folder / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    for path in folder.glob("*.rst"):
        if path.name not in pages:
            path.unlink()
