"""Source trees: declarations and their documentation, never function bodies.

Python is read with `ast`: the module docstring, and every class, function and method with
its signature and docstring. JavaScript and TypeScript are read line by line: functions,
classes, methods, arrow functions bound to a name, interfaces, types and enums, each with the
JSDoc block (`/** ... */`) right above it. A declaration with documentation proposes one
candidate: "`name` (function in path): the first paragraph of its documentation", which must
still pass the screens (a docstring that is a usage example is rejected as code). Undocumented
declarations stay in the view but propose nothing. A file that does not parse is skipped.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

import msgspec

from agentmem.admission.extract import Candidate, judge
from agentmem.admission.policy import MAX_STATEMENT_CHARS

PYTHON = (".py", ".pyi")
JAVASCRIPT = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts")
SUFFIXES = PYTHON + JAVASCRIPT


class Declaration(msgspec.Struct, frozen=True, kw_only=True):
    """A module, class, function, method, interface, type or enum: where it is, its signature, its docs."""

    what: str
    name: str
    line: int
    signature: str
    doc: str | None = None


def summary(doc: str) -> str:
    """The first paragraph of a docstring, without doctest lines, on one line, at most MAX_STATEMENT_CHARS."""
    lines: list[str] = []
    for raw in doc.strip().splitlines():
        line = raw.strip()
        if not line:
            if lines:
                break
            continue
        if line.startswith((">>>", "...", "@", ":param", ":return", ":raises", "Args:", "Returns:")):
            break
        lines.append(line)
    text = " ".join(lines)
    if len(text) > MAX_STATEMENT_CHARS:
        cut = text[:MAX_STATEMENT_CHARS]
        text = cut[: cut.rfind(". ") + 1] if ". " in cut else cut.rsplit(" ", 1)[0]
    return text


def python(text: str) -> list[Declaration] | None:
    """The declarations of a Python module (None when it does not parse)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found = [Declaration(what="module", name="module", line=1, signature="", doc=ast.get_docstring(tree))]

    def visit(body: list[ast.stmt], prefix: str, in_class: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                bases = ", ".join(ast.unparse(b) for b in node.bases)
                found.append(
                    Declaration(what="class", name=prefix + node.name, line=node.lineno,
                                signature=f"class {node.name}({bases})", doc=ast.get_docstring(node))
                )  # fmt: skip
                visit(node.body, f"{prefix}{node.name}.", True)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                ret = f" -> {ast.unparse(node.returns)}" if node.returns else ""
                found.append(
                    Declaration(what="method" if in_class else "function", name=prefix + node.name, line=node.lineno,
                                signature=f"def {node.name}({ast.unparse(node.args)}){ret}",
                                doc=ast.get_docstring(node))
                )  # fmt: skip  # the body is never kept

    visit(tree.body, "", False)
    return found


_JS_DECL = [
    (what, re.compile(pattern))
    for what, pattern in (
        ("function", r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*(?P<n>[A-Za-z_$][\w$]*)\s*[<(]"),
        ("class", r"^\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+(?P<n>[A-Za-z_$][\w$]*)"),
        ("function", r"^\s*(?:export\s+)?(?:const|let|var)\s+(?P<n>[A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*"
                     r"(?:async\s+)?(?:function\b|\([^)]*\)\s*(?::[^=]+)?=>|[A-Za-z_$][\w$]*\s*=>)"),
        ("interface", r"^\s*(?:export\s+)?(?:declare\s+)?interface\s+(?P<n>[A-Za-z_$][\w$]*)"),
        ("type", r"^\s*(?:export\s+)?(?:declare\s+)?type\s+(?P<n>[A-Za-z_$][\w$]*)\s*(?:<[^>]*>)?\s*="),
        ("enum", r"^\s*(?:export\s+)?(?:const\s+)?enum\s+(?P<n>[A-Za-z_$][\w$]*)"),
        ("method", r"^\s+(?:(?:public|private|protected|static|async|readonly|override|get|set)\s+)*"
                   r"(?P<n>(?!if\b|for\b|while\b|switch\b|catch\b|function\b|return\b)[A-Za-z_$][\w$]*)\s*"
                   r"\([^)]*\)\s*(?::\s*[^{;]+)?\{\s*$"),
    )
]  # fmt: skip


def _jsdoc(block: list[str]) -> str:
    lines = []
    for raw in block:
        line = raw.strip()
        line = re.sub(r"^/\*\*|\*/$", "", line).strip()
        line = re.sub(r"^\*\s?", "", line).strip()
        lines.append(line)
    return "\n".join(lines).strip()


def javascript(text: str) -> list[Declaration]:
    """The declarations of a JavaScript or TypeScript file, each with the JSDoc block right above it."""
    found = []
    lines = text.splitlines()
    doc: list[str] | None = None
    doc_end = -2
    n = 0
    while n < len(lines):
        line = lines[n]
        stripped = line.strip()
        if stripped.startswith("/**"):
            block = [line]
            while "*/" not in lines[n] and n + 1 < len(lines):
                n += 1
                block.append(lines[n])
            doc, doc_end = block, n
            n += 1
            continue
        for what, pattern in _JS_DECL:
            m = pattern.match(line)
            if m:
                attached = doc is not None and doc_end == n - 1
                found.append(
                    Declaration(what=what, name=m.group("n"), line=n + 1, signature=stripped.rstrip("{").strip(),
                                doc=_jsdoc(doc) if attached and doc else None)
                )  # fmt: skip
                break
        if stripped and not stripped.startswith(("@", "//")):
            doc = None if n > doc_end else doc
        n += 1
    return found


def declarations(rel: str, text: str) -> list[Declaration] | None:
    """The declarations of one source file by its suffix (None when it does not parse)."""
    return python(text) if rel.endswith(PYTHON) else javascript(text)


def candidates(rel: str, decls: list[Declaration]) -> Iterator[Candidate]:
    """One candidate per documented declaration, with `rel:line`."""
    for d in decls:
        if not d.doc:
            continue
        text = summary(d.doc)
        if not text:
            continue
        label = f"{rel}" if d.what == "module" else f"{d.name} ({d.what} in {rel})"
        c = judge(text, speaker=d.name, ref=f"{rel}:{d.line}"[-200:], claim="documentation", title=d.name[:200])
        if c is None:
            continue
        yield msgspec.structs.replace(c, text=f"{label}: {text}" if c.reason is None else text)
