"""Counts, operation by operation, the places that write out an operation's arguments (issue 37).

A place is a signature, a Struct or a forwarding call that spells at least one of the operation's
arguments by name: the service function, `Memory`, the `MemoryAPI` Protocol, the `Client`, the
request Struct, the HTTP route, the CLI and the MCP tool. The TypeScript client counts when a
method lists arguments of its own instead of taking the generated request type. The id an HTTP
path carries (`memory_id`, `session`) is not counted on any surface: no Struct holds it.

    python scripts/operation_surfaces.py          # a table: operation, count, places
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_ARGUMENTS = {"self", "actor", "who", "mem", "state", "data", "request"}

# operation: (service function "file:name" or "", request Struct names, route, CLI call, MCP tool, TS method)
SURFACES: dict[str, tuple[str, tuple[str, ...], str, str, str, str]] = {
    "remember": ("agentmem/writes.py:remember", ("NewMemory",), "remember", "remember", "remember", "remember"),
    "revise": ("agentmem/writes.py:revise", ("ReviseRequest",), "revise", "revise", "", ""),
    "observe": (
        "agentmem/writes.py:observe",
        ("ObserveRequest", "Observation"),
        "observe",
        "observe",
        "observe",
        "observe",
    ),
    "search": ("", ("RecallRequest",), "recall", "search", "recall", "recall"),
    "recall": ("", ("RecallRequest",), "recall", "recall", "recall", "recall"),
    "context": ("agentmem/context.py:working_set", ("ContextRequest",), "context", "context", "context", "context"),
    "list_versions": ("", ("ListRequest",), "list_memories", "list_versions", "", ""),
    "stats": ("", ("ScopeRequest",), "stats", "stats", "", ""),
    "rebuild": ("", ("RebuildRequest",), "start_rebuild", "rebuild", "", ""),
    "export_lines": ("agentmem/transfer.py:export_lines", ("ScopeRequest",), "export", "export_lines", "", ""),
    "sweep": ("agentmem/lifecycle.py:sweep", ("SweepRequest",), "sweep", "sweep", "", ""),
    "restore": ("agentmem/lifecycle.py:restore", ("RestoreRequest",), "restore", "restore", "", ""),
    "pin": ("agentmem/lifecycle.py:pin", ("PinRequest",), "pin", "pin", "", ""),
    "delete": ("agentmem/lifecycle.py:delete", ("DeleteRequest",), "delete", "delete", "forget", "delete"),
    "audit": ("", ("AuditRequest",), "audit_log", "audit", "", ""),
    "consolidate": ("agentmem/consolidate.py:run", ("ConsolidateRequest",), "consolidate", "consolidate", "", ""),
    "end_session": (
        "agentmem/consolidate.py:end_session",
        ("EndSessionRequest",),
        "end_session",
        "end_session",
        "end_session",
        "endSession",
    ),
    "ingest_conversation": (
        "agentmem/admission/__init__.py:ingest_conversation",
        ("IngestConversationRequest",),
        "conversation",
        "ingest_conversation",
        "",
        "",
    ),
    "ingest_notes": (
        "agentmem/admission/__init__.py:ingest_notes",
        ("IngestPathRequest",),
        "notes",
        "ingest_notes",
        "",
        "",
    ),
    "ingest_code": (
        "agentmem/admission/__init__.py:ingest_code",
        ("IngestPathRequest",),
        "code",
        "ingest_code",
        "",
        "",
    ),
}
STRUCT_FILES = ("agentmem/records.py", "agentmem/operations.py", "api/schemas.py")


def _tree(path: str) -> ast.Module:
    file = ROOT / path
    return ast.parse(file.read_text()) if file.exists() else ast.Module(body=[], type_ignores=[])


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = fn.args
    names = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    return names - NOT_ARGUMENTS


def _functions(tree: ast.AST, name: str, owner: str | None = None) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    scope: list[ast.AST] = [tree]
    if owner is not None:
        scope = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == owner]
    return [f for s in scope for f in ast.walk(s)
            if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef) and f.name == name]  # fmt: skip


def _fields(name: str) -> set[str]:
    for path in STRUCT_FILES:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ClassDef) and node.name == name:
                return {
                    s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                }
    return set()


def _query_names(name: str) -> set[str]:
    """The names a Struct's fields go by in a query string or on the command line (`flag=`, `query=`
    in their `_about`): a hand-written route or CLI parameter spelling one of them spells the field."""
    found: set[str] = set()
    for path in STRUCT_FILES:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ClassDef) and node.name == name:
                for k in (k for n in ast.walk(node) if isinstance(n, ast.Call) for k in n.keywords):
                    if k.arg in ("flag", "query") and isinstance(k.value, ast.Constant):
                        found.add(str(k.value.value).lstrip("-").replace("-", "_"))
    return found


def _calls_naming(tree: ast.AST, method: str, arguments: set[str]) -> bool:
    """Whether a call `<x>.method(...)` spells an argument: as a keyword, or positionally as `args.<name>`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method:
            if any(k.arg in arguments for k in node.keywords if k.arg):
                return True
            if any(isinstance(a, ast.Attribute) and a.attr in arguments for a in node.args):
                return True
    return False


def places(op: str) -> list[str]:
    service, structs, route, cli_call, tool, ts = SURFACES[op]
    arguments: set[str] = set()
    for fn in _functions(_tree("agentmem/memory.py"), op, "Memory"):
        arguments |= _params(fn)
    for s in structs:
        arguments |= _fields(s) | _query_names(s)
    found: list[str] = []
    if service:
        path, name = service.split(":")
        if any(_params(f) & arguments for f in _functions(_tree(path), name)):
            found.append(service)
    for path, owner in (("agentmem/memory.py", "Memory"), ("agentmem/contract.py", "MemoryAPI"),
                        ("agentmem/client.py", "Client")):  # fmt: skip
        fns = _functions(_tree(path), op, owner)
        if any(_params(f) & arguments for f in fns):
            found.append(f"{path}:{owner}.{op}")
    found += [f"Struct {s}" for s in structs if _fields(s)]
    for file in sorted((ROOT / "api" / "routes").glob("*.py")):
        tree = ast.parse(file.read_text())
        for fn in _functions(tree, route):
            if _params(fn) & arguments - {"memory_id", "session"} or _calls_naming(fn, cli_call, arguments):
                found.append(f"route {file.stem}.{route}")
    for path in ("agentmem/cli.py", "agentmem/admission/cli.py"):  # `agentmem ingest` is the latter's
        if _calls_naming(_tree(path), cli_call, arguments):
            found.append(path)
    if tool:
        mcp = _tree("api/mcp_server.py")
        if any(_params(f) & arguments for f in _functions(mcp, tool)) or _calls_naming(mcp, op, arguments):
            found.append(f"MCP tool {tool}")
    if ts:
        source = (ROOT / "clients/typescript/src/index.ts").read_text()
        m = re.search(rf"^\s*{ts}\((.*)\):", source, re.M)
        taken = re.sub(r"^(memoryId: number|session: string), ", "", m.group(1)) if m else ""  # the path's id
        if m and not re.fullmatch(r"\w+: [A-Z]\w+(\[\])?( = \{\})?", taken):
            found.append(f"TypeScript {ts}")
    return found


def main() -> int:
    total = 0
    for op in SURFACES:
        where = places(op)
        total += len(where)
        print(f"{op:20} {len(where)}  {', '.join(where)}")
    print(f"{'total':20} {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
