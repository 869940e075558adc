"""Knowledge updates in real conversations: does the later statement win, and does the earlier one stay reachable?

    python -m benchmarks.knowledge_update         # a minute or two (embeds ~600 turns once, then cached)

The data is LongMemEval's knowledge-update questions in their oracle form
(longmemeval_ku_dev.jsonl.gz, read in place from the shared data folder): two or more dated
sessions, where a later one changes a fact an earlier one stated ("I've completed 4 projects"
... months later "I just finished my 5th"). Turns marked `has_answer` hold the evidence: in the
last session the *fresh* evidence, in the earlier ones the *stale*.

Each question gets a fresh store. Every user turn of its sessions is written, session by
session in date order, with the engine's clock at the session's date, as an agent host does it:

  observe    `Memory.observe()` with what `POST /v1/observations` (the hook recipe) sends:
             kind observation, tier working, salience 0.3, `valid_from` = the session's date;
             each turn kept whole, and each of its sentences that states something made a
             claim of its own (agentmem.claims), superseded or reinforced on its own
  turns      the same, with claims off (`Config.claims.enabled = False`): whole turns only,
             as observe() was before claims
  remember   `Memory.remember()`, one plain-text fact per turn (no key, no triple): the
             supersession rules decide
  naive      the baseline: every turn kept, ranked by the cosine of the same embeddings
             with the question, no supersession, no currentness
  adjudicated  (with --adjudicate URL, or --cache-only) as remember, with the provider at URL
             (an OpenAI-compatible endpoint, up to /v1) ruling on the pairs the rules leave
             undecided (agentmem.adjudicate). Its replies are kept per question in --replies
             (default <out>/knowledge_update_replies.json); --cache-only replays that file with
             no model, and a reply missing from it stops the run with an error

The question is then asked with the clock at the question's date, and every hit is mapped
back to the turn it came from. A question asks for the earlier value when it says so
("initially", "previously", "when I just started", ...); one that also says "now" or
"currently" asks for both and counts in both groups. Abstention questions (`_abs`) have no
evidence and are left out.

  fresh-first   (questions asking for the current value) fresh evidence found, and ranked
                above every stale evidence turn
  stale@5       (same questions) stale evidence in the top 5 beside the fresh evidence
  fresh@5       (same questions) fresh evidence in the top 5: the floor the two above stand on
  earlier@10    (questions asking for an earlier value) stale evidence in the top 10, asked
                with history (superseded versions ranked under the current ones)

The questions are split by a hash of their id into a tuning half and a confirming half (rules
and rankings were chosen looking at the tuning half only); both are reported, and all.
Results: knowledge_update.json / .md / .png in --out.
"""

from __future__ import annotations

import gzip
import hashlib
import inspect
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from agentmem import Memory, NewMemory, claims
from agentmem.config import ClaimRules, Config
from agentmem.provider import ProviderConfig
from agentmem.records import Hit
from benchmarks.embedding import add_arguments, describe, info, kind_of, model_embedder, vector_cache
from benchmarks.harness.cli import command_line, parser, progress
from benchmarks.harness.clock import Clock
from benchmarks.harness.embedder import VectorCache, VectorsEmbedder
from benchmarks.harness.machine import machine_info, machine_line
from benchmarks.harness.paths import DEFAULT_DATA
from benchmarks.harness.report import bars_by_measure, publish
from benchmarks.harness.stats import share
from benchmarks.harness.tables import part_tables
from benchmarks.longmemeval import parse_date

DATA = "longmemeval_ku_dev.jsonl.gz"
PROJECT = "ku"
SYSTEMS = ("naive", "turns", "observe", "remember")
ADJUDICATED = "adjudicated"
NO_MODEL_URL = "http://127.0.0.1:9/v1"  # cache-only: never contacted
Replies = dict[str, dict[str, list[str]]]  # question id -> request hash -> [model, reply]
_EARLIER = re.compile(r"\b(initially|previously|originally|at first|used to|just started|before i)\b", re.I)
_NOW = re.compile(r"\b(now|currently|current|these days)\b", re.I)
TARGETS = {"fresh_first": ">= 90", "stale5": "<= 25", "earlier10": ">= 90"}


def asks(question: str) -> tuple[bool, bool]:
    """(asks for the current value, asks for an earlier value)."""
    earlier = bool(_EARLIER.search(question))
    return (not earlier or bool(_NOW.search(question))), earlier


def part_of(question_id: str) -> str:
    """'tune' or 'confirm', by a stable hash of the id."""
    return "tune" if hashlib.sha256(question_id.encode()).digest()[0] % 2 == 0 else "confirm"


# -- one question ------------------------------------------------------------------------


class Turns:
    """A question's user turns in date order: (ref, session date, text), and which refs are evidence."""

    def __init__(self, q: dict[str, Any]) -> None:
        order = sorted(range(len(q["haystack_sessions"])), key=lambda i: (parse_date(q["haystack_dates"][i]), i))
        self.sessions: list[tuple[str, Any, list[tuple[str, str]]]] = []
        self.fresh: set[str] = set()
        self.stale: set[str] = set()
        for pos, i in enumerate(order):
            sid = q["haystack_session_ids"][i]
            rows = []
            for n, t in enumerate(q["haystack_sessions"][i]):
                text = t["content"].strip()
                if t["role"] != "user" or not text:
                    continue
                ref = f"{sid}#{n}"
                rows.append((ref, text))
                if t.get("has_answer"):
                    (self.fresh if pos == len(order) - 1 else self.stale).add(ref)
            self.sessions.append((sid, parse_date(q["haystack_dates"][i]), rows))

    def texts(self) -> list[str]:
        return [text for _, _, rows in self.sessions for _, text in rows]


def supports_history() -> bool:
    """Whether this build's recall can rank superseded versions in (`include_superseded`)."""
    return "include_superseded" in inspect.signature(Memory.recall).parameters


def agentmem_rankings(
    q: dict[str, Any],
    turns: Turns,
    path: str,
    embedder: VectorsEmbedder,
    work: Path,
    rules: ClaimRules,
    provider: ProviderConfig | None = None,
    replies: Replies | None = None,
) -> tuple[list[str], list[str], dict[str, float]]:
    """Write the turns through `path` (observe, remember, or adjudicated: remember with `provider`)
    into a fresh store, ask the question: the ranked turn refs, the ranked refs asked with history,
    and counts. For adjudicated, `replies[question id]` seeds the store's reply cache and takes what
    it holds afterwards."""
    where = Path(tempfile.mkdtemp(prefix="ku-", dir=work))
    clock = Clock(parse_date(q["question_date"]))
    counts: dict[str, float] = {"superseded": 0, "memories": 0, "claims": 0, "write_seconds": 0.0, "asked": 0,
                                "cached": 0}  # fmt: skip
    claim_rules = rules if path == "observe" else msgspec.structs.replace(rules, enabled=False)
    config = Config(claims=claim_rules, provider=provider if path == ADJUDICATED else None)
    try:
        with Memory(where, embedder=embedder, config=config, clock=clock) as mem:
            mine = {} if path != ADJUDICATED or replies is None else replies.setdefault(q["question_id"], {})
            for h, (model, reply) in mine.items():
                mem.store.cache_reply(h, model, reply, clock.now)
            for sid, when, rows in turns.sessions:
                clock.now = when
                started = time.perf_counter()
                if path in ("observe", "turns"):
                    mem.observe([
                        NewMemory(content=text, project=PROJECT, kind="observation", tier="working", session=sid,
                                  source="api", source_ref=ref, salience=0.3, valid_from=when)
                        for ref, text in rows
                    ])  # fmt: skip
                else:
                    for ref, text in rows:
                        r = mem.remember(text, project=PROJECT, session=sid, source="conversation", source_ref=ref)
                        counts["superseded"] += r.outcome == "superseded"
                counts["write_seconds"] += time.perf_counter() - started
                counts["memories"] += len(rows)
            if path in ("observe", "turns"):
                made = mem.list_versions(projects=[PROJECT], kinds=[claims.CLAIM], status=None, latest_only=False,
                                         limit=mem.config.max_k)[0]  # fmt: skip
                counts["claims"] = len(made)
                counts["superseded"] = sum(m.status == "superseded" for m in made)
            clock.now = parse_date(q["question_date"])
            question = q["question"].strip()
            k = min(mem.config.max_k, max(10, int(counts["memories"])))
            current = refs(mem.recall(question, project=PROJECT, k=k))
            kw: dict[str, Any] = {"include_superseded": True} if supports_history() else {}
            with_history = refs(mem.recall(question, project=PROJECT, k=10, **kw))
            if mem.provider is not None:
                counts["asked"], counts["cached"] = mem.provider.calls, mem.provider.cache_hits
                mine.update({h: [model, reply] for h, model, reply in mem.store.cached_replies()})
        return current, with_history, counts
    finally:
        shutil.rmtree(where, ignore_errors=True)


def refs(hits: Sequence[Hit]) -> list[str]:
    return list(dict.fromkeys(h.memory.source_ref or "" for h in hits))


def naive_ranking(q: dict[str, Any], turns: Turns, cache: VectorCache) -> list[str]:
    """Every turn, ranked by cosine with the question: append-only retrieval."""
    items = [(ref, text) for _, _, rows in turns.sessions for ref, text in rows]
    qv = cache.get([q["question"].strip()])[0]
    sims = cache.get([t for _, t in items]) @ qv
    return [items[i][0] for i in np.argsort(-sims, kind="stable")]


def first_rank(ranked: Sequence[str], wanted: set[str]) -> int | None:
    return next((i + 1 for i, r in enumerate(ranked) if r in wanted), None)


def measures(ranked: list[str], with_history: list[str], turns: Turns) -> dict[str, float]:
    f, s = first_rank(ranked, turns.fresh), first_rank(ranked, turns.stale)
    e = first_rank(with_history, turns.stale)
    return {
        "fresh_first": float(f is not None and (s is None or f < s)),
        "stale5": float(f is not None and f <= 5 and s is not None and s <= 5),
        "fresh5": float(f is not None and f <= 5),
        "earlier10": float(e is not None and e <= 10),
    }


# -- the whole run -----------------------------------------------------------------------


def load(path: Path, limit: int | None) -> list[dict[str, Any]]:
    if not path.exists():
        raise SystemExit(f"data file not found: {path} (use --data)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        items = [json.loads(line) for line in f if line.strip()]
    items = [q for q in items if not q["question_id"].endswith("_abs")]
    return items[:limit] if limit else items


def summarise(per_q: list[dict[str, Any]], systems: Sequence[str] = SYSTEMS) -> dict[str, Any]:
    """Per part (tune, confirm, all) and system: each measure in percent over its questions."""

    def pct(rows: list[dict[str, Any]], system: str, m: str, group: str) -> dict[str, Any]:
        return share([r["scores"][system][m] for r in rows if r[group]])

    groups = {"fresh_first": "current", "stale5": "current", "fresh5": "current", "earlier10": "earlier"}
    out: dict[str, Any] = {}
    for part in ("tune", "confirm", "all"):
        rows = [r for r in per_q if part == "all" or r["part"] == part]
        out[part] = {s: {m: pct(rows, s, m, g) for m, g in groups.items()} for s in systems}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = parser("knowledge_update", __doc__, data=DEFAULT_DATA / DATA, work_dir=True)
    p.add_argument("--limit", type=int, default=None, help="only the first N scored questions")
    add_arguments(p)
    p.add_argument(
        "--adjudicate",
        metavar="URL",
        default=None,
        help="also run remember() with this OpenAI-compatible endpoint (up to /v1) adjudicating",
    )
    p.add_argument("--model", default="local", help="the model name sent to --adjudicate (default %(default)s)")
    p.add_argument(
        "--replies",
        type=Path,
        default=None,
        help="the adjudication replies, per question (default <out>/knowledge_update_replies.json)",
    )
    p.add_argument(
        "--cache-only",
        action="store_true",
        help="replay --replies with no model (adjudicated system): a missing reply is an error",
    )
    p.add_argument("--claim-min-words", type=int, default=ClaimRules().min_words,
                   help="content words a sentence needs to become a claim (default %(default)s)")  # fmt: skip
    args = p.parse_args(argv)
    rules = ClaimRules(min_words=args.claim_min_words)
    started = time.perf_counter()
    items = load(args.data, args.limit)
    provider, replies_path, replies = adjudication(args)
    systems = (*SYSTEMS, ADJUDICATED) if provider is not None else SYSTEMS
    kind = kind_of(args)
    model = model_embedder(kind)
    cache = vector_cache(kind, model, args.cache_dir)
    all_turns = {q["question_id"]: Turns(q) for q in items}
    texts = [t for ts in all_turns.values() for t in ts.texts()]
    started_split = time.perf_counter()
    said = [s for t in texts for s in claims.of_turn(t, rules)]
    split_seconds = time.perf_counter() - started_split
    cache.ensure([q["question"].strip() for q in items] + texts + said)
    embedder = VectorsEmbedder.of(cache)
    per_q: list[dict[str, Any]] = []
    superseded: dict[str, float] = {s: 0 for s in systems if s != "naive"}
    asked = {"asked": 0.0, "cached": 0.0}
    made = 0.0
    write_seconds: dict[str, float] = {s: 0.0 for s in systems if s != "naive"}
    work = Path(tempfile.mkdtemp(prefix="agentmem-ku-", dir=args.work_dir))
    try:
        for q in progress(items, desc="questions", unit="q"):
            turns = all_turns[q["question_id"]]
            current, earlier = asks(q["question"])
            naive = naive_ranking(q, turns, cache)
            scores = {"naive": measures(naive, naive[:10], turns)}
            ranks: dict[str, Any] = {"naive": first_ranks(naive, naive, turns)}
            for path in systems[1:]:
                ranked, with_history, counts = agentmem_rankings(q, turns, path, embedder, work, rules, provider,
                                                                 replies)  # fmt: skip
                write_seconds[path] += counts["write_seconds"]
                made += counts["claims"] if path == "observe" else 0
                scores[path] = measures(ranked, with_history, turns)
                ranks[path] = first_ranks(ranked, with_history, turns)
                superseded[path] += counts["superseded"]
                asked["asked"] += counts["asked"]
                asked["cached"] += counts["cached"]
            per_q.append({
                "id": q["question_id"], "part": part_of(q["question_id"]),  # no data text in results
                "current": current, "earlier": earlier, "scores": scores, "ranks": ranks,
            })  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if provider is not None and not args.cache_only:  # what was asked so far is kept, even on failure
            replies_path.parent.mkdir(parents=True, exist_ok=True)
            replies_path.write_text(json.dumps(replies, indent=1, sort_keys=True) + "\n")
    results: dict[str, Any] = {
        "command": command_line("knowledge_update", argv),
        "data": str(args.data),
        "questions": len(per_q),
        "history": supports_history(),
        "targets": TARGETS,
        "systems": list(systems),
        "summary": summarise(per_q, systems),
        "superseded_turns": superseded,
        "adjudication": None
        if provider is None
        else {
            "url": None if args.cache_only else provider.base_url,
            "model": provider.model,
            "cache_only": args.cache_only,
            "replies": str(replies_path),
            **asked,
        },
        "claims": {
            "rules": msgspec.to_builtins(rules),
            "turns": len(texts),
            "claims": int(made),
            "split_ms_per_turn": round(1000 * split_seconds / max(1, len(texts)), 3),
            "write_ms_per_turn": {p: round(1000 * s / max(1, len(texts)), 2) for p, s in write_seconds.items()},
        },
        "per_question": per_q,
        "seconds": round(time.perf_counter() - started, 1),
        "embedder": info(kind, model),
        "machine": machine_info(info(kind, model)),
    }
    publish(results, args.out, "knowledge_update", render_markdown, plot)
    return 0


def adjudication(args: Any) -> tuple[ProviderConfig | None, Path, Replies]:
    """The adjudicating provider the options ask for (None: no adjudicated system), where its
    replies are kept, and the replies recorded so far."""
    path = args.replies or args.out / "knowledge_update_replies.json"
    if args.adjudicate is None and not args.cache_only:
        return None, path, {}
    if args.cache_only and not path.exists():
        raise SystemExit(f"--cache-only replays {path}, which does not exist (record it with --adjudicate URL)")
    replies: Replies = json.loads(path.read_text()) if path.exists() else {}
    cfg = ProviderConfig(base_url=args.adjudicate or NO_MODEL_URL, model=args.model, adjudicate=True,
                         cache_only=args.cache_only)  # fmt: skip
    return cfg, path, replies


def first_ranks(ranked: list[str], with_history: list[str], turns: Turns) -> dict[str, int | None]:
    return {
        "fresh": first_rank(ranked, turns.fresh),
        "stale": first_rank(ranked, turns.stale),
        "stale_with_history": first_rank(with_history, turns.stale),
    }


# -- output ------------------------------------------------------------------------------

LABELS = {
    "fresh_first": "fresh-first",
    "stale5": "stale@5 beside fresh",
    "fresh5": "fresh@5",
    "earlier10": "earlier@10 (with history)",
}


def render_markdown(res: dict[str, Any]) -> str:
    lines = [
        f"# Knowledge updates in conversations (LongMemEval knowledge-update, {res['questions']} questions)",
        "",
        "Percent of questions; n = questions in the group. Targets: fresh-first "
        f"{TARGETS['fresh_first']}, stale@5 {TARGETS['stale5']}, earlier@10 {TARGETS['earlier10']}.",
        "",
    ]
    lines += part_tables(res["summary"], LABELS, res.get("systems", SYSTEMS))
    hist = "with" if res["history"] else "without (recall has no history option in this build)"
    adj = res.get("adjudication")
    if adj:
        source = "replayed from the cache, no model" if adj["cache_only"] else f"model {adj['model']} at {adj['url']}"
        lines += [f"adjudicated: remember() with the provider ruling on undecided pairs ({source}); "
                  f"requests to the model {adj['asked']:.0f}, from the cache {adj['cached']:.0f}; turns "
                  f"superseded: {res['superseded_turns'][ADJUDICATED]}.", ""]  # fmt: skip
    gone = res["superseded_turns"]["remember"]
    lines.append(f"earlier@10 asked {hist} history. Turns superseded by remember(): {gone}.")
    c = res.get("claims")
    if c:
        lines += [
            f"observe: {c['claims']} claims from {c['turns']} user turns (rules {c['rules']}), "
            f"{res['superseded_turns']['observe']} of them superseded by a later claim.",
            f"Cost per turn: splitting and choosing sentences {c['split_ms_per_turn']} ms; the whole write "
            "(embedding from the cache, rules, commit) in ms: "
            + ", ".join(f"{p} {v}" for p, v in c["write_ms_per_turn"].items())
            + ".",
        ]
    lines += [
        "One question is 100/n points: with n around a dozen, a difference of one question is noise.",
        "",
        f"{machine_line(res['machine'])}; {res['seconds']} s; {describe(res.get('embedder'))}.",
    ]
    return "\n".join(lines) + "\n"


def plot(res: dict[str, Any], path: Path) -> None:
    bars_by_measure(res["summary"]["all"], LABELS, res.get("systems", SYSTEMS), path, ylabel="percent of questions",
                    title=f"LongMemEval knowledge-update, {res['questions']} questions", ticks_at=1)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
