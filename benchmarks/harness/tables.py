"""Markdown tables: every benchmark's tables are built here, from rows of cells, so they look alike."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

_RULES = {"l": "---", "r": "---:", "c": ":---:"}


def row(cells: Iterable[object]) -> str:
    """One Markdown table line: `| a | b |`, each cell as str() gives it."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(columns: Sequence[str], rows: Iterable[Iterable[object]], align: str = "") -> list[str]:
    """A Markdown table's lines: the header, its rule, then a line a row.

    `align` holds a letter a column, l (left), r (right) or c (centred); columns past its end are left.
    """
    rule = [_RULES[a] for a in align.ljust(len(columns), "l")]
    return [row(columns), row(rule), *(row(r) for r in rows)]


def part_tables(summary: dict[str, Any], labels: dict[str, str], systems: Iterable[str]) -> list[str]:
    """Per part of a data set (tune, confirm, all): its name in bold, then a table of `pct (n=n)` cells
    (benchmarks.harness.stats.share), a row a system and a column a measure."""
    lines: list[str] = []
    names = list(systems)
    for part in ("tune", "confirm", "all"):
        s = summary[part]
        rows = ([name, *(f"{s[name][m]['pct']} (n={s[name][m]['n']})" for m in labels)] for name in names or s)
        lines += [f"**{part}**", "", *table(["system", *labels.values()], rows, "l" + "r" * len(labels)), ""]
    return lines


def fmt(v: Any, nd: int = 2) -> str:
    """A table cell of a figure: `-` for None, floats to `nd` places and ints with thousands separators."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        return f"{v:,.{nd}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def met(v: bool | None, unknown: str = "-") -> str:
    """A target's cell: yes, **no**, or `unknown` when it was not measured."""
    return unknown if v is None else ("yes" if v else "**no**")


def targets_table(targets: Iterable[dict[str, Any]], number: Callable[[Any], str] = fmt) -> list[str]:
    """The targets' table: each target, what was measured (ms, as `number` writes it) and whether it was met."""
    rows = ([t["target"], number(t["measured_ms"]), met(t["met"], "not measured")] for t in targets)
    return table(["target", "measured ms", "met"], rows, "lrc")
