"""The result files a benchmark writes: JSON, Markdown with its command line, and a PNG plot."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Render = Callable[[dict[str, Any]], str]  # results -> Markdown
Plot = Callable[[dict[str, Any], Path], None]  # results, PNG path


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


def write_report(results: dict[str, Any], out: Path, name: str, render: Render, plot: Plot) -> None:
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


def publish(results: dict[str, Any], out: Path, name: str, render: Render, plot: Plot) -> None:
    """A benchmark's end: `<name>.json`, then the Markdown (printed too) and the plot (write_report)."""
    write_json(out, name, results)
    write_report(results, out, name, render, plot)


def rerender(out: Path, name: str, render: Render, plot: Plot) -> None:
    """`--render-only`: the Markdown and the plot again from the `<name>.json` a run wrote to `out`."""
    write_report(read_results(out, name), out, name, render, plot)


def bars_by_measure(
    scores: dict[str, dict[str, dict[str, Any]]], labels: dict[str, str], names: Sequence[str], path: Path, *,
    ylabel: str, title: str, ticks_at: float,
) -> None:  # fmt: skip
    """A PNG of grouped bars: a group a measure (`labels`), a bar a system (`names`), each its `pct` (a
    stats.share cell); the group's tick sits `ticks_at` bar widths in."""
    import numpy as np

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 3.6))
    w = 0.8 / len(names)
    x = np.arange(len(labels))
    for j, name in enumerate(names):
        ax.bar(x + j * w, [scores[name][m]["pct"] or 0 for m in labels], width=w, label=name)
    ax.set_xticks(x + w * ticks_at, list(labels.values()), fontsize=8)
    ax.set_ylim(0, 105)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    save_figure(fig, path)
