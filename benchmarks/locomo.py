"""LoCoMo evidence retrieval: agentmem's recall against plain library baselines.

Run from the repository root:

    python -m benchmarks.locomo                 # all 10 conversations, 1,986 questions (12 min on 2 busy cores)
    python -m benchmarks.locomo --limit 2       # the first two conversations

Each conversation gets a fresh `Memory` in its own temporary data directory. Every dialogue
turn becomes one memory ("Speaker: text", plus the caption of a shared image when there is
one), written through `Memory.observe()` session by session with the engine's clock and
`valid_from` at the session's date, `source_ref` = the turn's dia_id. Each question is asked
through `Memory.recall(k=10)` with the clock at the last session's date.

Scores per question, over the question's evidence turns (`D1:3`): evidence recall@k (the
fraction of its evidence turns among the top k) and any@k (at least one of them is there),
k = 5 and 10, per category; category 5 (adversarial: the question presupposes something
the conversation never says) is reported apart and left out of the overall figure.
Questions without evidence are left out; evidence ids are normalised (`D:11:26` -> `D11:26`,
`D30:05` -> `D30:5`), and ids that name no turn count as not found.

Baselines over the same turn texts and the same vectors: MiniLM cosine top k, Tantivy BM25
(en_stem) top k, and their reciprocal rank fusion (k=60).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from agentmem import Memory, NewMemory
from agentmem.config import Config
from agentmem.ranking import Weights
from benchmarks.conversations import SessionBM25, cosine_ranking, evidence_recall, mean, rrf
from benchmarks.embedding import add_arguments, describe, info, kind_of, model_embedder, vector_cache
from benchmarks.harness.cli import command_line, parser, progress, say
from benchmarks.harness.clock import Clock
from benchmarks.harness.datasets import LOCOMO
from benchmarks.harness.embedder import VectorCache, VectorsEmbedder
from benchmarks.harness.machine import machine_info, machine_line
from benchmarks.harness.paths import DEFAULT_DATA
from benchmarks.harness.report import publish, pyplot, rerender, save_figure
from benchmarks.harness.tables import table

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = 5
K = 10
DEEP = 50  # turns ranked per question: enough to rank a conversation's 19-32 sessions by their best turn
PROJECT = "locomo"
DEFAULT = "agentmem [event]"
BASELINES = ("baseline: MiniLM cosine", "baseline: BM25", "baseline: BM25 + MiniLM, RRF")
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")


class Turn:
    def __init__(self, dia_id: str, session: int, when: datetime, text: str) -> None:
        self.dia_id, self.session, self.when, self.text = dia_id, session, when, text


def parse_date(s: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware UTC datetime."""
    return datetime.strptime(s.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(t: dict[str, Any]) -> str:
    text = f"{t['speaker']}: {t['text'].strip()}"
    if t.get("blip_caption"):
        text += f" [shares an image: {t['blip_caption'].strip()}]"
    return text


def conversation_turns(conv: dict[str, Any]) -> list[Turn]:
    c = conv["conversation"]
    keys = sorted((k for k, v in c.items() if re.fullmatch(r"session_\d+", k) and v), key=lambda k: int(k[8:]))
    out = []
    for key in keys:
        when = parse_date(c[f"{key}_date_time"])
        out += [Turn(t["dia_id"], int(key[8:]), when, turn_text(t)) for t in c[key] if t.get("text", "").strip()]
    return out


def evidence_ids(raw: Sequence[str]) -> list[str]:
    """Normalised dia_ids: some entries hold several ids, or a stray colon or leading zero."""
    return list(dict.fromkeys(f"D{a}:{b}" for e in raw for a, b in _EVIDENCE.findall(e)))


# -- agentmem and the baselines ---------------------------------------------------------


def agentmem_rankings(
    turns: list[Turn], questions: list[str], embedder: VectorsEmbedder, work: Path, kind: str,
    currentness: float | None, database_url: str | None = None,
) -> tuple[list[list[str]], list[list[str]], dict[str, float]]:  # fmt: skip
    """One fresh Memory for the conversation (on PostgreSQL, given `database_url` of an empty database); the
    top-K dia_ids recalled for each question, and the top DEEP."""
    path = Path(tempfile.mkdtemp(prefix="conv-", dir=work))
    weights = Weights() if currentness is None else Weights(currentness=currentness)
    clock = Clock(turns[0].when)
    try:
        t0 = time.perf_counter()
        with Memory(path, embedder=embedder, config=Config(weights=weights), clock=clock,
                    database_url=database_url) as mem:  # fmt: skip
            for session in sorted({t.session for t in turns}):
                batch = [t for t in turns if t.session == session]
                clock.now = batch[0].when
                mem.observe(
                    [
                        NewMemory(
                            content=t.text,
                            project=PROJECT,
                            kind=kind,
                            tier="episodic",
                            session=f"session_{session}",
                            source="conversation",
                            source_ref=t.dia_id,
                            valid_from=t.when,
                        )  # fmt: skip
                        for t in batch
                    ]
                )
            clock.now = max(t.when for t in turns)
            t1 = time.perf_counter()
            ranked = [[h.memory.source_ref or "" for h in mem.recall(q, project=PROJECT, k=K)] for q in questions]
            t2 = time.perf_counter()
            # recall(k=K) as a user asks it for the turn figures; deeper for the session figures (a deeper
            # recall takes more candidates, so its first K may differ a little from recall(k=K))
            deep = [[h.memory.source_ref or "" for h in mem.recall(q, project=PROJECT, k=DEEP)] for q in questions]
    finally:
        shutil.rmtree(path, ignore_errors=True)
    return ranked, deep, {"ingest": t1 - t0, "recall_ms": 1000 * (t2 - t1) / max(1, len(questions))}


def baseline_rankings(turns: list[Turn], questions: list[str], cache: VectorCache) -> dict[str, list[list[str]]]:
    ids = [t.dia_id for t in turns]
    vectors = cache.get([t.text for t in turns])
    bm25 = SessionBM25({t.dia_id: t.text for t in turns})
    out: dict[str, list[list[str]]] = {b: [] for b in BASELINES}
    for q in questions:
        vec = [d for d, _ in cosine_ranking(cache.get([q])[0], vectors, ids)]
        text = [d for d, _ in bm25.search(q, 50)]
        out[BASELINES[0]].append(vec[:DEEP])
        out[BASELINES[1]].append(text[:DEEP])
        out[BASELINES[2]].append(rrf([text, vec[:DEEP]])[:DEEP])
    return out


# -- the whole run -----------------------------------------------------------------------


def sessions_of(dia_ids: Sequence[str]) -> list[str]:
    """The sessions of ranked turns ("D3:7" -> "D3"), each at the place of its best turn."""
    return list(dict.fromkeys(d.split(":")[0] for d in dia_ids if ":" in d))


def score_rows(rows: list[dict[str, Any]], system: str) -> dict[str, Any]:
    def agg(sel: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"n": len(sel)}
        for k in (5, 10):
            pairs = [evidence_recall(r["ranked"][system], r["evidence"], k) for r in sel]
            out[f"recall@{k}"] = mean([p[0] for p in pairs])
            out[f"any@{k}"] = mean([p[1] for p in pairs])
            pairs = [evidence_recall(sessions_of(r["deep"][system]), sessions_of(r["evidence"]), k) for r in sel]
            out[f"session_recall@{k}"] = mean([p[0] for p in pairs])
            out[f"session_any@{k}"] = mean([p[1] for p in pairs])
        return out

    scored = [r for r in rows if r["category"] != ADVERSARIAL]
    return {
        "overall (categories 1-4)": agg(scored),
        "by_category": {CATEGORIES[c]: agg([r for r in rows if r["category"] == c]) for c in sorted(CATEGORIES)},
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = parser("locomo", __doc__, data=DEFAULT_DATA / LOCOMO, work_dir=True)
    p.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    p.add_argument("--no-ablations", action="store_true", help="only the default agentmem variant")
    add_arguments(p)
    p.add_argument("--render-only", action="store_true", help="rewrite the .md and .png from --out/locomo.json")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render_only:
        rerender(args.out, "locomo", render_markdown, plot)
        return 0
    command = command_line("locomo", argv)
    started = time.perf_counter()
    embedder_kind = kind_of(args)
    if not args.data.exists():
        raise SystemExit(f"data file not found: {args.data} (use --data)")
    convs = json.loads(args.data.read_text(encoding="utf-8"))[: args.limit]
    model = model_embedder(embedder_kind)
    cache = vector_cache(embedder_kind, model, args.cache_dir)
    say(f"embedder {embedder_kind}: vectors in {cache.path}")
    all_turns = [conversation_turns(c) for c in convs]
    qas = [[q for q in c["qa"] if evidence_ids(q.get("evidence", []))] for c in convs]
    t0 = time.perf_counter()
    cache.ensure([t.text for ts in all_turns for t in ts] + [q["question"].strip() for qa in qas for q in qa])
    embed_seconds = round(time.perf_counter() - t0, 1)
    embedder = VectorsEmbedder.of(cache)
    variants: dict[str, tuple[str, float | None]] = {
        DEFAULT: ("event", None),
        "agentmem [observation]": ("observation", None),
    }
    variants["agentmem [event, currentness=0]"] = ("event", 0.0)
    if args.no_ablations:
        variants = {DEFAULT: variants[DEFAULT]}
    rows: list[dict[str, Any]] = []
    timing: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    unknown = 0
    work = Path(tempfile.mkdtemp(prefix="agentmem-locomo-", dir=args.work_dir))
    try:
        for conv, turns, qa in progress(list(zip(convs, all_turns, qas, strict=True)), desc="conversations"):
            questions = [q["question"].strip() for q in qa]
            ranked = baseline_rankings(turns, questions, cache)
            deep = dict(ranked)
            for name, (kind, currentness) in variants.items():
                ranked[name], deep[name], t = agentmem_rankings(turns, questions, embedder, work, kind, currentness)
                timing[name].append(t)
            have = {t.dia_id for t in turns}
            for i, q in enumerate(qa):
                ev = evidence_ids(q["evidence"])
                unknown += sum(e not in have for e in ev)
                rows.append({
                    "conversation": conv["sample_id"], "category": q["category"], "evidence": ev,
                    "ranked": {s: r[i] for s, r in ranked.items()}, "deep": {s: r[i] for s, r in deep.items()},
                })  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    systems = [*BASELINES, *variants]
    total_q = sum(len(c["qa"]) for c in convs)
    results: dict[str, Any] = {
        "command": command,
        "data": str(args.data),
        "conversations": len(convs),
        "turns": sum(len(t) for t in all_turns),
        "questions": total_q,
        "scored": len(rows),
        "left_out_without_evidence": total_q - len(rows),
        "evidence_ids_naming_no_turn": unknown,
        "k": K,
        "default": DEFAULT,
        "embedder": info(embedder_kind, model),
        "systems": {s: score_rows(rows, s) for s in systems},
        "timing": {
            "embedding_seconds": embed_seconds,
            "texts_embedded_this_run": cache.embedded,
            "per_variant": {
                v: {
                    "ingest_seconds_total": round(sum(t["ingest"] for t in ts), 1),
                    "recall_ms_mean": round(float(np.mean([t["recall_ms"] for t in ts])), 1),
                }
                for v, ts in timing.items()
            },
            "total_seconds": round(time.perf_counter() - started, 1),
        },
        "machine": machine_info(info(embedder_kind, model)),
    }
    publish(results, args.out, "locomo", render_markdown, plot)
    say(f"done in {results['timing']['total_seconds']} s")
    return 0


# -- output ------------------------------------------------------------------------------


def render_markdown(res: dict[str, Any]) -> str:
    sy = res["systems"]
    lines = [
        f"# LoCoMo evidence retrieval ({res['conversations']} conversations, {res['turns']} turns, "
        f"{res['scored']} questions with evidence)",
        "",
        "Evidence recall@k: the fraction of a question's evidence turns among the top k, averaged; "
        "any@k: at least one evidence turn in the top k. Percent. Overall = categories 1-4; "
        "category 5 (adversarial) is reported apart.",
        "",
        "Session level: each ranking of turns becomes a ranking of sessions (a session at the place of its best "
        "turn, from the top 50 turns); session recall@k is the fraction of the question's evidence sessions among "
        "the top k sessions, as published session-level LoCoMo figures count.",
        "",
    ]

    def overall(name: str, s: dict[str, Any]) -> list[Any]:
        o, adv = s["overall (categories 1-4)"], s["by_category"]["adversarial"]
        return [f"**{name}**" if name == res["default"] else name, o["recall@5"], o["recall@10"], o["any@5"],
                o["any@10"], adv["recall@10"], o.get("session_recall@5", ""), o.get("session_recall@10", "")]

    cols = ["system", "recall@5", "recall@10", "any@5", "any@10", "adversarial recall@10", "session recall@5",
            "session recall@10"]  # fmt: skip
    lines += table(cols, (overall(name, s) for name, s in sy.items()), "l" + "r" * 7)
    lines += ["", "Per category, recall@5 / recall@10:", ""]
    cats = list(next(iter(sy.values()))["by_category"])
    lines += table(["system", *(f"{c} (n={sy[res['default']]['by_category'][c]['n']})" for c in cats)],
                   ([name, *(f"{s['by_category'][c]['recall@5']} / {s['by_category'][c]['recall@10']}" for c in cats)]
                    for name, s in sy.items()))  # fmt: skip
    tm = res["timing"]
    lines += ["", "Timing (this machine):", ""]
    lines += table(["variant", "ingest s (all conversations)", "recall ms (mean)"],
                   ([name, t["ingest_seconds_total"], t["recall_ms_mean"]] for name, t in tm["per_variant"].items()),
                   "lrr")  # fmt: skip
    m = res["machine"]
    lines += [
        "",
        f"{res['left_out_without_evidence']} questions without evidence left out; "
        f"{res['evidence_ids_naming_no_turn']} evidence ids name no turn (counted as not found). "
        f"Embedding this run: {tm['texts_embedded_this_run']} new texts in {tm['embedding_seconds']} s. "
        f"Total {tm['total_seconds']} s.",
        "",
        f"{machine_line(m, full=True)}; {describe(res.get('embedder'))}.",
    ]
    return "\n".join(lines) + "\n"


def plot(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    names = list(res["systems"])
    cats = list(next(iter(res["systems"].values()))["by_category"])
    groups = ["overall (categories 1-4)", *cats]
    fig, ax = plt.subplots(figsize=(12, 4.5))
    w = 0.8 / len(names)
    x = np.arange(len(groups))
    for j, n in enumerate(names):
        s = res["systems"][n]
        vals = [s[g]["recall@10"] if g in s else s["by_category"][g]["recall@10"] for g in groups]
        ax.bar(x + j * w, vals, width=w, label=n)
    ax.set_xticks(x + w * (len(names) - 1) / 2, groups, fontsize=8)
    ax.set_ylabel("evidence recall@10 (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"LoCoMo evidence retrieval, {res['scored']} questions")
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    save_figure(fig, path)


if __name__ == "__main__":
    sys.exit(main())
