"""LongMemEval-S session retrieval: agentmem's recall against the plain library baseline.

Run from the repository root:

    python -m benchmarks.longmemeval                  # the 50-question dev slice (30 min on 2 busy cores)
    python -m benchmarks.longmemeval --limit 5        # a fast check

For each question, each agentmem variant gets a fresh `Memory` in its own temporary data
directory (its own DuckDB, Tantivy and hnswlib files), so that BM25 term statistics are the
question's haystack alone, as in the baseline. The haystack sessions are written through
`Memory.observe()` session by session with the engine's clock set to the session's date
(and `valid_from` = that date); the question is then asked through `Memory.recall()` with
the clock at the question's date, so that decay and recency are computed as of then.
Hits (memories, each naming its session) are rolled up to a ranking of sessions.

Cuts (what one memory is; all but `turns` run by default, `--cuts` picks):
  user-turns          each user turn (assistant replies are not stored)
  turns               each turn, user and assistant
  user-turns+session  each user turn, plus the whole session as one more memory (the default)
  session             the whole session as one memory

Memories are of kind "event" (a thing that was said stays true: no decay). Ablations on the
default cut: the same store asked with currentness weighting off (relevance alone), and a
store whose memories are of kind "observation" (7-day half-life). Roll-ups (memory hits to
sessions): max, sum3, decay (see benchmarks.conversations.roll_up).

Baseline, built straight on the libraries: Tantivy BM25 (en_stem) over whole sessions,
MiniLM cosine over user turns max-pooled to sessions, reciprocal rank fusion (k=60).

Scores: session-level recall_any@5, recall_any@10, NDCG@10 (binary relevance), abstention
questions (`_abs`) left out. Embeddings are the real model's, cached on disk by content in
benchmarks/.cache and shared by both sides.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from agentmem import Memory, NewMemory
from agentmem.config import Config
from agentmem.ranking import Weights
from benchmarks.common import (
    DEFAULT_DATA,
    LONGMEMEVAL,
    RESULTS,
    command_line,
    machine_info,
    parser,
    progress,
    pyplot,
    read_results,
    save_figure,
    say,
    write_json,
    write_report,
)
from benchmarks.conversations import (
    ROLLUPS,
    CachedEmbedder,
    Clock,
    SessionBM25,
    VectorCache,
    cosine_ranking,
    mean,
    ndcg,
    recall_all,
    recall_any,
    roll_up,
    rrf,
)
from indexes.embed import SentenceTransformerEmbedder

CUTS = ("user-turns", "turns", "user-turns+session", "session")
RUN_BY_DEFAULT = ("user-turns", "user-turns+session", "session")
DEFAULT_CUT, DEFAULT_ROLLUP, DEFAULT_KIND = "user-turns+session", "max", "event"
BASELINE = "baseline"
PROJECT = "lme"
PUBLISHED = {
    "baseline (published, full set)": {"r5": 97.6, "r10": 99.5, "ndcg10": 92.8},
    "agentmemory (published, full set)": {"r5": 95.2, "r10": 98.6, "ndcg10": 87.9},
}
TARGET = {"r5": 98.0, "r10": 99.5, "ndcg10": 93.5}


NOTES = [
    "Notes:",
    "",
    "- Each question gets fresh stores (one per cut and kind): Tantivy's BM25 term statistics are index-wide, "
    "so questions sharing one store under different projects would score each other's haystacks.",
    "- Sessions are written in date order with the clock at each session's date; recall runs with the clock at "
    "the question's date, so decay (by kind) and recency (90-day half-life on valid_from) are as of then.",
    "- The slice is small: one question moves R@5 / R@10 by 2.1 points. Differences of a point or two between "
    "variants (e.g. the currentness and kind ablations) are within noise.",
    "- The published baseline NDCG@10 (92.8) matches this run's baseline under LongMemEval's own NDCG (92.7 "
    "here), not the textbook one (94.1): compare NDCG across sources in one convention only.",
]


class Run:
    """One agentmem store per question: how sessions are cut into memories and their kind.

    `also_flat` asks the same store a second time with currentness weighting off
    (Weights(currentness=0): relevance alone), to measure what decay and recency do.
    """

    def __init__(self, cut: str, kind: str = DEFAULT_KIND, also_flat: bool = False) -> None:
        self.cut, self.kind, self.also_flat = cut, kind, also_flat

    @property
    def name(self) -> str:
        return f"{self.cut} [{self.kind}]"

    def labels(self) -> list[str]:
        return [self.name] + ([f"{self.cut} [{self.kind}, currentness=0]"] if self.also_flat else [])

    def config(self) -> Config:
        return Config(max_content_chars=10_000_000)  # whole sessions can run past the 32k default


# -- data -----------------------------------------------------------------------------


def load(path: Path, limit: int | None) -> list[dict[str, Any]]:
    if not path.exists():
        raise SystemExit(f"data file not found: {path} (use --data)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        items = [json.loads(line) for line in f if line.strip()]
    return items[:limit] if limit else items


def parse_date(s: str) -> datetime:
    """'2023/05/20 (Sat) 02:21' -> an aware UTC datetime."""
    return datetime.strptime(s.split(" (")[0] + " " + s.split(") ")[-1], "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def turns(session: list[dict[str, Any]], roles: Sequence[str] = ("user", "assistant")) -> list[str]:
    return [t["content"].strip() for t in session if t["role"] in roles and t["content"].strip()]


def session_text(session: list[dict[str, Any]]) -> str:
    return "\n\n".join(turns(session))


def memories_of(session: list[dict[str, Any]], cut: str) -> list[str]:
    """The texts of the memories one session becomes under `cut`."""
    whole = session_text(session)
    if cut == "user-turns":
        return turns(session, ("user",))
    if cut == "turns":
        return turns(session)
    if cut == "user-turns+session":
        return [*turns(session, ("user",)), *([whole] if whole else [])]
    if cut == "session":
        return [whole] if whole else []
    raise ValueError(f"unknown cut {cut!r}")


def texts_to_embed(items: list[dict[str, Any]], cuts: Sequence[str]) -> list[str]:
    out = [q["question"].strip() for q in items]
    for q in items:
        for s in q["haystack_sessions"]:
            out += turns(s, ("user",))
            for cut in cuts:
                out += memories_of(s, cut)
    return list(dict.fromkeys(out))


# -- one question ------------------------------------------------------------------------


def agentmem_hits(
    q: dict[str, Any], run: Run, embedder: CachedEmbedder, work: Path
) -> tuple[dict[str, list[tuple[str, float]]], dict[str, float]]:
    """Fill a fresh Memory with the question's haystack, recall with the question: (session, score) hits
    for each of the run's labels, and the timing."""
    path = Path(tempfile.mkdtemp(prefix="q-", dir=work))
    clock = Clock(parse_date(q["question_date"]))
    timing: dict[str, float] = {}
    try:
        t0 = time.perf_counter()
        with Memory(path, embedder=embedder, config=run.config(), clock=clock) as mem:
            order = sorted(range(len(q["haystack_sessions"])), key=lambda i: (parse_date(q["haystack_dates"][i]), i))
            n = 0
            for i in order:
                sid, when = q["haystack_session_ids"][i], parse_date(q["haystack_dates"][i])
                batch = [
                    NewMemory(
                        content=text,
                        project=PROJECT,
                        kind=run.kind,
                        tier="episodic",
                        session=sid,
                        source="conversation",
                        valid_from=when,
                    )  # fmt: skip
                    for text in memories_of(q["haystack_sessions"][i], run.cut)
                ]
                if batch:
                    clock.now = when
                    mem.observe(batch)
                    n += len(batch)
            clock.now = parse_date(q["question_date"])
            t1 = time.perf_counter()
            k = min(n, mem.config.max_k)  # every memory: the roll-up sees the whole ranking
            hits = {run.name: mem.recall(q["question"].strip(), project=PROJECT, k=k)}
            t2 = time.perf_counter()
            if run.also_flat:
                mem.config = msgspec.structs.replace(mem.config, weights=Weights(currentness=0.0))
                hits[run.labels()[1]] = mem.recall(q["question"].strip(), project=PROJECT, k=k)
        timing = {"ingest": t1 - t0, "recall": t2 - t1, "memories": n}
        return {label: [(h.memory.session or "", h.score) for h in hs] for label, hs in hits.items()}, timing
    finally:
        shutil.rmtree(path, ignore_errors=True)


def baseline_rankings(q: dict[str, Any], cache: VectorCache) -> dict[str, list[str]]:
    """BM25 over whole sessions, MiniLM over user turns max-pooled to sessions, and their RRF."""
    sids = q["haystack_session_ids"]
    docs = {sid: session_text(s) for sid, s in zip(sids, q["haystack_sessions"], strict=True)}
    bm25 = [sid for sid, _ in SessionBM25({k: v for k, v in docs.items() if v}).search(q["question"], len(docs))]
    owners: list[str] = []
    texts: list[str] = []
    for sid, s in zip(sids, q["haystack_sessions"], strict=True):
        for t in turns(s, ("user",)):
            owners.append(sid)
            texts.append(t)
    qv = cache.get([q["question"].strip()])[0]
    vec = [sid for sid, _ in cosine_ranking(qv, cache.get(texts), owners)]
    return {BASELINE: rrf([bm25, vec]), "baseline: BM25 sessions only": bm25, "baseline: MiniLM user turns only": vec}


def scores(ranked: list[str], relevant: list[str]) -> dict[str, float]:
    first = next((i + 1 for i, s in enumerate(ranked) if s in set(relevant)), None)
    return {
        "r5": recall_any(ranked, relevant, 5),
        "r10": recall_any(ranked, relevant, 10),
        "ndcg10": ndcg(ranked, relevant, 10),
        "ndcg10_lme": ndcg(ranked, relevant, 10, lme=True),
        "rall10": recall_all(ranked, relevant, 10),
        "first_rank": float(first) if first is not None else float("nan"),
    }


# -- the whole run -----------------------------------------------------------------------


def summarise(per_q: list[dict[str, Any]], system: str) -> dict[str, Any]:
    types = sorted({r["type"] for r in per_q})

    def agg(rows: list[dict[str, Any]]) -> dict[str, float]:
        return {
            m: mean([r["scores"][system][m] for r in rows]) for m in ("r5", "r10", "ndcg10", "ndcg10_lme", "rall10")
        }

    out: dict[str, Any] = {"overall": agg(per_q), "n": len(per_q)}
    out["by_type"] = {
        t: {**agg([r for r in per_q if r["type"] == t]), "n": sum(r["type"] == t for r in per_q)} for t in types
    }
    return out


def runs_for(args: argparse.Namespace) -> list[Run]:
    runs = [Run(cut, also_flat=cut == DEFAULT_CUT and not args.no_ablations) for cut in args.cuts]
    if not args.no_ablations:
        runs.append(Run(DEFAULT_CUT, kind="observation"))
    return runs


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = parser("longmemeval", __doc__)
    p.add_argument(
        "--data", type=Path, default=DEFAULT_DATA / LONGMEMEVAL, help="the jsonl.gz file (default %(default)s)"
    )
    p.add_argument("--limit", type=int, default=None, help="only the first N questions")
    p.add_argument(
        "--cuts", default=",".join(RUN_BY_DEFAULT), help="cuts to run, comma separated (default %(default)s)"
    )
    p.add_argument("--no-ablations", action="store_true", help="skip the kind=observation and currentness=0 runs")
    p.add_argument("--work-dir", type=Path, default=None, help="where temporary data directories go")
    p.add_argument("--out", type=Path, default=RESULTS, help="results folder (default benchmarks/results)")
    p.add_argument("--render-only", action="store_true", help="rewrite the .md and .png from --out/longmemeval.json")
    args = p.parse_args(argv)
    args.cuts = [c.strip() for c in args.cuts.split(",") if c.strip()]
    if unknown := set(args.cuts) - set(CUTS):
        p.error(f"unknown cuts: {', '.join(sorted(unknown))}")
    if DEFAULT_CUT not in args.cuts:
        args.no_ablations = True
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render_only:
        write_outputs(read_results(args.out, "longmemeval"), args.out)
        return 0
    command = command_line("longmemeval", argv)
    started = time.perf_counter()
    machine = machine_info()
    items = load(args.data, args.limit)
    scored = [q for q in items if not q["question_id"].endswith("_abs")]
    say(f"{len(items)} questions, {len(scored)} scored (abstention left out)")
    model = SentenceTransformerEmbedder(cache_size=0)
    cache = VectorCache(model.embed, model.name, model.dim)
    t0 = time.perf_counter()
    cache.ensure(texts_to_embed(scored, args.cuts))
    embed_seconds = round(time.perf_counter() - t0, 1)
    embedder = CachedEmbedder(cache)
    runs = runs_for(args)
    per_q: list[dict[str, Any]] = []
    timings: dict[str, list[dict[str, float]]] = {r.name: [] for r in runs}
    work = Path(tempfile.mkdtemp(prefix="agentmem-lme-", dir=args.work_dir))
    try:
        for q in progress(scored, desc="questions", unit="q"):
            rankings = baseline_rankings(q, cache)
            for run in runs:
                hits, timing = agentmem_hits(q, run, embedder, work)
                timings[run.name].append(timing)
                for label, h in hits.items():
                    for how in ROLLUPS:
                        rankings[f"{label} / {how}"] = roll_up(h, how)
            per_q.append({
                "id": q["question_id"], "type": q["question_type"], "answers": q["answer_session_ids"],
                "scores": {s: scores(r, q["answer_session_ids"]) for s, r in rankings.items()},
            })  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    systems = list(per_q[0]["scores"]) if per_q else []
    default = f"{Run(DEFAULT_CUT).name} / {DEFAULT_ROLLUP}"
    if default not in systems:  # the default cut was not run: show the first agentmem system instead
        default = next((s for s in systems if not s.startswith(BASELINE)), BASELINE)
    results: dict[str, Any] = {
        "command": command,
        "data": str(args.data),
        "questions": len(items),
        "scored": len(scored),
        "default": default,
        "baseline": BASELINE,
        "target": TARGET,
        "published": PUBLISHED,
        "systems": {s: summarise(per_q, s) for s in systems},
        "timing": {
            "embedding_seconds": embed_seconds,
            "texts_embedded_this_run": cache.embedded,
            "per_run": {
                name: {
                    "ingest_seconds_total": round(sum(t["ingest"] for t in ts), 1),
                    "recall_ms_mean": round(1000 * float(np.mean([t["recall"] for t in ts])), 1) if ts else None,
                    "memories_per_question": round(float(np.mean([t["memories"] for t in ts])), 1) if ts else None,
                }
                for name, ts in timings.items()
            },
            "total_seconds": round(time.perf_counter() - started, 1),
        },
        "per_question": [
            {
                "id": r["id"],
                "type": r["type"],
                "first_rank": {s: r["scores"][s]["first_rank"] for s in (BASELINE, default) if s in r["scores"]},
            }
            for r in per_q
        ],
        "machine": machine,
    }
    write_json(args.out, "longmemeval", results)
    write_outputs(results, args.out)
    return 0


# -- output ------------------------------------------------------------------------------


def render_markdown(res: dict[str, Any]) -> str:
    sy = res["systems"]
    lines = [
        f"# LongMemEval-S session retrieval ({res['scored']} questions scored of {res['questions']})",
        "",
        "Session-level recall_any@5, recall_any@10 and NDCG@10 in percent; abstention questions left out. "
        "`ndcg@10 (lme)` is NDCG as LongMemEval's own evaluation code computes it (rank 2 weighs as rank 1).",
        "",
        f"Default: **{res['default']}**. Target: R@5 {TARGET['r5']}, R@10 {TARGET['r10']}, NDCG@10 {TARGET['ndcg10']}.",
        "",
        "| system | R@5 | R@10 | NDCG@10 | NDCG@10 (lme) | recall_all@10 |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, s in sy.items():
        o = s["overall"]
        bold = "**" if name in (res["default"], res["baseline"]) else ""
        lines.append(
            f"| {bold}{name}{bold} | {o['r5']} | {o['r10']} | {o['ndcg10']} | {o['ndcg10_lme']} | {o['rall10']} |"
        )
    for name, p in res["published"].items():
        lines.append(f"| {name} | {p['r5']} | {p['r10']} | {p['ndcg10']} | | |")
    lines += ["", *variant_table(res), "", *type_table(res), "", *NOTES]
    tm = res["timing"]
    lines += [
        "",
        "Timing (this machine):",
        "",
        "| run | ingest s (all questions) | recall ms (mean) | memories / question |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, t in tm["per_run"].items():
        lines.append(f"| {name} | {t['ingest_seconds_total']} | {t['recall_ms_mean']} | {t['memories_per_question']} |")
    lines += [
        "",
        f"Embedding this run: {tm['texts_embedded_this_run']} new texts in {tm['embedding_seconds']} s "
        f"(the rest from the cache). Total {tm['total_seconds']} s.",
    ]
    m = res["machine"]
    lines += [
        "",
        f"Machine: {m['cpu_model']}, {m['cpu_affinity']} CPUs, {m['memory_gb']} GB, Python {m['python']}, "
        f"commit {str(m['git']['commit'])[:10]}.",
    ]
    return "\n".join(lines) + "\n"


def variant_table(res: dict[str, Any]) -> list[str]:
    """Cuts (rows) by roll-ups (columns), each cell R@5 / R@10 / NDCG@10."""
    rows = list(dict.fromkeys(n.rsplit(" / ", 1)[0] for n in res["systems"] if " / " in n))
    lines = [
        "Variants, R@5 / R@10 / NDCG@10 (one store per cut and kind; currentness=0 asks the default store again):",
        "",
        "| cut [kind] | " + " | ".join(ROLLUPS) + " |",
        "| --- |" + " --- |" * len(ROLLUPS),
    ]
    for r in rows:
        cells = []
        for how in ROLLUPS:
            o = res["systems"].get(f"{r} / {how}", {}).get("overall")
            cells.append(f"{o['r5']} / {o['r10']} / {o['ndcg10']}" if o else "")
        lines.append(f"| {r} | " + " | ".join(cells) + " |")
    b = res["systems"][res["baseline"]]["overall"]
    lines.append(f"| baseline (BM25 sessions + MiniLM user turns, RRF) | {b['r5']} / {b['r10']} / {b['ndcg10']} | | |")
    return lines


def type_table(res: dict[str, Any]) -> list[str]:
    """Per question type, R@5 / R@10 / NDCG@10 of the baseline and of each cut's max roll-up."""
    sy = res["systems"]
    names = [res["baseline"], res["default"]] + [n for n in sy if n.endswith(" / max") and n != res["default"]]
    types = list(sy[res["baseline"]]["by_type"])
    lines = [
        "Per question type, R@5 / R@10 / NDCG@10:",
        "",
        "| system | " + " | ".join(f"{t} (n={sy[res['baseline']]['by_type'][t]['n']})" for t in types) + " |",
        "| --- |" + " --- |" * len(types),
    ]
    for n in names:
        bt = sy[n]["by_type"]
        cells = [f"{bt[t]['r5']} / {bt[t]['r10']} / {bt[t]['ndcg10']}" for t in types]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return lines


def plot(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    names = [res["baseline"]] + [n for n in res["systems"] if n.endswith("/ max") or n == res["default"]]
    names = list(dict.fromkeys(names))
    metrics = [("r5", "R@5"), ("r10", "R@10"), ("ndcg10", "NDCG@10")]
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(names) + 2.4))
    h = 0.8 / len(metrics)
    y = np.arange(len(names))
    for j, (m, label) in enumerate(metrics):
        vals = [res["systems"][n]["overall"][m] for n in names]
        ax.barh(y + j * h, vals, height=h, label=label)
    ax.set_yticks(y + h, names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(min(70.0, min(res["systems"][n]["overall"]["ndcg10"] for n in names) - 5), 100.5)
    ax.set_xlabel("percent")
    ax.set_title(f"LongMemEval-S session retrieval, {res['scored']} questions")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1 - 1.0 / (len(names) + 4)), ncol=3, fontsize=8)
    save_figure(fig, path)


def write_outputs(res: dict[str, Any], out: Path) -> None:
    """The Markdown table on stdout and in longmemeval.md, and the plot in longmemeval.png."""
    write_report(res, out, "longmemeval", render_markdown, plot)


if __name__ == "__main__":
    sys.exit(main())
