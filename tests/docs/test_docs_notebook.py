"""A tutorial notebook runs headless (nbclient), and its saved outputs show what a reader sees.

The fastest tutorial, ``docs/tutorials/analyst.md`` (a MyST-NB text notebook), is executed in a
fresh kernel whose ``PYTHONPATH`` puts this checkout's ``src`` first. Its outputs must hold an
inline figure (``image/png``: the result's pair plot) and, for a result object as the last
expression of a cell, an HTML table (``text/html``). ``make docs`` executes every tutorial.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient")
pytest.importorskip("myst_nb")
pytest.importorskip("ipykernel")

from myst_nb.core.read import read_myst_markdown_notebook  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "tutorials" / "analyst.md"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The analyst tutorial, executed in a temporary folder."""
    nb = read_myst_markdown_notebook(NOTEBOOK.read_text())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("OMP_WAIT_POLICY", "passive")
    cwd = tmp_path_factory.mktemp("notebook")
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(cwd)}})
    client.execute(env=env)
    return nb


def _outputs(nb):
    return [(cell, out) for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]


def test_the_notebook_runs_and_shows_an_inline_figure(executed):
    errors = [out for _, out in _outputs(executed) if out.get("output_type") == "error"]
    assert not errors
    kinds = {key for _, out in _outputs(executed) for key in out.get("data", {})}
    assert "image/png" in kinds, kinds
    text = "".join(out.get("text", "") for _, out in _outputs(executed))
    assert "mean" in text and "sd" in text  # the summary printed by the tutorial


def test_a_result_as_last_expression_shows_an_html_table(executed):
    cells = [cell for cell in executed.cells if cell.cell_type == "code" and cell.source.strip() == "post"]
    assert cells, "the tutorial shows a result as the last expression of a cell"
    html = [out["data"]["text/html"] for cell in cells for out in cell.get("outputs", [])
            if "text/html" in out.get("data", {})]
    assert html and "<table" in html[0]
