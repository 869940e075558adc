"""The share of the core's lines that are docstrings or comments (issue 37: keep it falling).

Counts the non-blank lines of every .py file under agentmem/, indexes/ and api/. A line is
documentation when it lies inside a docstring (the string that opens a module, class or function,
found with `ast`) or holds nothing but a comment (found with `tokenize`); a line of code with a
comment at its end counts as code. Prints the totals, and with --top N the N files with the most
documentation lines.

    python scripts/doc_share.py [--top 10] [--modules]   # --modules: module docstrings alone too
"""

from __future__ import annotations

import argparse
import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ("agentmem", "indexes", "api")


def count(path: Path) -> tuple[int, int, int]:
    """(non-blank lines, documentation lines, lines of the module docstring) of one file."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    code = {i for i, line in enumerate(lines, 1) if line.strip()}
    docs: set[int] = set()
    module_doc: set[int] = set()
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            value = first.value if isinstance(first, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                span = set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
                docs |= span
                if isinstance(node, ast.Module):
                    module_doc = span
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT and not lines[tok.start[0] - 1][: tok.start[1]].strip():
            docs.add(tok.start[0])
    return len(code), len(docs & code), len(module_doc & code)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=0)
    parser.add_argument("--modules", action="store_true", help="also the module docstrings' share")
    args = parser.parse_args()
    rows = []
    for pkg in CORE:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rows.append((path.relative_to(ROOT), *count(path)))
    total = sum(r[1] for r in rows)
    docs = sum(r[2] for r in rows)
    print(f"{len(rows)} files, {total} non-blank lines, {docs} docstring or comment lines: {100 * docs / total:.1f}%")
    if args.modules:
        mod = sum(r[3] for r in rows)
        print(f"module docstrings: {mod} lines ({100 * mod / total:.1f}%)")
    for path, lines, doc, mod in sorted(rows, key=lambda r: -r[3 if args.modules else 2])[: args.top]:
        print(f"{doc:6} doc lines ({mod:4} module docstring) of {lines:6}  {path}")


if __name__ == "__main__":
    main()
