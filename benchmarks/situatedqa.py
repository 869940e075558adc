"""Real facts that changed (SituatedQA temporal): is the current version served, and the dead one not?

    python -m benchmarks.situatedqa        # a few minutes (embeds ~1,200 texts once, then cached)

SituatedQA's temporal dev set (situatedqa_temp_dev_raw.jsonl, read in place from the shared data
folder) gives questions whose answer changed, with the start date of each answer ("how many
championships do the Chicago Bulls have": 5 from 1997, 6 from 1998). Each version becomes a
plain-text memory, the question-shaped slot and its answer ("How many championships do the
chicago bulls have? 6."), remembered through the real `Memory.remember()` with no key and no
triple, every version of every fact in one store in date order, with the clock at its start
date. Questions whose answer never changed (one dated version) go in too: a rule that kills one
of them kills a live fact.

  current@1   (facts that changed) the top hit for the question gives the fact's current answer
              (and none of its earlier ones)
  dead@5      (same facts) one of the fact's own earlier versions is in the top 5
  kept@1      (facts that never changed) the top hit gives the fact's only answer

For current@1 and as_of@1 a hit counts by the answer it gives, not by the row it came from: the
data set asks many questions twice in other words ("who has the most nba points in a game", "who
has scored the most points in a nba game"), and a paraphrase that gives the current answer
answers the question.
  as_of@1     each dated question variant ("... as of 2015") asked with `as_of` = that date
              (a year alone is its first day): the top hit gives an answer the annotators gave
              for that date
  oracle      as_of's ceiling: the version valid at that date by the recorded start dates holds
              such an answer (annotators date some answers differently from the timelines)

The naive baseline is append-only: every version kept, ranked by the cosine of the same
embeddings with the question; its as_of ranks the versions started by that date.

Facts are split by a hash of the question into a tuning half and a confirming half; both are
reported. Results: situatedqa.json / .md / .png in --out.
"""

from __future__ import annotations

import hashlib
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

import msgspec
import numpy as np

from agentmem import Memory
from agentmem.config import Config
from benchmarks.embedding import add_arguments, describe, info, kind_of, model_embedder, vector_cache
from benchmarks.harness.cli import command_line, parser, progress, say
from benchmarks.harness.clock import Clock
from benchmarks.harness.embedder import VectorCache, VectorsEmbedder
from benchmarks.harness.machine import machine_info, machine_line
from benchmarks.harness.paths import DEFAULT_DATA
from benchmarks.harness.report import bars_by_measure, publish
from benchmarks.harness.stats import share
from benchmarks.harness.tables import part_tables

DATA = "situatedqa_temp_dev_raw.jsonl"
PROJECT = "facts"
NOW = datetime(2021, 12, 31, tzinfo=UTC)  # the data set's "now": its latest dates are in 2021
TARGETS = {"current1": ">= 97", "dead5": "<= 2", "as_of1": "oracle - 1"}


class Version(msgspec.Struct, frozen=True):
    answer: str
    start: datetime
    text: str


class Fact(msgspec.Struct, frozen=True):
    id: int
    question: str
    versions: list[Version]  # oldest first
    probes: list[tuple[datetime, list[str]]]  # (as of, the answers the annotators gave)
    part: str


def when(d: dict[str, Any] | None) -> datetime | None:
    if not d or not d.get("year"):
        return None
    return datetime(int(d["year"]), int(d.get("month") or 1), int(d.get("date") or 1), tzinfo=UTC)


def parse_probe(s: str | None) -> datetime | None:
    for fmt in ("%Y", "%B %d, %Y"):
        try:
            return datetime.strptime((s or "").strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def statement(question: str, answer: str) -> str:
    q = question.strip().rstrip("?").strip()
    return f"{q[:1].upper()}{q[1:]}? {answer.strip()}."


def part_of(question: str) -> str:
    return "tune" if hashlib.sha256(question.encode()).digest()[0] % 2 == 0 else "confirm"


def load(path: Path, limit: int | None) -> list[Fact]:
    """Facts with dated versions: the first timeline whose previous answer differs from the current
    one (a change), else a single dated current answer (a fact that never changed)."""
    if not path.exists():
        raise SystemExit(f"data file not found: {path} (use --data)")
    facts: list[Fact] = []
    seen: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        question = row["question"].strip()
        timelines = row.get("timelines") or []
        if question.lower() in seen or not timelines:
            continue
        versions: list[Version] = []
        for t in timelines:
            prev, cur = t.get("prev_answers") or [], t.get("cur_answers") or []
            p, c = when(t.get("prev_start")), when(t.get("cur_start"))
            if prev and cur and p and c and p < c and prev[0].lower() != cur[0].lower():
                versions = [
                    Version(prev[0], p, statement(question, prev[0])),
                    Version(cur[0], c, statement(question, cur[0])),
                ]
                break
        if not versions:
            t = next((t for t in timelines if t.get("cur_answers") and when(t.get("cur_start"))), None)
            if t is None:
                continue
            c = when(t["cur_start"])
            assert c is not None
            versions = [Version(t["cur_answers"][0], c, statement(question, t["cur_answers"][0]))]
        probes = [
            (d, [a for a in p.get("answers") or [] if a])
            for p in row.get("context_answer_pairs") or []
            if (d := parse_probe(p.get("date"))) is not None and p.get("answers")
        ]
        seen.add(question.lower())
        facts.append(Fact(len(facts), question, versions, probes, part_of(question)))
    return facts[:limit] if limit else facts


def holds(text: str, answers: Sequence[str]) -> bool:
    """The answer part of a version's text ("Q? A.") gives one of `answers`, as whole words ("15" is
    not in "2015")."""
    low = text.partition("?")[2].lower()
    return any(re.search(rf"(?<!\w){re.escape(a.lower().strip())}(?!\w)", low) for a in answers if a.strip())


def valid_at(f: Fact, d: datetime) -> Version | None:
    started = [v for v in f.versions if v.start <= d]
    return started[-1] if started else None


# -- the runs --------------------------------------------------------------------------------


def agentmem_run(facts: list[Fact], embedder: VectorsEmbedder, work: Path) -> tuple[dict[int, dict[str, Any]], int]:
    """Remember every version in date order in one store, then ask each question (now and as of
    each probe date): per fact, its measures; and how many remembers superseded something."""
    clock = Clock(NOW)
    where = Path(tempfile.mkdtemp(prefix="sqa-", dir=work))
    superseded = 0
    out: dict[int, dict[str, Any]] = {}
    try:
        with Memory(where, embedder=embedder, config=Config(), clock=clock) as mem:
            order = sorted(((v.start, f.id, i) for f in facts for i, v in enumerate(f.versions)))
            for start, fid, i in progress(order, desc="remember", unit="version"):
                clock.now = start
                v = facts[fid].versions[i]
                r = mem.remember(v.text, project=PROJECT, source_ref=f"{fid}:{i}", valid_from=start)
                superseded += r.outcome == "superseded"
            clock.now = NOW
            for f in progress(facts, desc="recall", unit="fact"):
                ranked = [
                    (h.memory.content, h.memory.source_ref or "") for h in mem.recall(f.question, project=PROJECT, k=5)
                ]
                as_of = []
                for d, answers in f.probes:
                    top = mem.recall(f.question, project=PROJECT, k=1, as_of=d)
                    as_of.append(bool(top) and holds(top[0].memory.content, answers))
                out[f.id] = scores(f, ranked, as_of)
    finally:
        shutil.rmtree(where, ignore_errors=True)
    return out, superseded


def naive_run(facts: list[Fact], cache: VectorCache) -> dict[int, dict[str, Any]]:
    items = [(f.id, i, v) for f in facts for i, v in enumerate(f.versions)]
    vectors = cache.get([v.text for _, _, v in items])
    starts = np.array([v.start.timestamp() for _, _, v in items])
    out = {}
    for f in facts:
        sims = vectors @ cache.get([f.question])[0]
        ranked = [(items[j][2].text, f"{items[j][0]}:{items[j][1]}") for j in np.argsort(-sims, kind="stable")[:5]]
        as_of = []
        for d, answers in f.probes:
            masked = np.where(starts <= d.timestamp(), sims, -np.inf)
            j = int(np.argmax(masked))
            ok = np.isfinite(masked[j]) and holds(items[j][2].text, answers)
            as_of.append(bool(ok))
        out[f.id] = scores(f, ranked, as_of)
    return out


def scores(f: Fact, ranked: list[tuple[str, str]], as_of: list[bool]) -> dict[str, Any]:
    """`ranked`: (text, source_ref) of the top hits. The top hit is current when it gives the current
    answer (another row's paraphrase of the question that does counts); a dead version is one of
    this fact's own earlier versions."""
    current, dead = f.versions[-1].answer, [v.answer for v in f.versions[:-1]]
    own_dead = {f"{f.id}:{i}" for i in range(len(f.versions) - 1)}
    return {
        "top1_current": bool(ranked) and holds(ranked[0][0], [current]) and not holds(ranked[0][0], dead),
        "dead5": any(ref in own_dead for _, ref in ranked[:5]),
        "as_of": as_of,
        "oracle": [(v := valid_at(f, d)) is not None and holds(v.text, answers) for d, answers in f.probes],
    }


def summarise(facts: list[Fact], runs: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in ("tune", "confirm", "all"):
        fs = [f for f in facts if part == "all" or f.part == part]
        changed = [f for f in fs if len(f.versions) > 1]
        still = [f for f in fs if len(f.versions) == 1]
        out[part] = {
            name: {
                "current1": share([s[f.id]["top1_current"] for f in changed]),
                "dead5": share([s[f.id]["dead5"] for f in changed]),
                "kept1": share([s[f.id]["top1_current"] for f in still]),
                "as_of1": share([x for f in fs for x in s[f.id]["as_of"]]),
                "oracle": share([x for f in fs for x in s[f.id]["oracle"]]),
            }
            for name, s in runs.items()
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = parser("situatedqa", __doc__, data=DEFAULT_DATA / DATA, work_dir=True)
    p.add_argument("--limit", type=int, default=None, help="only the first N facts")
    add_arguments(p)
    args = p.parse_args(argv)
    started = time.perf_counter()
    facts = load(args.data, args.limit)
    say(f"{len(facts)} facts, {sum(len(f.versions) > 1 for f in facts)} of them changed")
    kind = kind_of(args)
    model = model_embedder(kind)
    cache = vector_cache(kind, model, args.cache_dir)
    cache.ensure([f.question for f in facts] + [v.text for f in facts for v in f.versions])
    work = Path(tempfile.mkdtemp(prefix="agentmem-sqa-", dir=args.work_dir))
    try:
        mine, superseded = agentmem_run(facts, VectorsEmbedder.of(cache), work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    runs = {"naive": naive_run(facts, cache), "agentmem": mine}
    results: dict[str, Any] = {
        "command": command_line("situatedqa", argv),
        "data": str(args.data),
        "facts": len(facts),
        "changed": sum(len(f.versions) > 1 for f in facts),
        "versions": sum(len(f.versions) for f in facts),
        "superseded": superseded,
        "targets": TARGETS,
        "summary": summarise(facts, runs),
        # by the fact's place in the loaded data, not its text: results hold no data text
        "per_fact": [{"fact": f.id, "part": f.part, **{n: r[f.id] for n, r in runs.items()}} for f in facts],
        "seconds": round(time.perf_counter() - started, 1),
        "embedder": info(kind, model),
        "machine": machine_info(info(kind, model)),
    }
    publish(results, args.out, "situatedqa", render_markdown, plot)
    return 0


LABELS = {"current1": "current@1", "dead5": "dead@5", "kept1": "kept@1", "as_of1": "as_of@1", "oracle": "oracle"}


def render_markdown(res: dict[str, Any]) -> str:
    lines = [
        f"# SituatedQA temporal: real facts that changed ({res['changed']} changed, "
        f"{res['facts'] - res['changed']} unchanged, {res['versions']} versions, no keys)",
        "",
        "Percent; n = facts (current@1, dead@5, kept@1) or dated probes (as_of@1, oracle). Targets: current@1 "
        f"{TARGETS['current1']}, dead@5 {TARGETS['dead5']}, as_of@1 within a point of its oracle.",
        "",
    ]
    lines += part_tables(res["summary"], LABELS, [])
    lines += [
        f"remember() superseded a version {res['superseded']} times.",
        "",
        f"{machine_line(res['machine'])}; {res['seconds']} s; {describe(res.get('embedder'))}.",
    ]
    return "\n".join(lines) + "\n"


def plot(res: dict[str, Any], path: Path) -> None:
    s = res["summary"]["all"]
    bars_by_measure(s, LABELS, list(s), path, ylabel="percent", title="SituatedQA temporal dev, no keys", ticks_at=0.5)


if __name__ == "__main__":
    sys.exit(main())
