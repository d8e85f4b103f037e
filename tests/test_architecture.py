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
budget" is a checked claim; at most 3 imports of another module's private names; a function that
takes ``context`` (a :class:`~dpinfer.privacy.context.ReleaseContext`) takes no ``ledger``,
``privacy_rng`` or ``rng`` beside it (one calling convention for every release).

Every import counts, including those inside functions. Each rule has a known-broken variant
checked against the same functions.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "dpinfer"
LAYERS = {
    "errors": 0, "_version": 0, "randomness": 0, "sizes": 0, "privacy": 0, "results": 0,
    "deferred": 0,  # heavy third-party modules imported at first use (start-up time)
    "models": 1, "distances": 1, "execution": 1, "datasets": 1, "diagnostics": 1, "data": 1,
    "release": 2, "inference": 2,
    "pipelines": 2.5,  # a release followed by its post-processing (private_glm): above both, below the face
    "plots": 1,  # draws figures from arrays and prints nothing: results offer .plot()
    "__init__": 3, "__main__": 3, "cli": 3, "demo": 3, "report": 3,
    "service": 3,  # the data owner's HTTP service and the analyst's client: a face, like cli
    "audit": 3,  # black-box privacy audits, above everything they audit (faces excluded: see below)
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
# Allowed by name: ``dpinfer.audit`` runs releases with the PrivacyRNG it is given and draws the
# float noise of known-broken variants from it. It is no release path: it charges nothing, works on
# the auditor's own neighbouring inputs, sits above every layer and nothing in dpinfer imports it.
SECRET_RANDOMNESS_AUDITORS = ("dpinfer.audit",)
# What post-processing may take from the privacy core.
INFERENCE_MAY_USE = ("dpinfer.privacy.events", "dpinfer.privacy.report", "dpinfer.privacy.event_conversion")
MAX_PRIVATE_IMPORTS = 3
#: run these tests on one pytest-xdist worker (conftest's scheduler): the sources are read and
#: parsed once per process (``parsed``), not once per worker
ONE_WORKER = True


@cache
def parsed(text: str) -> ast.Module:
    """The syntax tree of a module's text, parsed once for all the rules (read, never changed)."""
    return ast.parse(text)


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
        for node in ast.walk(parsed(text)):
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
        if any(mod == a or mod.startswith(f"{a}.") for a in SECRET_RANDOMNESS_AUDITORS):
            continue  # the audits run releases on the PrivacyRNG they are given (see below)
        for node in ast.walk(parsed(text)):
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
        for node in ast.walk(parsed(text)):
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


# ---- function size and signature width (issue 37, item 4) ------------------------------------
#: Functions whose code (docstring excluded: numpy-style docstrings are required) is longer than
#: this are "long"; at most MAX_LONG_FUNCTIONS of them, and no public function takes more than
#: MAX_PUBLIC_PARAMETERS parameters (option objects group the rest).
LONG_FUNCTION_LINES = 80
MAX_LONG_FUNCTIONS = 15
MAX_PUBLIC_PARAMETERS = 15
#: functions exempt by name (none)
SIZE_ALLOWED: set[tuple[str, str]] = set()


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of a function (signature and body), its docstring excluded."""
    lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(getattr(first.value, "value", None), str):
        lines -= first.end_lineno - first.lineno + 1  # type: ignore[operator]
    return lines


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters, ``self``/``cls`` excluded; ``*args`` and ``**kwargs`` count one each."""
    a = node.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def function_sizes(sources: dict[str, tuple[str, bool]]) -> tuple[list[str], list[str]]:
    """``(long, wide)``: the functions over LONG_FUNCTION_LINES code lines, and the public functions
    (public module, no leading underscore; constructors count) over MAX_PUBLIC_PARAMETERS
    parameters, as ``"module.function (n)"``, allow-listed ones left out."""
    long, wide = [], []
    for mod, (text, _) in sources.items():
        public_module = not any(part.startswith("_") for part in mod.split(".")[1:])
        for node in ast.walk(parsed(text)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if (mod, node.name) in SIZE_ALLOWED:
                continue
            if (n := _code_lines(node)) > LONG_FUNCTION_LINES:
                long.append(f"{mod}.{node.name} ({n})")
            public = not node.name.startswith("_") or node.name == "__init__"
            if public_module and public and (p := _parameters(node)) > MAX_PUBLIC_PARAMETERS:
                wide.append(f"{mod}.{node.name} ({p})")
    return long, wide


def test_few_long_functions_and_no_wide_public_signature():
    long, wide = function_sizes(_sources())
    assert len(long) <= MAX_LONG_FUNCTIONS, sorted(long)
    assert wide == []
    # planted broken variants: an 81-line function and a 16-parameter public one are caught; a
    # private helper may be wide, and a long docstring does not make a function long
    body = "".join(f"    x{i} = {i}\n" for i in range(80))
    params = ", ".join(f"a{i}" for i in range(16))
    planted = {
        "dpinfer.inference.x": (f"def long_one():\n{body}\n"
                                f"def wide(self, {params}):\n    pass\n"
                                f"def _wide_private({params}):\n    pass\n"
                                "def documented():\n    '''" + "doc\n" * 100 + "'''\n    return 1\n", False),
        "dpinfer.inference._hidden": (f"def wide({params}):\n    pass\n", False),
    }
    assert function_sizes(planted) == (
        ["dpinfer.inference.x.long_one (81)"], ["dpinfer.inference.x.wide (16)"]
    )


# A model's records are found through a protocol it implements, never by its type's name (issue 37:
# ``type(model).__name__ == "LogisticRegression"`` hid a dependency on a layer above). The few
# comparisons that identify a *foreign* type by module and name, so that an optional library is never
# imported to ask, are named here with the constant they compare against.
TYPE_NAME_CHECKS_ALLOWED = {
    ("dpinfer.data.labels", "DataFrame"),  # pandas / polars, pinned by the type's module
    ("dpinfer.data.labels", "Table"),  # pinned to dpinfer.data.table, which imports labels (no cycle)
    ("dpinfer.execution", "Client"),  # dask.distributed's, pinned by the type's module
}


def _is_type_name(node: ast.AST) -> bool:
    """``type(x).__name__`` / ``x.__class__.__name__`` (or ``__qualname__``)."""
    if not (isinstance(node, ast.Attribute) and node.attr in ("__name__", "__qualname__")):
        return False
    v = node.value
    return (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "type") or (
        isinstance(v, ast.Attribute) and v.attr == "__class__"
    )


def type_name_comparisons(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """Comparisons (``==``, ``!=``, ``in``, ...) of a type's name, outside the named allowances, also
    through a variable that holds it (``kind = type(r).__name__`` ... ``kind in ("A", "B")``)."""
    out = []
    for mod, (text, _) in sources.items():
        tree = parsed(text)
        holders = {t.id for node in ast.walk(tree)
                   if isinstance(node, ast.Assign) and _is_type_name(node.value)
                   for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            if not any(_is_type_name(o) or (isinstance(o, ast.Name) and o.id in holders) for o in operands):
                continue
            consts = [c for o in operands for c in ([o] if not isinstance(o, ast.Tuple | ast.List | ast.Set)
                                                    else o.elts)]
            names = {c.value for c in consts if isinstance(c, ast.Constant) and isinstance(c.value, str)}
            if not names or any((mod, n) not in TYPE_NAME_CHECKS_ALLOWED for n in names):
                out.append(f"{mod}:{node.lineno}: {ast.unparse(node)}")
    return out


def test_no_dispatch_on_a_types_name():
    assert type_name_comparisons(_sources()) == []
    # known-broken variants: the old synthesis dispatch, a __class__ spelling with `in`, a comparison
    # against a variable, the type name held in a variable (the old CLI synthesize and private
    # SMC-ABC prior dispatches), and an allowed module comparing a name it is not allowed
    planted = {
        "dpinfer.models.synthesis": ('if type(model).__name__ == "LogisticRegression":\n    pass\n', False),
        "dpinfer.cli.x": ('ok = result.__class__.__name__ in ("A", "B")\n', False),
        "dpinfer.cli.y": ("ok = kind != type(result).__qualname__\n", False),
        "dpinfer.data.labels": ('t = type(X).__name__ != "Series"\n', False),
        "dpinfer.cli.synthesize": ('kind = type(r).__name__\nok = kind in ("DPVIResult", "GLMPosterior")\n',
                                   False),
    }
    assert [f.split(":")[0] for f in type_name_comparisons(planted)] == list(planted)
    allowed = {"dpinfer.data.labels": ('k = top == "pandas" and type(X).__name__ == "DataFrame"\n', False)}
    assert type_name_comparisons(allowed) == []


# ------------------------------------------------------------------------------------------------
# no import hidden in a string; the audit package is a top layer (issue 37, item 2)
# ------------------------------------------------------------------------------------------------

#: Calls that import a module named by a string, by their dotted name in the source.
DYNAMIC_IMPORTS = {"importlib.import_module", "import_module", "__import__", "importlib.__import__",
                   "importlib.util.find_spec", "util.find_spec", "find_spec"}
#: The faces: the audit package may import every layer below it, but not these.
FACES = ("dpinfer.cli", "dpinfer.demo", "dpinfer.report", "dpinfer.service", "dpinfer.__main__")


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _leading_text(node: ast.expr) -> str | None:
    """The literal text a string argument starts with (a constant, or an f-string's leading
    constant part); None when it starts with something computed."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value
    return None


def string_imports_of_dpinfer(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """Calls of ``importlib.import_module``/``__import__``/``importlib.util.find_spec`` whose module
    argument is a string literal naming a dpinfer module (``"dpinfer..."``) or a relative one
    (``".x"``): an import that the import graph of this file cannot see."""
    out = []
    for mod, (text, _) in sources.items():
        for node in ast.walk(parsed(text)):
            if not (isinstance(node, ast.Call) and _dotted(node.func) in DYNAMIC_IMPORTS):
                continue
            args = list(node.args[:1]) + [k.value for k in node.keywords if k.arg in ("name", "module")]
            for arg in args:
                lead = _leading_text(arg)
                if lead is not None and (lead == "dpinfer" or lead.startswith(("dpinfer.", "."))):
                    out.append(f"{mod}:{node.lineno}: {_dotted(node.func)}({lead!r}...)")
    return out


def audit_package_violations(graph: dict[str, set[str]]) -> list[str]:
    """``dpinfer.privacy`` importing ``dpinfer.audit``, or ``dpinfer.audit`` importing a face."""
    def under(m: str, pkg: str) -> bool:
        return m == pkg or m.startswith(pkg + ".")

    return sorted(
        f"{m} imports {d}"
        for m, deps in graph.items()
        for d in deps
        if (under(m, "dpinfer.privacy") and under(d, "dpinfer.audit"))
        or (under(m, "dpinfer.audit") and any(under(d, f) for f in FACES))
    )


def test_no_module_imports_another_dpinfer_module_through_a_string():
    assert string_imports_of_dpinfer(_sources()) == []
    # known-broken variants: each spelling is caught, a computed or third-party name is not
    planted = {"dpinfer.privacy.x": (
        "import importlib\nimport importlib.util\nfrom importlib import import_module\n"
        "def f(name):\n"
        "    importlib.import_module('dpinfer.release')\n"
        "    import_module('.registry', package='dpinfer.privacy')\n"
        "    __import__('dpinfer.models')\n"
        "    importlib.util.find_spec(f'dpinfer.distances.{name}')\n"
        "    importlib.import_module(name)\n"
        "    importlib.import_module('torch')\n", False)}
    found = string_imports_of_dpinfer(planted)
    assert [f.split(": ", 1)[1].split("(")[0] for f in found] == [
        "importlib.import_module", "import_module", "__import__", "importlib.util.find_spec"], found


def test_the_audit_package_is_a_top_layer_that_the_privacy_core_never_imports():
    graph = import_graph(_sources())
    assert any(m.startswith("dpinfer.audit.") for m in graph), "the audit package is missing"
    assert audit_package_violations(graph) == []
    assert layer_of("dpinfer.audit.registry") > max(layer_of(m) for m in (
        "dpinfer.privacy.grid", "dpinfer.models.x", "dpinfer.release.x", "dpinfer.distances.x"))
    # known-broken variants: the privacy core importing the audits (also a layer violation), the
    # audits importing a face
    planted = {
        "dpinfer.privacy.ledger": ("def f():\n    from ..audit.registry import REGISTRY\n", False),
        "dpinfer.audit": ("", True),
        "dpinfer.audit.registry": ("from ..cli.common import error\n", False),
        "dpinfer.cli.common": ("", False),
    }
    g = import_graph(planted)
    assert audit_package_violations(g) == ["dpinfer.audit.registry imports dpinfer.cli.common",
                                           "dpinfer.privacy.ledger imports dpinfer.audit.registry"]
    assert layer_violations(g) == [
        "dpinfer.privacy.ledger (layer 0) imports dpinfer.audit.registry (layer 3)"]
    # the secret-randomness allowance is the audit package by name: a look-alike is still caught
    planted_rng = {"dpinfer.audit.setups": ("from ..privacy.rng import PrivacyRNG\n", False),
                   "dpinfer.auditing": ("from .privacy.rng import PrivacyRNG\n", False)}
    assert secret_randomness_users(planted_rng) == [
        "dpinfer.auditing: from dpinfer.privacy.rng import ['PrivacyRNG']"]

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
        for node in ast.walk(parsed(text)):
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


# ------------------------------------------------------------------------------------------------
# one calling convention for every release (issue 37, item 4)
# ------------------------------------------------------------------------------------------------

#: The parameters ``context=ReleaseContext(...)`` replaced: a function that takes a context takes
#: none of them (the ledger, the data set's name and the privacy RNG travel in the context).
REPLACED_BY_CONTEXT = ("ledger", "privacy_rng", "rng")


def flat_keywords_beside_context(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """The public functions (public module, no leading underscore) that take ``context`` and also a
    parameter of :data:`REPLACED_BY_CONTEXT`, as ``"module.function (parameter)"``."""
    out = []
    for mod, (text, _) in sources.items():
        if any(part.startswith("_") for part in mod.split(".")[1:]):
            continue
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("_"):
                continue
            a = node.args
            names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
            if a.kwarg is not None:
                names.append(a.kwarg.arg)
            if "context" in names:
                out += [f"{mod}.{node.name} ({p})" for p in REPLACED_BY_CONTEXT if p in names]
    return out


def test_no_release_takes_a_context_and_the_keywords_it_replaced():
    assert flat_keywords_beside_context(_sources()) == []
    # known-broken variants: the flat keywords beside context= (the second convention before issue
    # 37), a method's positional privacy RNG, laplace's rng; a private helper and a function that
    # takes the context alone are fine
    planted = {"dpinfer.release.x": (
        "def release_glm(X, *, context=None, ledger=None, dataset=None, privacy_rng=None):\n    pass\n"
        "class M:\n    def release(self, s, privacy_rng=None, *, context=None):\n        pass\n"
        "def laplace(value, s, e, rng=None, *, context=None):\n    pass\n"
        "def _helper(context, rng):\n    pass\n"
        "def fine(x, *, context=None, label=''):\n    pass\n", False),
        "dpinfer.release._hidden": ("def f(context, ledger):\n    pass\n", False)}
    assert sorted(flat_keywords_beside_context(planted)) == [
        "dpinfer.release.x.laplace (rng)", "dpinfer.release.x.release (privacy_rng)",
        "dpinfer.release.x.release_glm (ledger)", "dpinfer.release.x.release_glm (privacy_rng)"]
