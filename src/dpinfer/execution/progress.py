"""Progress reports of the entry points that work on a terminal, in a notebook and in a log.

Library code prints nothing; the one exception is progress on standard error, in one of three
forms chosen by :func:`progress_bar`:

* on a terminal: a ``tqdm`` bar redrawn in place;
* in a notebook kernel with ``ipywidgets``: ``tqdm.auto``'s widget;
* anywhere else it is asked for (a notebook without ``ipywidgets``, where a text bar would leave
  tens of kilobytes of redraws in the saved notebook; standard error redirected to a file):
  :class:`LineProgress`, **one plain line per bar** (per population, round or run), printed when
  it finishes.

``progress=None`` (the default of every entry point that takes it) means :func:`interactive`:
shown on a terminal or in a notebook kernel, off otherwise (scripts with redirected output, test
runs, batch jobs); ``True``/``False`` force it.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from typing import Any, TextIO


def in_notebook() -> bool:
    """Whether this process is an IPython kernel (Jupyter, VS Code, Colab), where standard error
    is not a terminal but a progress bar is still seen."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()
    except Exception:  # noqa: BLE001 - an IPython without a running shell
        return False
    return ip is not None and "IPKernelApp" in getattr(ip, "config", {})


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def interactive() -> bool:
    """Standard error is a terminal, or this is a notebook kernel."""
    return _isatty(sys.stderr) or in_notebook()


def resolve(progress: bool | None) -> bool:
    """``progress`` as given, or :func:`interactive` for None."""
    return interactive() if progress is None else bool(progress)


def widgets_available() -> bool:
    """Whether ``ipywidgets`` (tqdm's notebook widget) is installed."""
    try:
        return importlib.util.find_spec("ipywidgets") is not None
    except (ImportError, ValueError):
        return False


def bar_kind(stream: Any = None, notebook: bool | None = None, widgets: bool | None = None) -> str:
    """``"tty"`` (a redrawn text bar), ``"widget"`` (a notebook widget) or ``"lines"``
    (:class:`LineProgress`) for ``stream`` (default standard error), by the rules of the module
    docstring."""
    if _isatty(sys.stderr if stream is None else stream):
        return "tty"
    nb = in_notebook() if notebook is None else notebook
    if nb and (widgets_available() if widgets is None else widgets):
        return "widget"
    return "lines"


class LineProgress:
    """A progress report of one plain line: ``desc: n/total unit, postfix, seconds``, written
    to ``file`` when it closes (the tqdm methods the entry points use, nothing drawn before)."""

    def __init__(self, total: int | None, desc: str, unit: str = "it", file: TextIO | None = None) -> None:
        self.total, self.desc, self.unit = total, desc, unit
        self.n = 0
        self.postfix = ""
        self.file = file
        self._start = time.monotonic()
        self._closed = False

    def update(self, n: int = 1) -> None:
        self.n += int(n)

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = str(s)

    def set_description(self, desc: str = "", refresh: bool = True) -> None:
        self.desc = str(desc)

    def line(self) -> str:
        """The line :meth:`close` writes."""
        done = f"{self.n}" if self.total is None else f"{self.n}/{self.total}"
        parts = [f"{done} {self.unit}{'s' if self.unit and not self.unit.endswith('s') else ''}"]
        if self.postfix:
            parts.append(self.postfix)
        parts.append(f"{time.monotonic() - self._start:.1f} s")
        return f"{self.desc}: " + ", ".join(parts)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        out = sys.stderr if self.file is None else self.file
        try:
            print(self.line(), file=out, flush=True)
        except (ValueError, OSError):  # a closed stream: progress is never an error
            pass

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def progress_bar(total: int | None, desc: str, progress: bool | None = None, unit: str = "it",
                 leave: bool = False) -> Any:
    """A progress report on standard error (module docstring), disabled unless :func:`resolve`
    says so: a ``tqdm`` bar on a terminal or as a notebook widget, else :class:`LineProgress`."""
    enabled = resolve(progress)
    if enabled and bar_kind() == "lines":
        return LineProgress(total, desc, unit)
    if enabled and bar_kind() == "widget":  # the notebook widget (ipywidgets present)
        from tqdm.auto import tqdm
    else:  # tqdm.auto warns (IProgress not found, with a path) in a kernel without ipywidgets
        from tqdm.std import tqdm
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, leave=leave, file=sys.stderr)


__all__ = ["LineProgress", "bar_kind", "in_notebook", "interactive", "progress_bar", "resolve",
           "widgets_available"]
