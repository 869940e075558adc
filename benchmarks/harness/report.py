"""The result files a benchmark writes: JSON, Markdown with its command line, and a PNG plot."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def read_results(out: Path, name: str) -> dict[str, Any]:
    """The results a run wrote to `<name>.json` in `out`."""
    results: dict[str, Any] = json.loads((out / f"{name}.json").read_text())
    return results


def write_json(out: Path, name: str, results: dict[str, Any], default: Callable[[Any], Any] | None = None) -> None:
    """Write `results` to `<name>.json` in `out` (created if missing), indented, ending in a newline."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(results, indent=2, default=default) + "\n")


def write_results(
    out: Path, name: str, results: dict[str, Any], markdown: str, default: Callable[[Any], Any] | None = None
) -> None:
    """Write `<name>.json` (as write_json does) and the Markdown as `<name>.md` in `out`."""
    write_json(out, name, results, default)
    (out / f"{name}.md").write_text(markdown)


def write_report(
    results: dict[str, Any],
    out: Path,
    name: str,
    render: Callable[[dict[str, Any]], str],
    plot: Callable[[dict[str, Any], Path], None],
) -> None:
    """Print the Markdown, write it with its command line to `<name>.md` and the plot to `<name>.png` in `out`."""
    md = render(results)
    print(md)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text(md + f"\nProduced by (from the repository root):\n\n    {results['command']}\n")
    plot(results, out / f"{name}.png")


def pyplot() -> ModuleType:
    """matplotlib.pyplot on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Figure, path: Path, dpi: float | None = None) -> None:
    """Lay the figure out, write it to `path` (at `dpi` if given, else matplotlib's default) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    if dpi is None:
        fig.savefig(path)
    else:
        fig.savefig(path, dpi=dpi)
    plt.close(fig)


# -- Markdown tables ----------------------------------------------------------------

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


def publish(
    results: dict[str, Any],
    out: Path,
    name: str,
    render: Callable[[dict[str, Any]], str],
    plot: Callable[[dict[str, Any], Path], None],
) -> None:
    """A benchmark's end: `<name>.json`, then the Markdown (printed too) and the plot (write_report)."""
    write_json(out, name, results)
    write_report(results, out, name, render, plot)


def rerender(
    out: Path, name: str, render: Callable[[dict[str, Any]], str], plot: Callable[[dict[str, Any], Path], None]
) -> None:
    """`--render-only`: the Markdown and the plot again from the `<name>.json` a run wrote to `out`."""
    write_report(read_results(out, name), out, name, render, plot)
