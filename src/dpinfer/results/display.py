"""How results look in a terminal and in a notebook: ``__repr__`` and ``_repr_html_``.

Every result (every :class:`~dpinfer.results.format.ResultFile` subclass, and the
:class:`~dpinfer.privacy.PrivacyReport`) is shown from a small *summary dict* built here from
released, post-processed quantities only: the method, ε / δ / accountant / mechanism of the
release, the parameter names, the number of draws or particles, the posterior mean and an equal-
tailed interval per parameter (HTML only: they cost draws, taken on a shallow copy so that a
display changes nothing in the result), and the warnings the result recorded. Never a raw array of
the result (particles, observed statistics, traces): those stay behind their attributes, in saved
files and in ``to_dict()``.

The renderers are pure functions of that dict: :func:`render_text` (one line) and
:func:`render_html` (a small table; every string HTML-escaped). :func:`brief` is how a value
appears in any printed summary: floats to 6 significant digits, and a long sequence (a trace) as
its length, minimum, median and maximum.
"""

from __future__ import annotations

import copy
import html
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

#: sequences longer than this are printed as their length, min / median / max
BRIEF_MAX_ITEMS = 8
#: text reprs list at most this many parameter names
_NAMES_SHOWN = 6


def brief(value: Any) -> str:
    """``value`` for a printed summary: floats to 6 significant digits; a sequence of more than
    :data:`BRIEF_MAX_ITEMS` numbers as ``[n values: min …, median …, max …]``; mappings item by
    item. The full values stay in ``to_dict()`` and saved files."""
    if isinstance(value, (bool, np.bool_)) or value is None:
        return str(value)
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {brief(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple, np.ndarray)):
        arr = np.asarray(value, dtype=object).ravel() if not isinstance(value, np.ndarray) else value.ravel()
        if arr.size > BRIEF_MAX_ITEMS:
            try:
                x = np.asarray(arr, dtype=np.float64)
            except (TypeError, ValueError):
                return f"[{arr.size} values]"
            finite = x[np.isfinite(x)]
            if finite.size == 0:
                return f"[{arr.size} values, none finite]"
            return (f"[{arr.size} values: min {finite.min():.4g}, median {np.median(finite):.4g}, "
                    f"max {finite.max():.4g}]")
        return "[" + ", ".join(brief(v) for v in (arr.tolist() if isinstance(arr, np.ndarray) else arr)) + "]"
    return str(value)


# -- the summary dict -----------------------------------------------------------------------------
def privacy_summary(report: Any) -> dict[str, Any] | None:
    """The released facts of a privacy report (None for none): ε, δ, accountant, mechanism,
    neighbouring relation, the sensitivity (user's units, :func:`brief`) and its warnings."""
    if report is None:
        return None
    warnings: list[str] = []
    if getattr(report, "insecure_rng", False):
        warnings.append("noise from an INSECURE deterministic RNG: no privacy")
    if not getattr(report, "accounted", True):
        warnings.append("NOT ACCOUNTED: released without a ledger")
    guarantee = (getattr(report, "details", None) or {}).get("guarantee")
    if isinstance(guarantee, str) and guarantee.startswith("not computed"):
        warnings.append(f"guarantee {guarantee}")
    return {
        "epsilon": float(report.epsilon),
        "delta": float(report.delta),
        "accountant": str(report.accountant),
        "mechanism": str(getattr(report, "mechanism", "") or ""),
        "neighbouring": str(getattr(report, "neighbouring", "") or ""),
        "sensitivity": brief(getattr(report, "sensitivity", None)),
        "warnings": warnings,
    }


def _method(result: Any) -> str:
    for attr in ("method", "kind"):
        v = getattr(result, attr, None)
        if isinstance(v, str) and v:
            return v
    return ""


def _size(result: Any) -> str:
    """How many draws / particles hold the posterior, in words ("" when it is not a sample)."""
    inner = getattr(result, "result", None)  # an InferenceResult wraps the method's own result
    if inner is not None and inner is not result:
        return _size(inner)
    for attr, word in (("particles", "particles"), ("accepted", "accepted draws"), ("samples", "draws")):
        v = getattr(result, attr, None)
        if isinstance(v, np.ndarray) and v.ndim >= 1:
            return f"{v.shape[0]} {word}"
    draws = getattr(result, "draws", None)
    if isinstance(draws, np.ndarray) and draws.ndim == 3:
        chains = draws.shape[0]
        return f"{chains * draws.shape[1]} draws ({chains} chain{'s' if chains != 1 else ''})"
    family = getattr(result, "family", None)
    if isinstance(family, str) and hasattr(result, "params"):
        return f"Gaussian variational posterior ({family})"
    return ""


def _warnings(result: Any) -> list[str]:
    """The warnings a result recorded (findings, an incomplete run, a non-private result, a fit
    that did not converge)."""
    out: list[str] = []
    for source in (getattr(result, "findings", None),
                   (getattr(result, "settings", None) or {}).get("findings")
                   if isinstance(getattr(result, "settings", None), dict) else None):
        for f in source or ():
            msg = f.get("message") if isinstance(f, dict) else f
            if msg:
                out.append(str(msg))
    if getattr(result, "complete", True) is False:
        out.append(f"INCOMPLETE: {getattr(result, 'stop_reason', '')}".rstrip(": "))
    if getattr(result, "private", True) is False:
        out.append("NON-PRIVATE: not differentially private; do not publish it")
    diagnostics = getattr(result, "diagnostics", None)
    if isinstance(diagnostics, dict) and diagnostics.get("converged") is False:
        out.append("the fit did not converge")
    return list(dict.fromkeys(out))


def summary_dict(
    kind: str,
    *,
    privacy: Any = None,
    names: tuple[str, ...] = (),
    what: str = "parameter",
    size: str = "",
    method: str = "",
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    """The summary dict of an object that is not a posterior (a released model, synthetic
    records): ``names`` are its ``what`` (e.g. columns); no table."""
    return {"type": kind, "method": method, "privacy": privacy_summary(privacy),
            "param_names": tuple(str(n) for n in names), "what": what, "size": size,
            "warnings": list(warnings or []), "level": 0.95, "table": None}


def _detached(result: Any) -> Any:
    """A shallow copy of ``result`` (and of the result it wraps), so that the draws a display
    computes (e.g. SPLE's MCMC, which stores its last chains) leave the result as it was."""
    view = copy.copy(result)
    inner = getattr(result, "result", None)
    if inner is not None and hasattr(inner, "param_names"):
        try:
            view.result = copy.copy(inner)
        except AttributeError:  # a read-only attribute: the wrapped result is left shared
            pass
    return view


def result_summary(result: Any, *, stats: bool = False, level: float = 0.95) -> dict[str, Any]:
    """The summary dict of ``result`` (module docstring); ``stats`` adds ``table``: per parameter
    (name, mean, lower, upper) of the ``level`` interval (None when the result cannot give them)."""
    names = tuple(str(n) for n in getattr(result, "param_names", ()) or ())
    out: dict[str, Any] = {
        "type": type(result).__name__,
        "method": _method(result),
        "privacy": privacy_summary(getattr(result, "privacy", None)),
        "param_names": names,
        "what": "parameter",
        "size": _size(result),
        "warnings": _warnings(result),
        "level": level,
        "table": None,
    }
    if stats and names:
        try:
            view = _detached(result)
            mean = np.asarray(view.mean(), dtype=np.float64).ravel()
            ci = np.asarray(view.interval(level), dtype=np.float64).reshape(-1, 2)
            out["table"] = [(n, float(mean[i]), float(ci[i, 0]), float(ci[i, 1]))
                            for i, n in enumerate(names)]
        except Exception:  # noqa: BLE001 - a display never raises; the table is left out
            out["table"] = None
    return out


# -- renderers ------------------------------------------------------------------------------------
def _privacy_text(p: dict[str, Any] | None) -> str:
    if p is None:
        return "no privacy release"
    eps = "inf" if math.isinf(p["epsilon"]) else f"{p['epsilon']:.4g}"
    text = f"ε = {eps}, δ = {p['delta']:.3g}, accountant {p['accountant']!r}"
    return text + (f", mechanism {p['mechanism']!r}" if p["mechanism"] else "")


def render_text(s: dict[str, Any]) -> str:
    """A compact one-line repr: ``<Type [method]: privacy; size; k parameters (names); n warnings>``."""
    names = list(s["param_names"])
    shown = ", ".join(names[:_NAMES_SHOWN]) + (", ..." if len(names) > _NAMES_SHOWN else "")
    parts = [_privacy_text(s["privacy"])]
    if s["size"]:
        parts.append(s["size"])
    what = s.get("what", "parameter")
    parts.append(f"{len(names)} {what}{'s' if len(names) != 1 else ''} ({shown})")
    warnings = list(s["warnings"]) + list((s["privacy"] or {}).get("warnings", []))
    if warnings:
        parts.append(f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''} (summary() says which)")
    head = s["type"] + (f" [{s['method']}]" if s["method"] else "")
    return f"<{head}: " + "; ".join(parts) + ">"


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def render_html(s: dict[str, Any]) -> str:
    """An HTML fragment: a heading (type, method), the privacy line, a table of the parameters
    (mean and ``level`` interval) and the warnings; every string escaped."""
    head = _e(s["type"]) + (f" <small>[{_e(s['method'])}]</small>" if s["method"] else "")
    parts = [f"<div class=\"dpinfer-result\"><p><strong>{head}</strong></p>",
             f"<p>{_e(_privacy_text(s['privacy']))}"]
    p = s["privacy"]
    if p is not None:
        parts.append(f"; {_e(p['neighbouring'])}; sensitivity {_e(p['sensitivity'])}")
    parts.append("</p>")
    if s["size"]:
        parts.append(f"<p>{_e(s['size'])}</p>")
    if s["table"]:
        pct = f"{100 * s['level']:g}%"
        parts.append("<table><thead><tr><th>parameter</th><th>mean</th>"
                     f"<th>{_e(pct)} interval</th></tr></thead><tbody>")
        for name, mean, lo, hi in s["table"]:
            parts.append(f"<tr><td>{_e(name)}</td><td>{mean:.4g}</td><td>[{lo:.4g}, {hi:.4g}]</td></tr>")
        parts.append("</tbody></table>")
    elif s["param_names"]:
        parts.append(f"<p>{_e(s.get('what', 'parameter'))}s: " + _e(", ".join(s["param_names"])) + "</p>")
    warnings = list(s["warnings"]) + list((p or {}).get("warnings", []))
    if warnings:
        parts.append("<ul>" + "".join(f"<li>warning: {_e(w)}</li>" for w in warnings) + "</ul>")
    parts.append("</div>")
    return "".join(parts)


def report_html(report: Any, lines: list[str]) -> str:
    """A privacy report as HTML: its summary line and the printed ``lines`` below it, escaped."""
    s = privacy_summary(report)
    head = _e(_privacy_text(s))
    body = "".join(f"<li>{_e(line.strip())}</li>" for line in lines[1:])
    return (f"<div class=\"dpinfer-privacy\"><p><strong>PrivacyReport</strong>: {head}</p>"
            + (f"<ul>{body}</ul>" if body else "") + "</div>")


class DisplayMixin:
    """``__repr__`` and ``_repr_html_`` from the summary dict of :meth:`_display_summary`
    (default :func:`result_summary`: the repr never computes draws; the HTML table does). A
    display never raises. A dataclass using it needs ``repr=False``."""

    def _display_summary(self, stats: bool) -> dict[str, Any]:
        return result_summary(self, stats=stats)

    def __repr__(self) -> str:
        try:
            return render_text(self._display_summary(False))
        except Exception:  # noqa: BLE001 - a repr must not raise
            return f"<{type(self).__name__}>"

    def _repr_html_(self) -> str:
        try:
            return render_html(self._display_summary(True))
        except Exception:  # noqa: BLE001
            return f"<p>{_e(type(self).__name__)}</p>"


__all__ = ["BRIEF_MAX_ITEMS", "DisplayMixin", "brief", "privacy_summary", "render_html", "render_text",
           "report_html", "result_summary", "summary_dict"]
