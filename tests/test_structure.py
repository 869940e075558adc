"""The shape of the code: dependencies point api -> agentmem -> indexes, no import circles, and
no module reaches into another object's private members."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
PACKAGES = ("agentmem", "indexes", "api")


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _imports(path: Path, modules: dict[str, Path], *, typing: bool = False) -> set[str]:
    """The project modules `path` imports when it is loaded (imports under TYPE_CHECKING do not
    run; `typing` counts them too)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) and not typing:
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from package import module` needs the module; a name from the package needs the package
                subs = {f"{node.module}.{a.name}" for a in node.names} & modules.keys()
                found.update(subs)
                if len(subs) < len(node.names):
                    found.add(node.module)
            for field in ("body", "orelse", "handlers", "finalbody"):
                inner = getattr(node, field, None)
                if isinstance(inner, list) and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    visit(inner)

    visit(tree.body)
    return {m for m in found if m in modules}


def _circle(graph: dict[str, set[str]]) -> None:
    """AssertionError naming the first import circle of `graph` (module -> the modules it imports)."""
    state: dict[str, int] = {}
    path: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                raise AssertionError("import circle: " + " -> ".join(path[path.index(dep) :] + [dep]))
            if dep not in state:
                walk(dep)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)


@pytest.mark.parametrize("typing", [False, True], ids=["at-run-time", "for-the-type-checker"])
def test_no_import_circles(typing: bool) -> None:
    """Not even an import for the type checker goes both ways: two modules that need each other's
    names are one module, or a third holds what they share. A package's `__init__` importing its own
    modules is how packages work, and is not counted."""
    modules = _modules()
    graph = {name: _imports(path, modules, typing=typing) - {name} for name, path in modules.items()}
    for name, deps in graph.items():
        graph[name] = {d for d in deps if not d.startswith(name + ".")}
    _circle(graph)


@pytest.mark.parametrize(("low", "high"), [("indexes", "agentmem"), ("indexes", "api"), ("agentmem", "api")])
def test_dependencies_point_one_way(low: str, high: str) -> None:
    modules = _modules()
    wrong = {n: sorted(d for d in _imports(p, modules) if d.split(".")[0] == high)
             for n, p in modules.items() if n.split(".")[0] == low and not n.endswith("__main__")}  # fmt: skip
    assert not {n: d for n, d in wrong.items() if d}


def test_no_module_touches_another_objects_private_members() -> None:
    """`x._member` only where the member belongs to a class of the same module."""
    offenders = []
    for name, path in _modules().items():
        tree = ast.parse(path.read_text())
        own = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}  # methods defined here
        own |= {t.attr for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.AnnAssign)
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}  # fmt: skip
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
                continue
            if node.attr in own or (isinstance(node.value, ast.Name) and node.value.id == "sys"):
                continue
            offenders.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert not offenders, "\n".join(offenders)


def test_integrations_use_only_agentmems_public_api() -> None:
    """An adapter for another framework imports agentmem's exported names (`agentmem.__all__`),
    `agentmem.client.Client` and its own sibling modules at most: never a core module, an index
    or the service."""
    import agentmem

    for path in (ROOT / "agentmem" / "integrations").glob("*.py"):
        tree = ast.parse(path.read_text())
        used = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        ours = {(m, name) for m, name in used if m and m.split(".")[0] in PACKAGES}
        ours = {(m, name) for m, name in ours if not m.startswith("agentmem.integrations.")}
        public = {("agentmem", name) for name in agentmem.__all__} | {("agentmem.client", "Client")}
        wrong = ours - public
        assert not wrong, f"{path.name}: {sorted(wrong)}"


def test_only_the_facade_holds_the_engine() -> None:
    """Services (lifecycle, consolidation, admission, transfer, writes, recall) take an
    `agentmem.ports.Port`: units to write in and what to read and search, never the writer,
    backend or upkeep behind them. Only `Memory` builds and holds the engine."""
    modules = _modules()
    users = sorted(
        n
        for n, p in modules.items()
        if n != "agentmem.engine" and "agentmem.engine" in _imports(p, modules, typing=True)
    )
    assert users == ["agentmem.memory"]
