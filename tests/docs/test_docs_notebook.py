"""Every tutorial notebook runs headless (nbclient), and its saved outputs show what a reader sees.

Each tutorial of ``docs/tutorials/`` (one per user: data owner, analyst, modeller; MyST-NB text
notebooks) is executed in a fresh kernel whose ``PYTHONPATH`` puts this checkout's ``src`` first.
Its outputs must hold no error, an inline figure (``image/png``: a result's ``.plot()``) and, for a
result object as the last expression of a cell, an HTML table (``text/html`` with a ``<table``).
``make docs`` executes them too. One test per notebook: each is executed once, on one worker.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient")
pytest.importorskip("myst_nb")
pytest.importorskip("ipykernel")

import nbformat  # noqa: E402
from myst_nb.core.read import read_myst_markdown_notebook  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "docs" / "tutorials"
#: the tutorial of each user, and text its printed output must contain
NOTEBOOKS = {
    "data-owner": ("remaining:", "refused:", "test accuracy"),
    "analyst": ("mean", "sd", "SMC-ABC"),
    "modeller": ("privacy: (", "accountant 'pure'"),
}


def execute(path: Path, cwd: Path) -> nbformat.NotebookNode:
    """The MyST-NB notebook ``path``, executed in a fresh kernel in the folder ``cwd``."""
    nb = read_myst_markdown_notebook(path.read_text())
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("OMP_WAIT_POLICY", "passive")
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(cwd)}})
    client.execute(env=env)
    return nb


def _outputs(nb: nbformat.NotebookNode) -> list[tuple[nbformat.NotebookNode, dict]]:
    return [(cell, out) for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]


def display_problems(nb: nbformat.NotebookNode, texts: tuple[str, ...] = ()) -> list[str]:
    """What the executed notebook ``nb`` fails to show: an error output, no inline figure, no
    HTML table for a cell whose last line is a bare name (a result shown by itself), a missing
    printed text."""
    problems = [f"error: {out.get('ename')}: {out.get('evalue')}"
                for _, out in _outputs(nb) if out.get("output_type") == "error"]
    kinds = {key for _, out in _outputs(nb) for key in out.get("data", {})}
    if "image/png" not in kinds:
        problems.append(f"no inline figure (image/png) among {sorted(kinds)}")
    shown = [cell for cell in nb.cells if cell.cell_type == "code" and cell.source.strip()
             and cell.source.strip().splitlines()[-1].split("#")[0].strip().isidentifier()]
    if not shown:
        problems.append("no cell shows a result as its last expression")
    html = [out["data"]["text/html"] for cell in shown for out in cell.get("outputs", [])
            if "text/html" in out.get("data", {})]
    if not any("<table" in h for h in html):
        problems.append("no HTML table for a result shown as the last expression of a cell")
    printed = "".join(out.get("text", "") for _, out in _outputs(nb))
    problems += [f"missing printed text {t!r}" for t in texts if t not in printed]
    return problems


@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_the_tutorial_runs_and_shows_inline_figures_and_html_tables(name, tmp_path):
    nb = execute(TUTORIALS / f"{name}.md", tmp_path)
    assert display_problems(nb, NOTEBOOKS[name]) == []


def test_every_tutorial_is_executed_here():
    assert sorted(p.stem for p in TUTORIALS.glob("*.md")) == sorted(NOTEBOOKS)


def test_a_notebook_without_figure_table_or_with_an_error_is_caught():
    def code(source: str, *outputs: dict) -> nbformat.NotebookNode:
        cell = nbformat.v4.new_code_cell(source)
        cell.outputs = [nbformat.from_dict(o) for o in outputs]
        return cell

    png = {"output_type": "display_data", "data": {"image/png": "iVBOR"}, "metadata": {}}
    table = {"output_type": "execute_result", "data": {"text/html": "<table></table>", "text/plain": "r"},
             "metadata": {}, "execution_count": 1}
    printed = {"output_type": "stream", "name": "stdout", "text": "mean sd\n"}
    good = nbformat.v4.new_notebook(cells=[code("print(1)", printed), code("x = 1\npost  # shown", table),
                                           code("post.plot()", png)])
    assert display_problems(good, ("mean",)) == []
    # known-broken variants: each is caught
    no_png = nbformat.v4.new_notebook(cells=[code("post", table)])
    assert any("image/png" in p for p in display_problems(no_png))
    no_table = nbformat.v4.new_notebook(cells=[code("post", printed), code("post.plot()", png)])
    assert any("HTML table" in p for p in display_problems(no_table))
    error = {"output_type": "error", "ename": "ValueError", "evalue": "boom", "traceback": []}
    failed = nbformat.v4.new_notebook(cells=[*good.cells, code("1 / 0", error)])
    assert any("ValueError" in p for p in display_problems(failed))
    assert display_problems(good, ("refused:",)) == ["missing printed text 'refused:'"]
