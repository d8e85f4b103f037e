"""The layout explains the architecture: layers, no import cycles, no oversized modules.

Layers, bottom to top (a module may import only from its own layer or below):

0. ``errors``, ``_version``, ``privacy``                      — the privacy core
1. ``models``, ``distances``, ``execution``, ``datasets``, ``diagnostics``
2. ``abc``, ``vi``, ``neural``                                — the method families (print nothing)
3. ``cli``, ``demo``, ``report``, ``plots``, ``inference``, ``posterior`` — the face

Every import counts, including those inside functions. The known-broken variants (a face import
planted in an algorithm module, a two-module cycle) are checked against the same functions.
"""

from __future__ import annotations

import ast
import statistics
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dpinfer"
LAYERS = {
    "errors": 0, "_version": 0, "privacy": 0, "__init__": 3, "__main__": 3,
    "models": 1, "distances": 1, "execution": 1, "datasets": 1, "diagnostics": 1,
    "abc": 2, "vi": 2, "neural": 2,
    "cli": 3, "demo": 3, "report": 3, "plots": 3, "inference": 3, "posterior": 3,
}
MAX_LINES, MAX_MEDIAN = 400, 200


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(["dpinfer", *parts])


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Module -> the dpinfer modules it imports (``from pkg import name`` counts the submodule
    ``pkg.name`` when there is one, else ``pkg``)."""
    graph: dict[str, set[str]] = {}
    for mod, (text, is_pkg) in sources.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("dpinfer"))
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(mod, is_pkg, node)
                if not target.startswith("dpinfer"):
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    deps.add(sub if sub in sources else target)
        graph[mod] = {d for d in deps if d in sources and d != mod}
    return graph


def layer_of(module: str) -> int:
    parts = module.split(".")
    return LAYERS[parts[1]] if len(parts) > 1 else 3


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{m} (layer {layer_of(m)}) imports {d} (layer {layer_of(d)})"
        for m, deps in graph.items()
        for d in deps
        if layer_of(d) > layer_of(m)
    ]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), ignoring the edges
    from a package's ``__init__`` to its own submodules (re-exports, not dependencies)."""
    def deps(m: str) -> set[str]:
        return {d for d in graph[m] if not d.startswith(m + ".")}

    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in deps(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def _sources() -> dict[str, tuple[str, bool]]:
    return {
        _module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
        for p in sorted(SRC.rglob("*.py"))
    }


def test_no_algorithm_or_core_module_imports_a_higher_layer():
    assert layer_violations(import_graph(_sources())) == []
    # known-broken variant: an algorithm module importing the face is caught
    planted = {
        "dpinfer.abc.x": ("from ..cli import main\n", False),
        "dpinfer.cli": ("", True),
    }
    assert layer_violations(import_graph(planted))


def test_the_import_graph_has_no_cycles():
    assert cycles(import_graph(_sources())) == []
    planted = {
        "dpinfer.models.a": ("from .b import f\n", False),
        "dpinfer.models.b": ("def f():\n    from .a import g\n", False),
    }
    assert cycles(import_graph(planted)) == [["dpinfer.models.a", "dpinfer.models.b"]]


@pytest.mark.parametrize("limit", [MAX_LINES])
def test_module_sizes(limit):
    sizes = {p.relative_to(SRC).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
             for p in SRC.rglob("*.py")}
    assert statistics.median(sizes.values()) < MAX_MEDIAN
    assert {name: n for name, n in sizes.items() if n > limit} == {}
