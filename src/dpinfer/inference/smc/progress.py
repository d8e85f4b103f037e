"""Moved to :mod:`dpinfer.execution.progress` (shared by release and inference); re-exported."""

from ...execution.progress import in_notebook, interactive, progress_bar, resolve

__all__ = ["in_notebook", "interactive", "progress_bar", "resolve"]
