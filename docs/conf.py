"""Sphinx configuration of dpinfer's documentation (``make docs``; warnings are errors).

Pages are MyST Markdown; the tutorials are MyST-NB text notebooks, executed at every build
(``nb_execution_mode = "force"``; ``-D nb_execution_mode=off`` builds without running them, as
the fast test suite does). The API reference is generated from the public names (``_api.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(HERE))
# the notebooks' kernels import this checkout's dpinfer too
os.environ["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [os.environ.get("PYTHONPATH")])])

import _api  # noqa: E402

import dpinfer  # noqa: E402

_api.write_pages(HERE / "api" / "generated")

project = "dpinfer"
author = "the dpinfer authors"
copyright = "the dpinfer authors"  # noqa: A001
release = dpinfer.__version__
version = release

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
root_doc = "index"

# MyST: heading anchors for links to sections, ::: fences
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# MyST-NB: run every notebook at each build; an error in a cell fails the build
nb_execution_mode = "force"
nb_execution_timeout = 180
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

# autodoc + napoleon: numpy-style docstrings, members in source order
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"exclude-members": "__init__, __new__"}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

html_theme = "furo"
html_title = f"dpinfer {release}"
html_static_path: list[str] = []
