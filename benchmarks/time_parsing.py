"""What understanding time in a query costs recall: agentmem.timewindow against dateparser's own search.

Run from the repository root:

    python -m benchmarks.time_parsing

The queries are the real questions of LongMemEval (the dev50 and dev150b slices) and of LoCoMo, plus
a few phrasings of each kind of time expression. Each is parsed against a fixed clock, one call at a
time, timed with perf_counter:

  agentmem (cold)   agentmem.timewindow.from_query with its per-expression cache cleared before each
                    query: what a query with a new expression pays
  agentmem (warm)   the same once every query has been parsed (the cache holds their expressions):
                    what a repeated expression on the same day pays
  dateparser.search dateparser.search.search_dates(query, languages=["en"]): the library's own way
                    to find dates in text, which every query would pay without a gate

Also when installed (they are not dependencies): parsedatetime's Calendar.nlp, ctparse and timefhuman,
the other candidates looked at. For each, the share of queries in which it found a time.
"""

from __future__ import annotations

import gc
import gzip
import json
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentmem import timewindow
from benchmarks.harness.cli import command_line, parser, progress
from benchmarks.harness.datasets import LOCOMO, LONGMEMEVAL, LONGMEMEVAL_B
from benchmarks.harness.machine import machine_info
from benchmarks.harness.paths import DEFAULT_DATA
from benchmarks.harness.report import publish, pyplot, save_figure
from benchmarks.harness.stats import percentiles
from benchmarks.harness.tables import table

NOW = datetime(2023, 5, 20, 12, 0, tzinfo=UTC)
PROBES = [
    "Who did I go with to the music event last Saturday?", "What did I do two weeks ago?",
    "What did we decide in March?", "Which pair of shoes did I clean last month?", "what happened yesterday",
    "What did I eat on March 3rd?", "meetings between May 1 and May 10", "what did I buy in the past few months",
    "what happened before March 2023", "in 2022 what car did I drive", "What did we do since last week?",
    "what did I do on 2023-03-05",
]  # fmt: skip


def questions(data: Path) -> list[str]:
    out = list(PROBES)
    for name in (LONGMEMEVAL, LONGMEMEVAL_B):
        if (data / name).exists():
            with gzip.open(data / name, "rt", encoding="utf-8") as f:
                out += [json.loads(line)["question"].strip() for line in f if line.strip()]
    if (data / LOCOMO).exists():
        for conv in json.loads((data / LOCOMO).read_text()):
            out += [str(q["question"]).strip() for q in conv["qa"]]
    return out


def parsers() -> dict[str, tuple[Callable[[str], Any], Callable[[], None]]]:
    """Name: (parse one query, what to do before each timed call)."""
    from dateparser.search import search_dates

    naive = NOW.replace(tzinfo=None)
    dp_settings = {"RELATIVE_BASE": naive, "PREFER_DATES_FROM": "past"}
    out: dict[str, tuple[Callable[[str], Any], Callable[[], None]]] = {
        "agentmem (cold)": (lambda q: timewindow.from_query(q, NOW), timewindow.clear_cache),
        "agentmem (warm)": (lambda q: timewindow.from_query(q, NOW), lambda: None),
        "dateparser.search": (lambda q: search_dates(q, languages=["en"], settings=dp_settings), lambda: None),
    }
    try:
        import parsedatetime

        cal = parsedatetime.Calendar(version=parsedatetime.VERSION_CONTEXT_STYLE)
        out["parsedatetime"] = (lambda q: cal.nlp(q, sourceTime=naive), lambda: None)
    except ImportError:
        pass
    try:
        from ctparse import ctparse

        out["ctparse"] = (lambda q: ctparse(q, ts=naive, timeout=1.0), lambda: None)
    except ImportError:
        pass
    try:
        from timefhuman import tfhConfig, timefhuman

        cfg = tfhConfig(now=naive)
        out["timefhuman"] = (lambda q: timefhuman(q, config=cfg), lambda: None)
    except ImportError:
        pass
    return out


def measure(name: str, parse: Callable[[str], Any], before: Callable[[], None], qs: Sequence[str]) -> dict[str, Any]:
    parse("warm up: last saturday")  # imports and loads its data once, as a server's warm-up does
    if name.endswith("(warm)"):
        for q in qs:
            parse(q)
    times, found = [], 0
    gc.disable()
    try:
        for q in progress(qs, desc=name, unit="q"):
            before()
            t0 = time.perf_counter()
            got = parse(q)
            times.append(1000 * (time.perf_counter() - t0))
            found += bool(got)
    finally:
        gc.enable()
    return {"ms": percentiles(times), "found": found, "queries": len(qs)}


def main(argv: Sequence[str] | None = None) -> int:
    p = parser("time_parsing", __doc__, data=DEFAULT_DATA)
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")  # dateparser's deprecation warnings
    qs = questions(args.data)
    results = {
        "command": command_line("time_parsing", argv),
        "now": NOW.isoformat(),
        "queries": len(qs),
        "parsers": {name: measure(name, f, before, qs) for name, (f, before) in parsers().items()},
        "machine": machine_info(),
    }
    publish(results, args.out, "time_parsing", render, plot)
    return 0


def render(res: dict[str, Any]) -> str:
    lines = [
        f"# Understanding time in a query: cost per query ({res['queries']} real questions)",
        "",
        "Milliseconds per query on one core, one call at a time; `found` is the share of queries in which "
        "the parser found a time.",
        "",
        *table(["parser", "p50 ms", "p95 ms", "p99 ms", "max ms", "found"], ([
            name, *(f"{r['ms'][p]:.3f}" for p in ("p50", "p95", "p99")), f"{r['ms']['max']:.1f}",
            f"{100 * r['found'] / max(1, r['queries']):.1f}%",
        ] for name, r in res["parsers"].items()), "lrrrrr"),  # fmt: skip
    ]
    m = res["machine"]
    lines += ["", f"Machine: {m['cpu_model']}, {m['cpu_affinity']} CPUs, Python {m['python']}."]
    return "\n".join(lines) + "\n"


def plot(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    names = list(res["parsers"])
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(names) + 1.8))
    for j, (key, label) in enumerate([("p50", "p50"), ("p95", "p95")]):
        ax.barh([i + 0.4 * j for i in range(len(names))], [res["parsers"][n]["ms"][key] for n in names], height=0.4,
                label=label)  # fmt: skip
    ax.set_yticks([i + 0.2 for i in range(len(names))], names)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("ms per query (log scale)")
    ax.set_title("Finding and resolving time expressions in recall queries")
    ax.legend()
    save_figure(fig, path)


if __name__ == "__main__":
    sys.exit(main())
