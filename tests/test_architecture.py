"""The layout is the architecture: what can spend privacy budget is visible from the tree.

Layers, bottom to top (a module may import only from its own layer or below):

0. ``errors``, ``_version``, ``randomness``, ``privacy``, ``results`` — the privacy core (noise and
   samplers, mechanisms, accounting, ledger) and the result contract;
1. ``models``, ``distances``, ``execution``, ``datasets``, ``diagnostics``;
2. ``release`` (reads confidential data and spends budget) and ``inference`` (post-processes a
   release only; it may never import ``release``);
3. ``cli``, ``demo``, ``report`` — the face, the only layer that prints (``plots`` draws figures
   from arrays at layer 1, so that every result can offer ``.plot()``).

Further rules: no import cycle, package ``__init__`` edges included; no module outside
``privacy/`` touches secret randomness (``PrivacyRNG``, ``as_privacy_rng``, the exact samplers);
``inference/`` takes from ``privacy/`` only events and reports, so "post-processing spends no
budget" is a checked claim; at most 3 imports of another module's private names.

Every import counts, including those inside functions. Each rule has a known-broken variant
checked against the same functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "dpinfer"
LAYERS = {
    "errors": 0, "_version": 0, "randomness": 0, "sizes": 0, "privacy": 0, "results": 0,
    "models": 1, "distances": 1, "execution": 1, "datasets": 1, "diagnostics": 1, "data": 1,
    "release": 2, "inference": 2,
    "pipelines": 2.5,  # a release followed by its post-processing (private_glm): above both, below the face
    "plots": 1,  # draws figures from arrays and prints nothing: results offer .plot()
    "__init__": 3, "__main__": 3, "cli": 3, "demo": 3, "report": 3,
    "service": 3,  # the data owner's HTTP service and the analyst's client: a face, like cli
}
# Upward imports allowed by name, with the reason. The result contract's ``plot()`` draws with
# ``plots`` (which draws figures from arrays, prints nothing and spends nothing); it imports it
# inside the method, so that loading or saving a result never imports matplotlib (issue 26).
# Weighted samples (``results.weighted``) are the result contract of releases and samplers alike;
# their ``synthesize()`` draws records with ``models.synthesis`` and ``to_arviz()`` computes the
# weights' Pareto k-hat with ``diagnostics.sampling``, each imported inside the function.
ALLOWED_UPWARD = {("dpinfer.results.format", "dpinfer.plots"),
                  ("dpinfer.results.weighted", "dpinfer.models.synthesis"),
                  ("dpinfer.results.weighted", "dpinfer.diagnostics.sampling")}
# What touches secret randomness: the privacy RNG and the exact samplers.
SECRET_MODULES = ("dpinfer.privacy.rng", "dpinfer.privacy.discrete")
SECRET_NAMES = {"PrivacyRNG", "as_privacy_rng"}
# What post-processing may take from the privacy core.
INFERENCE_MAY_USE = ("dpinfer.privacy.events", "dpinfer.privacy.report", "dpinfer.privacy.event_conversion")
MAX_PRIVATE_IMPORTS = 3


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
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
        if layer_of(d) > layer_of(m) and (m, d) not in ALLOWED_UPWARD
    ]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan). A package's
    ``__init__`` counts as a module: a submodule importing its own package while the package
    re-exports it is a cycle."""
    def deps(m: str) -> set[str]:
        return graph[m]

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
        "dpinfer.release.x": ("from ..cli import main\n", False),
        "dpinfer.cli": ("", True),
    }
    assert layer_violations(import_graph(planted))
    # the allowance is one edge by name: another result-layer module importing plots is caught
    planted = {"dpinfer.results.other": ("def f():\n    from ..plots import plot_pair\n", False),
               "dpinfer.plots": ("", False)}
    assert layer_violations(import_graph(planted))


def test_the_import_graph_has_no_cycles():
    assert cycles(import_graph(_sources())) == []
    planted = {
        "dpinfer.models.a": ("from .b import f\n", False),
        "dpinfer.models.b": ("def f():\n    from .a import g\n", False),
    }
    assert cycles(import_graph(planted)) == [["dpinfer.models.a", "dpinfer.models.b"]]


def secret_randomness_users(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """Modules outside ``dpinfer.privacy`` that import the privacy RNG or an exact sampler."""
    out = []
    for mod, (text, is_pkg) in sources.items():
        if mod == "dpinfer" or mod == "dpinfer.privacy" or mod.startswith("dpinfer.privacy."):
            continue  # the top-level package re-exports the public API
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(mod, is_pkg, node)
                names = {a.name for a in node.names}
                if target in SECRET_MODULES or any(f"{target}.{n}" in SECRET_MODULES for n in names) or (
                    target.startswith("dpinfer") and names & SECRET_NAMES
                ):
                    out.append(f"{mod}: from {target} import {sorted(names)}")
            elif isinstance(node, ast.Import):
                out += [f"{mod}: import {a.name}" for a in node.names if a.name in SECRET_MODULES]
    return out


def test_no_module_outside_privacy_touches_secret_randomness():
    assert secret_randomness_users(_sources()) == []
    planted = {"dpinfer.release.x": ("from ..privacy.rng import PrivacyRNG\n", False),
               "dpinfer.models.y": ("def f():\n    from ..privacy import as_privacy_rng\n", False),
               "dpinfer.inference.z": ("from dpinfer.privacy.discrete import sample_binomial\n", False)}
    assert len(secret_randomness_users(planted)) == 3


def inference_privacy_imports(graph: dict[str, set[str]]) -> list[str]:
    """What ``dpinfer.inference`` takes from ``dpinfer.privacy`` beyond events and reports."""
    return sorted(
        f"{m} imports {d}"
        for m, deps in graph.items()
        if m == "dpinfer.inference" or m.startswith("dpinfer.inference.")
        for d in deps
        if (d == "dpinfer.privacy" or d.startswith("dpinfer.privacy.")) and d not in INFERENCE_MAY_USE
    )


def test_inference_takes_only_events_and_reports_from_privacy():
    graph = import_graph(_sources())
    assert inference_privacy_imports(graph) == []
    assert not any(d.startswith("dpinfer.release") for m, deps in graph.items()
                   if m.startswith("dpinfer.inference") for d in deps)
    planted = {"dpinfer.inference.x": ("from ..privacy.ledger import Ledger\n", False),
               "dpinfer.privacy.ledger": ("", False)}
    assert inference_privacy_imports(import_graph(planted)) == [
        "dpinfer.inference.x imports dpinfer.privacy.ledger"]


def private_name_imports(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """``from other_module import _private`` within dpinfer (a module's own package excluded)."""
    out = []
    for mod, (text, is_pkg) in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                target = _resolve(mod, is_pkg, node)
                if target.startswith("dpinfer") and target != mod:
                    out += [f"{mod}: {target}.{a.name}" for a in node.names
                            if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def test_few_imports_of_other_modules_private_names():
    found = private_name_imports(_sources())
    assert len(found) <= MAX_PRIVATE_IMPORTS, found
    assert private_name_imports({"dpinfer.a": ("from .b import _x\n", False)}) == ["dpinfer.a: dpinfer.b._x"]


def release_inference_imports(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """Every import between ``dpinfer.release`` and ``dpinfer.inference``, either way: absolute or
    relative, at the top or inside a function (``from .. import inference`` included), whether or
    not the target module exists in ``sources``."""
    sides = ("dpinfer.release", "dpinfer.inference")

    def side(name: str) -> str | None:
        return next((s for s in sides if name == s or name.startswith(s + ".")), None)

    out = []
    for mod, (text, is_pkg) in sources.items():
        own = side(mod)
        if own is None:
            continue
        other = sides[1 - sides.index(own)]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, is_pkg, node)
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            hits = [t for t in targets if side(t) == other]
            if hits:  # one finding per import statement
                out.append(f"{mod} imports {hits[0]}")
    return out


def test_release_and_inference_never_import_each_other():
    assert release_inference_imports(_sources()) == []
    # known-broken variants: each way, relative and absolute, at the top and inside a function
    planted = {
        "dpinfer.release.a": ("from ..inference.glm import glm_posterior\n", False),
        "dpinfer.release.b": ("def f():\n    import dpinfer.inference.weighted\n", False),
        "dpinfer.release.c": ("def f():\n    from .. import inference\n", False),
        "dpinfer.inference.d": ("from dpinfer.release.glm import release_glm_statistics\n", False),
        "dpinfer.inference.sub": ("from ...release import abcdp\n", True),
        "dpinfer.models.e": ("from ..release import glm\nfrom ..inference import glm as g\n", False),
    }
    found = release_inference_imports(planted)
    assert [f.split(" ")[0] for f in found] == [
        "dpinfer.release.a", "dpinfer.release.b", "dpinfer.release.c", "dpinfer.inference.d",
        "dpinfer.inference.sub"]
    fine = {"dpinfer.release.ok": ("from ..results.weighted import ess\n", False),
            "dpinfer.inference.ok": ("from ..models import glm_release\n", False)}
    assert release_inference_imports(fine) == []
