"""Counts the English word lists and the regexes in agentmem/, module by module (issue 33).

A word list is a literal collection of at least three lowercase words: a set, list or tuple of
string literals, or a string of words split at spaces ("now nowadays currently".split()). A regex
is a `re.compile` call; one whose pattern alternates words (`now|currently|...`) is also a list.

    python scripts/word_lists.py            # this tree
    python scripts/word_lists.py OTHER_ROOT # another checkout, e.g. a worktree of an older commit
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from pathlib import Path

WORD = re.compile(r"[a-z][a-z' ]*")
ALTERNATION = re.compile(r"(?:[a-z]{2,}\|){2,}[a-z]{2,}")


def _words(node: ast.AST) -> list[str]:
    """The words a literal holds, if it is a word list; else []."""
    if isinstance(node, ast.Set | ast.List | ast.Tuple):
        items = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if len(items) == len(node.elts) >= 3 and all(WORD.fullmatch(w) for w in items):
            return items
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split"
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)):  # fmt: skip
        items = node.func.value.value.split()
        if len(items) >= 3 and all(WORD.fullmatch(w) for w in items):
            return items
    return []


def count(root: Path) -> tuple[Counter[str], Counter[str], int]:
    """(word lists per module, regexes per module, words in all the lists)."""
    lists: Counter[str] = Counter()
    regexes: Counter[str] = Counter()
    words = 0
    for file in sorted((root / "agentmem").rglob("*.py")):
        name = str(file.relative_to(root))
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if found := _words(node):
                lists[name] += 1
                words += len(found)
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "compile"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"):  # fmt: skip
                regexes[name] += 1
                pattern = node.args[0] if node.args else None
                if isinstance(pattern, ast.Constant) and isinstance(pattern.value, str):
                    if ALTERNATION.search(pattern.value):
                        lists[name] += 1
    return lists, regexes, words


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    lists, regexes, words = count(root)
    for name in sorted(set(lists) | set(regexes)):
        print(f"{name:40} {lists[name]:3} word lists  {regexes[name]:3} regexes")
    print(f"{'total':40} {sum(lists.values()):3} word lists  {sum(regexes.values()):3} regexes  ({words} words listed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
