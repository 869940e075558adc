"""The arithmetic and the report of benchmarks.concurrency: window and configuration summaries, ratios,
targets, the Markdown and the plot. Nothing here starts a process or reads a clock."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.report import pyplot, save_figure
from benchmarks.harness.stats import percentiles, summarise_rounds
from benchmarks.harness.tables import fmt, met, table

OPS = ("remember", "recall")  # index = OP_REMEMBER (1) / OP_RECALL (0) in concurrency_load
OP_NAME = {1: "remember", 0: "recall"}
# name: (percent of requests that are writes, label)
MIXES: dict[str, tuple[int, str]] = {
    "read": (0, "read-only: POST /v1/recall"),
    "mixed": (20, "80% recall / 20% remember"),
    "write": (100, "write-only: POST /v1/memories"),
}
TARGETS = {
    "remember_per_second": 150.0,  # sequential, in process, embedding excluded
    "remember_p50_ms": 6.0,
    "http_writers": 8,
    "http_writes_per_second": 50.0,
    "http_write_p99_ms": 500.0,
    "import_per_second": 1000.0,
}


# -- summaries ----------------------------------------------------------------------------


def summarise_window(payloads: Sequence[dict[str, Any]], failures: Sequence[str] = ()) -> dict[str, Any]:
    """One measured window from the clients' raw records: successful requests per second (from the
    first client's start to the last one's end), latency per operation over successful requests,
    errors (non-2xx or transport) by kind, remember outcomes. `_lat` keeps the raw latencies."""
    lat: dict[str, list[float]] = {op: [] for op in OPS}
    sent: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    for p in payloads:
        for op, ms, code, what in zip(p["op"], p["lat"], p["status"], p["outcome"], strict=True):
            name = OP_NAME[op]
            sent[name] += 1
            if 200 <= code < 300:
                lat[name].append(ms)
                if name == "remember":
                    outcomes[what] += 1
            else:
                errors[f"{name} {'exception' if code == 0 else code}"] += 1
    start = min((p["start"] for p in payloads), default=0.0)
    end = max((p["end"] for p in payloads), default=0.0)
    wall = max(end - start, 1e-9)
    ok = sum(len(v) for v in lat.values())
    return {
        "requests": sum(sent.values()),
        "ok": ok,
        "errors": sum(errors.values()) + len(failures),
        "errors_by_kind": dict(errors),
        "error_samples": [e for p in payloads for e in p["errors"]][:5],
        "client_failures": [f[-2000:] for f in failures],
        "wall_seconds": round(wall, 3),
        "rps": round(ok / wall, 2) if payloads else 0.0,
        "ops": {
            op: {"sent": sent[op], "per_second": round(len(lat[op]) / wall, 2), "latency_ms": percentiles(lat[op])}
            for op in OPS
            if sent[op]
        },
        "outcomes": dict(outcomes),
        "recycled_texts": sum(int(p.get("recycled", 0)) for p in payloads),
        "per_client_requests": sorted(len(p["op"]) for p in payloads),
        "_lat": lat,
    }


def _median(values: Sequence[float | None], nd: int = 2) -> float | None:
    vs = [v for v in values if v is not None]
    return round(float(np.median(vs)), nd) if vs else None


def summarise_config(windows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The rounds of one (size, mix, clients, side): median requests/s over rounds, latency percentiles
    over every successful request of every round (with each round's p50), summed errors and outcomes."""
    ops: dict[str, Any] = {}
    for op in OPS:
        rounds = [w["_lat"][op] for w in windows if w["ops"].get(op)]
        if rounds:
            ops[op] = {
                "sent": sum(w["ops"][op]["sent"] for w in windows if op in w["ops"]),
                "per_second": _median([w["ops"][op]["per_second"] for w in windows if op in w["ops"]]),
                "latency_ms": summarise_rounds(rounds),
            }
    outcomes: Counter[str] = Counter()
    for w in windows:
        outcomes.update(w["outcomes"])
    cpu = [w.get("cpu", {}) for w in windows]
    server_cpu = [c.get("server_cpu_seconds") for c in cpu]
    requests = sum(w["requests"] for w in windows)
    return {
        "rounds": len(windows),
        "requests": requests,
        "errors": sum(w["errors"] for w in windows),
        "rps": _median([w["rps"] for w in windows]),
        "round_rps": [w["rps"] for w in windows],
        "round_spread": spread([w["rps"] for w in windows]),
        "ops": ops,
        "outcomes": dict(outcomes),
        "recycled_texts": sum(w.get("recycled_texts", 0) for w in windows),
        "server_cores": _median([c.get("server_cores") for c in cpu]),
        "client_cores": _median([c.get("client_cores") for c in cpu]),
        "other_cores": _median([c.get("other_cores") for c in cpu]),
        "server_cpu_ms_per_request": (
            round(1000.0 * sum(server_cpu) / requests, 2)  # type: ignore[arg-type]
            if requests and all(s is not None for s in server_cpu)
            else None
        ),
    }


def spread(values: Sequence[float]) -> float | None:
    """Largest / smallest of one side's rounds: how far the same code moves between rounds on this machine
    (a new / baseline ratio inside that spread is noise)."""
    vs = [v for v in values if v is not None]
    if len(vs) < 2 or min(vs) <= 0:
        return None
    return round(max(vs) / min(vs), 3)


def ratio(new: float | None, base: float | None) -> float | None:
    """new / baseline, or None when either is missing or the baseline is 0."""
    if new is None or base is None or base == 0:
        return None
    return round(new / base, 3)


def _p(cfg: dict[str, Any] | None, op: str, key: str) -> float | None:
    if not cfg or op not in cfg["ops"]:
        return None
    value: float | None = cfg["ops"][op]["latency_ms"].get(key)
    return value


def compare(base: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, float | None]:
    """Ratios new / baseline of requests/s (above 1 is faster) and of each latency (below 1 is faster)."""
    out: dict[str, float | None] = {"rps": ratio(new["rps"] if new else None, base["rps"] if base else None)}
    for op in OPS:
        for key in ("p50", "p99"):
            out[f"{op}_{key}"] = ratio(_p(new, op, key), _p(base, op, key))
    return out


def compare_inprocess(base: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, float | None]:
    """Ratios new / baseline of the in-process figures (summarise_inprocess of each side)."""

    def get(s: dict[str, Any] | None, part: str, key: str) -> float | None:
        if s is None:
            return None
        value = s[part][key] if key != "p50" else s[part]["latency_ms"].get("p50")
        return None if value is None else float(value)

    return {
        "remember_per_second": ratio(
            get(new, "remember", "calls_per_second"), get(base, "remember", "calls_per_second")
        ),
        "remember_p50": ratio(get(new, "remember", "p50"), get(base, "remember", "p50")),
        "import_per_second": ratio(
            get(new, "import", "memories_per_second"), get(base, "import", "memories_per_second")
        ),
    }


def summarise_inprocess(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The in-process rounds of one side: median calls/s and memories/s, remember latency over every call."""
    rem = [r["remember"] for r in runs]
    imp = [r["import"] for r in runs]
    outcomes: Counter[str] = Counter()
    for r in rem:
        outcomes.update(r["outcomes"])
    return {
        "rounds": len(runs),
        "remember": {
            "calls": sum(r["calls"] for r in rem),
            "calls_per_second": _median([r["calls_per_second"] for r in rem]),
            "round_calls_per_second": [r["calls_per_second"] for r in rem],
            "latency_ms": summarise_rounds([r["latency_ms"] for r in rem]),
            "outcomes": dict(outcomes),
            "embed_misses": sum(r["embed_misses"] for r in rem),
            "check_ok": all(r["check_ok"] for r in rem),
        },
        "import": {
            "memories": imp[0]["memories"] if imp else 0,
            "memories_per_second": _median([i["memories_per_second"] for i in imp], 1),
            "round_memories_per_second": [i["memories_per_second"] for i in imp],
            "memories_per_second_with_close": _median([i["memories_per_second_with_close"] for i in imp], 1),
            "embed_misses": sum(i["embed_misses"] for i in imp),
            "check_ok": all(i["check_ok"] for i in imp),
        },
        "open_seconds": _median([r["open_seconds"] for r in runs]),
        "other_cores": _median([r.get("cpu", {}).get("other_cores") for r in runs]),
    }


# -- targets ------------------------------------------------------------------------------


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target with what both sides measured; `met` is the new side's."""
    t = TARGETS
    out: list[dict[str, Any]] = []
    ip = results.get("inprocess", {}).get("sides", {})
    if ip:
        row: dict[str, Any] = {
            "target": f"remember() in process, sequential, embedding excluded: >= {t['remember_per_second']:g} "
            f"calls/s with p50 <= {t['remember_p50_ms']:g} ms ({results['inprocess']['size']:,} store)",
            "measured": {},
        }
        for side, s in ip.items():
            rate, p50 = s["remember"]["calls_per_second"], s["remember"]["latency_ms"].get("p50")
            row["measured"][side] = f"{fmt(rate, 1)}/s, p50 {fmt(p50)} ms"
            row[f"met_{side}"] = (
                rate is not None
                and p50 is not None
                and rate >= t["remember_per_second"]
                and (p50 <= t["remember_p50_ms"])
            )
        out.append(row)
        row = {"target": f"bulk import >= {t['import_per_second']:,.0f} memories/s (import_lines, embeddings in the "
               "file, empty data directory)", "measured": {}}  # fmt: skip
        for side, s in ip.items():
            rate = s["import"]["memories_per_second"]
            row["measured"][side] = f"{fmt(rate, 0)}/s"
            row[f"met_{side}"] = rate is not None and rate >= t["import_per_second"]
        out.append(row)
    for size in results.get("http", []):
        cfg = next((c for c in size["configs"] if c["mix"] == "write" and c["clients"] == t["http_writers"]), None)
        row = {
            "target": f"{t['http_writers']} HTTP writers (write-only, server embeds each text): >= "
            f"{t['http_writes_per_second']:g} writes/s with p99 <= {t['http_write_p99_ms']:g} ms, no errors "
            f"({size['size']:,} store)",
            "measured": {},
        }
        if cfg is None:
            row["measured"] = {"": "not measured (no write-only run with 8 clients)"}
            out.append(row)
            continue
        for side, s in cfg["sides"].items():
            rate, p99 = s["rps"], _p(s, "remember", "p99")
            row["measured"][side] = f"{fmt(rate, 1)}/s, p99 {fmt(p99, 0)} ms, {s['errors']} errors"
            row[f"met_{side}"] = (
                rate is not None and p99 is not None and rate >= t["http_writes_per_second"]
                and p99 <= t["http_write_p99_ms"] and s["errors"] == 0
            )  # fmt: skip
        out.append(row)
    return out


# -- Markdown -----------------------------------------------------------------------------


def _pair(a: Any, b: Any, nd: int = 1) -> str:
    return f"{fmt(a, nd)} / {fmt(b, nd)}"


def render_markdown(results: dict[str, Any]) -> str:
    m, st, sides = results["machine"], results["settings"], results["sides"]
    b, n = sides["baseline"], sides["new"]
    lines = [
        "# agentmem under concurrency: new vs baseline",
        "",
        f"{m['date']} - {m['cpu_count']} CPUs ({(m.get('cpu_model') or '?').split()[0]}), Python {m['python']}. "
        f"**baseline** = {b['rev']} ({b['commit'][:10]}, `git worktree` at {b['root']}); **new** = the working tree "
        f"{n['root']} at {n['commit'][:10]}{' with uncommitted changes' if n['dirty'] else ''}. Both run in this "
        "venv with their own tree alone on PYTHONPATH (the files each server imported are listed below). "
        f"Total run {fmt(results.get('total_seconds'), 0)} s.",
        "",
        "Ratios are new / baseline: above 1 is faster for requests/s, below 1 is faster for latencies.",
        "",
        "## Targets",
        "",
        *table(["target", "baseline", "new", "met (new)"], ([
            t["target"], t["measured"].get("baseline", t["measured"].get("", "-")), t["measured"].get("new", "-"),
            met(t.get("met_new")),
        ] for t in results.get("targets", [])), "lllc"),
    ]  # fmt: skip
    ip = results.get("inprocess")
    if ip and ip.get("sides"):
        lines += [
            "",
            f"## In process, embedding excluded ({ip['size']:,} store, {ip['rounds']} round(s) per side, interleaved)",
            "",
            f"Sequential `Memory.remember()` of up to {st['inprocess_calls']} new texts or "
            f"{fmt(st.get('inprocess_seconds'), 0)} s (every {ip['key_every']}th text with a key that supersedes), the "
            "embedder a lookup of vectors the real model computed beforehand; then "
            f"`import_lines` of {ip['import_memories']:,} memories with embeddings into an empty directory.",
            "",
        ]

        def inprocess_row(side: str, s: dict[str, Any]) -> list[Any]:
            r, i = s["remember"], s["import"]
            lat = r["latency_ms"]
            return [
                side, fmt(r["calls_per_second"], 1), *(fmt(lat.get(p)) for p in ("p50", "p95", "p99")),
                ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items())), r["embed_misses"] + i["embed_misses"],
                fmt(i["memories_per_second"], 0), fmt(i["memories_per_second_with_close"], 0),
                r["check_ok"] and i["check_ok"], fmt(s.get("other_cores")),
            ]  # fmt: skip

        cols = ["side", "remember calls/s", "p50 ms", "p95 ms", "p99 ms", "outcomes", "embed misses",
                "import memories/s", "with close", "check ok", "other cores"]  # fmt: skip
        lines += table(cols, (inprocess_row(side, s) for side, s in ip["sides"].items()), "lrrrrlrrrcr")
        ratio_row = ip.get("ratio", {})
        lines += [
            "",
            f"Ratio new / baseline: remember calls/s {fmt(ratio_row.get('remember_per_second'), 2)}, remember p50 "
            f"{fmt(ratio_row.get('remember_p50'), 2)}, import memories/s {fmt(ratio_row.get('import_per_second'), 2)}.",
        ]
    for size in results.get("http", []):
        lines += [
            "",
            f"## Over HTTP, {size['size']:,} memories",
            "",
            f"{st['repeats']} round(s) per side and configuration, interleaved (baseline, new, baseline, new), each "
            f"up to {st['duration']:g} s or {st['max_requests']:,} requests per client. Cells are baseline / new; "
            "latencies over every successful request of both rounds; `round spread` is a side's fastest round "
            "over its slowest (a ratio within it is noise); `other` is CPU (cores) used by processes other than the "
            "measured server and the clients (the idle server, other users of the machine).",
            "",
        ]

        def http_row(c: dict[str, Any]) -> list[Any]:
            sb, sn, r = c["sides"].get("baseline"), c["sides"].get("new"), c["ratio"]
            return [
                c["mix"], c["clients"], _pair(sb and sb["rps"], sn and sn["rps"]), fmt(r["rps"]),
                _pair(sb and sb["round_spread"], sn and sn["round_spread"], 2),
                _pair(sb and sb["requests"], sn and sn["requests"], 0),
                _pair(_p(sb, "remember", "p50"), _p(sn, "remember", "p50")),
                _pair(_p(sb, "remember", "p99"), _p(sn, "remember", "p99"), 0),
                _pair(_p(sb, "recall", "p50"), _p(sn, "recall", "p50")),
                _pair(_p(sb, "recall", "p99"), _p(sn, "recall", "p99"), 0),
                f"{fmt(r['remember_p99'])}, {fmt(r['recall_p99'])}", _pair(sb and sb["errors"], sn and sn["errors"], 0),
                _pair(sb and sb["other_cores"], sn and sn["other_cores"], 2),
            ]  # fmt: skip

        cols = ["mix", "clients", "req/s", "ratio", "round spread", "requests", "remember p50 ms", "remember p99 ms",
                "recall p50 ms", "recall p99 ms", "p99 ratio (remember, recall)", "errors", "other cores"]  # fmt: skip
        lines += table(cols, (http_row(c) for c in size["configs"]), "lrlr")
        outcome_lines = []
        for c in size["configs"]:
            if c["mix"] == "read":
                continue
            parts = []
            for side, s in c["sides"].items():
                oc = ", ".join(f"{k} {v}" for k, v in sorted(s["outcomes"].items()))
                parts.append(f"{side}: {oc or '-'}")
            outcome_lines.append(f"- {c['mix']}, {c['clients']} clients: " + "; ".join(parts))
        if outcome_lines:
            lines += ["", "remember outcomes (what the writes did):", "", *outcome_lines]
    lines += ["", "## Stores and servers", ""]
    for size_key, s in results.get("stores", {}).items():
        lines.append(
            f"- store {int(size_key):,}: built by the baseline server through POST /v1/import "
            f"({fmt(s.get('import_seconds'), 1)} s, {fmt(s.get('import_per_second'), 0)} memories/s"
            f"{', from the cache' if s.get('cached') else ''}), {fmt(s.get('disk_mb'), 0)} MB on disk; "
            "each server opened its own copy."
        )
    for size in results.get("http", []):
        for side, srv in size["servers"].items():
            stop = srv.get("stop", {})
            lines.append(
                f"- {size['size']:,}, {side}: /health after {fmt(srv.get('start_seconds'))} s; RSS end "
                f"{fmt(srv.get('rss_mb'), 0)} MB (peak {fmt(srv.get('peak_rss_mb'), 0)}); stop {stop.get('signal')} "
                f"in {stop.get('seconds')} s, clean {stop.get('clean')}; imported "
                + ", ".join(f"`{v}`" for v in srv.get("modules", {}).values())
            )
    if results.get("timings"):
        lines += ["", "Time per phase (s): " + ", ".join(f"{k} {fmt(v, 0)}" for k, v in results["timings"].items())]
    if results.get("notes"):
        lines += ["", "Notes:", ""] + [f"- {x}" for x in results["notes"]]
    return "\n".join(lines) + "\n"


# -- plot ---------------------------------------------------------------------------------


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    import matplotlib.ticker

    sizes = results.get("http", [])
    rows = max(1, len(sizes))
    fig, axes = plt.subplots(rows, 3, figsize=(15, 4.2 * rows), dpi=110, squeeze=False)
    colors = {"read": "tab:blue", "mixed": "tab:purple", "write": "tab:red"}
    styles = {"baseline": ("--", "s", 0.65), "new": ("-", "o", 1.0)}
    for row, size in zip(axes, sizes, strict=False):
        clients = sorted({c["clients"] for c in size["configs"]})
        for mix in MIXES:
            cfgs = sorted((c for c in size["configs"] if c["mix"] == mix), key=lambda c: c["clients"])
            if not cfgs:
                continue
            for side, (ls, marker, alpha) in styles.items():
                xs = [c["clients"] for c in cfgs if side in c["sides"]]
                sel = [c["sides"][side] for c in cfgs if side in c["sides"]]
                kw = {"ls": ls, "marker": marker, "alpha": alpha, "color": colors[mix], "label": f"{mix}, {side}"}
                row[0].plot(xs, [s["rps"] for s in sel], **kw)
                if mix != "read":
                    row[1].plot(xs, [_p(s, "remember", "p99") for s in sel], **kw)
                if mix != "write":
                    row[2].plot(xs, [_p(s, "recall", "p99") for s in sel], **kw)
        row[1].axhline(TARGETS["http_write_p99_ms"], color="gray", lw=0.8, ls=":")
        for ax, title in zip(row, ("requests/s (successful)", "remember p99 ms", "recall p99 ms"), strict=True):
            ax.set_title(f"{size['size']:,} memories: {title}", fontsize=10)
            ax.set_xscale("log", base=2)
            ax.set_xticks(clients)
            ax.set_xticklabels([str(c) for c in clients])
            ax.set_xlabel("client processes")
            ax.grid(True, which="both", alpha=0.3)
        row[0].set_ylim(bottom=0)
        for ax in row[1:]:
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
            ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        row[0].legend(fontsize=7)
    ip = results.get("inprocess", {}).get("sides", {})
    if ip and not sizes:
        axes[0][0].set_title("no HTTP runs")
    if ip:
        text = "in process, embedding excluded:\n" + "\n".join(
            f"{side}: remember {fmt(s['remember']['calls_per_second'], 0)}/s, p50 "
            f"{fmt(s['remember']['latency_ms'].get('p50'))} ms; import {fmt(s['import']['memories_per_second'], 0)}/s"
            for side, s in ip.items()
        )
        axes[0][2].text(0.02, 0.98, text, transform=axes[0][2].transAxes, va="top", fontsize=7,
                        bbox={"boxstyle": "round", "fc": "white", "alpha": 0.8})  # fmt: skip
    m, b = results["machine"], results["sides"]["baseline"]
    fig.suptitle(f"agentmem, new (solid) vs baseline {b['rev']} (dashed), real servers on loopback "
                 f"({m['cpu_count']} CPUs, {m['date'][:10]})")  # fmt: skip
    save_figure(fig, path)
