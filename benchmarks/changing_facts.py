"""Changing facts: does recall answer with what is true *now*, and does it keep facts that never changed?

    python -m benchmarks.changing_facts            # about a minute with the real model

The scenario is data/changing_facts.json (benchmarks/factgen.py, seeded): a software
project's history in dated sessions of plain-text claims. Some facts change ("the dev
server is on port 4000 now"), some never do, and some are distractors that sound like a
changing fact but are another fact (the staging database vs the production one).

Each claim goes through the real Memory.remember() (real MiniLM model, DuckDB, Tantivy,
hnswlib), session by session, with a clock set to the session's date; no key and no
triple, as a user would type it. Then every fact's question goes to Memory.recall().

Rows, all in one run, the same claims and the same embeddings:

  agentmem            plain text claims, the supersession rules decide
  agentmem + keys     the same claims each given its fact id as `key` (the explicit path)
  append-only         the naive baseline: every claim kept, top-k by cosine similarity of
                      the same embeddings, no supersession

Measures (per question; a hit is mapped back to the claim it came from):

  top-1 correct       the first hit states the fact's current value
  current@5, clean    the current value is in the top 5 and no dead value of the fact ranks above it
  dead@k              questions with a dead value of the asked fact in the top k (k = 1, 5)
  dead hits@5         hits in the top 5 of all questions that state any fact's dead value

Results: a table on stdout; changing_facts.json / .md / .png in --out.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from agentmem import Config, Memory
from benchmarks.embedding import add_arguments, info, kind_of, model_embedder
from benchmarks.factgen import OUT as DATA_FILE
from benchmarks.factgen import generate
from benchmarks.harness.cli import parser, progress, say
from benchmarks.harness.clock import Clock
from benchmarks.harness.machine import machine_info
from benchmarks.harness.report import pyplot, save_figure, write_results
from benchmarks.harness.tables import table

PROJECT = "shop"
CATEGORIES = ("changed", "stable", "distractor")


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    fresh = generate(data["seed"])
    if fresh != data:
        raise SystemExit(f"{path} differs from benchmarks.factgen.generate({data['seed']}): regenerate it")
    return data


def claim_index(data: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Claim text -> (fact id, value); every text belongs to one fact."""
    out: dict[str, tuple[str, str]] = {}
    for s in data["sessions"]:
        for c in s["claims"]:
            prev = out.setdefault(c["text"], (c["fact"], c["value"]))
            assert prev == (c["fact"], c["value"]), c["text"]
    return out


def run_agentmem(
    data: dict[str, Any], embedder: Any, work: Path, *, keys: bool, k: int, config: Config
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Ingest through Memory.remember(), then ask every question; returns ranked texts per question."""
    start = datetime.fromisoformat(data["sessions"][0]["date"])
    clock = Clock(start)
    texts = claim_index(data)
    outcomes: Counter[str] = Counter()
    events: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    with Memory(work, embedder=embedder, clock=clock, config=config) as mem:
        for s in progress(data["sessions"], desc="sessions" + (" (keys)" if keys else ""), unit="session"):
            base = datetime.fromisoformat(s["date"])
            for n, c in enumerate(s["claims"]):
                clock.now = base + timedelta(minutes=2 * n)
                r = mem.remember(c["text"], project=PROJECT, session=f"s{s['index']}", key=c["fact"] if keys else None)
                outcomes[r.outcome] += 1
                if r.outcome == "superseded":
                    old = mem.get(r.superseded_id) if r.superseded_id is not None else None
                    old_fact = texts[old.content] if old is not None else None
                    ok = old_fact is not None and old_fact[0] == c["fact"]
                    events.append(
                        {"session": s["index"], "new": c["text"], "old": old.content if old else None,
                         "reason": r.reason, "similarity": r.similarity, "same_fact": ok}
                    )  # fmt: skip
        ingest_s = time.perf_counter() - t0
        end = datetime.fromisoformat(data["sessions"][-1]["date"]) + timedelta(days=1)
        clock.now = end
        ranked: dict[str, list[str]] = {}
        t1 = time.perf_counter()
        for f in data["facts"]:
            for q in f["questions"]:
                ranked[q] = [h.memory.content for h in mem.recall(q, project=PROJECT, k=k)]
        recall_s = time.perf_counter() - t1
        stats = mem.stats()
    info = {
        "outcomes": dict(outcomes),
        "supersessions_of_another_fact": [e for e in events if not e["same_fact"]],
        "supersessions_same_fact": sum(e["same_fact"] for e in events),
        "ingest_seconds": round(ingest_s, 2),
        "recall_seconds": round(recall_s, 2),
        "latest_active": stats.latest_active,
        "versions": stats.versions,
    }
    return ranked, info


def run_baseline(data: dict[str, Any], embed: Callable[[list[str]], np.ndarray], k: int) -> dict[str, list[str]]:
    """Append-only: every claim kept as its own chunk; top-k cosine of the question's embedding."""
    chunks = [c["text"] for s in data["sessions"] for c in s["claims"]]
    vecs = np.asarray(embed(chunks), dtype=np.float32)
    questions = [q for f in data["facts"] for q in f["questions"]]
    qv = np.asarray(embed(questions), dtype=np.float32)
    ranked = {}
    for q, v in zip(questions, qv, strict=True):
        sims = vecs @ v
        order = sorted(range(len(chunks)), key=lambda i: (-float(sims[i]), -i))[:k]  # ties: the newer first
        ranked[q] = [chunks[i] for i in order]
    return ranked


def score(data: dict[str, Any], ranked: dict[str, list[str]], k: int) -> dict[str, Any]:
    texts = claim_index(data)
    current = {f["id"]: f["current"] for f in data["facts"]}
    rows: dict[str, dict[str, Any]] = {}
    failures = []
    dead_hits_total = 0
    for cat in CATEGORIES:
        n = top1 = clean = dead1 = deadk = 0
        for f in (f for f in data["facts"] if f["category"] == cat):
            for q in f["questions"]:
                n += 1
                hits = [texts.get(t, ("?", "?")) for t in ranked[q][:k]]
                dead_hits_total += sum(1 for fid, v in hits if fid in current and v != current[fid])
                mine = [(i, v) for i, (fid, v) in enumerate(hits) if fid == f["id"]]
                first_cur = next((i for i, v in mine if v == f["current"]), None)
                first_dead = next((i for i, v in mine if v != f["current"]), None)
                ok1 = bool(hits) and hits[0] == (f["id"], f["current"])
                top1 += ok1
                clean += first_cur is not None and (first_dead is None or first_cur < first_dead)
                dead1 += first_dead == 0
                deadk += first_dead is not None
                if not ok1 or first_dead is not None:
                    failures.append({"fact": f["id"], "question": q, "current": f["current"], "top": ranked[q][:3]})
        rows[cat] = {
            "questions": n,
            "top1_correct": top1,
            "top1_accuracy": round(top1 / n, 4) if n else None,
            f"current_at_{k}_clean": clean,
            f"current_at_{k}_clean_rate": round(clean / n, 4) if n else None,
            "dead_at_1": dead1,
            f"dead_at_{k}": deadk,
        }
    return {"by_category": rows, f"dead_hits_at_{k}_all_questions": dead_hits_total, "failures": failures}


def markdown(results: dict[str, Any]) -> str:
    k = results["k"]
    rows = []
    for name, r in results["systems"].items():
        c = r["score"]["by_category"]
        dead1 = sum(x["dead_at_1"] for x in c.values())
        deadk = sum(x[f"dead_at_{k}"] for x in c.values())

        def pct(cat: str, key: str, c: dict[str, Any] = c) -> str:
            x = c[cat]
            val = x[key] if isinstance(x[key], int) else 0
            return f"{100 * val / x['questions']:.1f}% ({val}/{x['questions']})"

        rows.append([name, pct("changed", "top1_correct"), pct("changed", f"current_at_{k}_clean"),
                     pct("stable", "top1_correct"), pct("distractor", "top1_correct"), dead1, deadk,
                     r["score"][f"dead_hits_at_{k}_all_questions"]])  # fmt: skip
    cols = ["system", "changed: top-1", "changed: current@5 clean", "never changed: top-1", "distractors: top-1",
            "dead@1", "dead@5", "dead hits in top 5"]  # fmt: skip
    return "\n".join(table(cols, rows))


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    k = results["k"]
    names = list(results["systems"])
    metrics = [
        ("changed top-1", lambda c: c["changed"]["top1_accuracy"]),
        ("never changed top-1", lambda c: c["stable"]["top1_accuracy"]),
        ("distractors top-1", lambda c: c["distractor"]["top1_accuracy"]),
        (
            f"questions with a dead value in top {k}",
            lambda c: sum(x[f"dead_at_{k}"] for x in c.values()) / sum(x["questions"] for x in c.values()),
        ),
    ]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        c = results["systems"][name]["score"]["by_category"]
        vals = [fn(c) for _, fn in metrics]
        xs = [j + i * width for j in range(len(metrics))]
        bars = ax.bar(xs, vals, width, label=name)
        ax.bar_label(bars, labels=[f"{v:.0%}" for v in vals], fontsize=7)
    ax.set_xticks([j + width * (len(names) - 1) / 2 for j in range(len(metrics))], [m for m, _ in metrics])
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("share of questions")
    ax.set_title(f"Changing facts ({results['counts']['claims']} claims, {results['counts']['sessions']} sessions)")
    ax.legend()
    save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser("changing_facts", __doc__)
    p.add_argument("--data-file", type=Path, default=DATA_FILE)
    p.add_argument("-k", type=int, default=5)
    p.add_argument("--no-keys", action="store_true", help="skip the row where every claim carries its fact id as key")
    add_arguments(p, cache_dir=False)
    args = p.parse_args(argv)
    kind = kind_of(args)

    data = load(args.data_file)
    embedder = model_embedder(kind, cache_size=1024)  # live, with the service's query cache
    t0 = time.perf_counter()
    embedder.embed(["warm up"])
    load_s = time.perf_counter() - t0
    config = Config()
    systems: dict[str, Any] = {}
    started = time.perf_counter()
    variants = [("agentmem", False)] + ([] if args.no_keys else [("agentmem + keys", True)])
    for name, keys in variants:
        work = Path(tempfile.mkdtemp(prefix="changing-facts-"))
        try:
            say(f"{name}: ingesting {data['counts']['claims']} claims")
            ranked, run = run_agentmem(data, embedder, work / "data", keys=keys, k=args.k, config=config)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        systems[name] = {"score": score(data, ranked, args.k), **run}
    t1 = time.perf_counter()
    ranked = run_baseline(data, embedder.embed, args.k)
    systems["append-only (cosine top-k)"] = {
        "score": score(data, ranked, args.k),
        "seconds": round(time.perf_counter() - t1, 2),
    }
    results = {
        "benchmark": "changing_facts",
        "data_file": str(args.data_file.relative_to(Path(__file__).resolve().parent.parent))
        if args.data_file.is_relative_to(Path(__file__).resolve().parent.parent)
        else str(args.data_file),
        "seed": data["seed"],
        "counts": data["counts"],
        "k": args.k,
        "thresholds": {f: getattr(config.thresholds, f) for f in config.thresholds.__struct_fields__},
        "model_load_seconds": round(load_s, 2),
        "total_seconds": round(time.perf_counter() - started, 2),
        "definitions": {
            "top1_correct": "the first hit is a claim stating the fact's current value",
            f"current_at_{args.k}_clean": f"a current-value claim is in the top {args.k} and no dead-value claim "
            "of the same fact ranks above it",
            "dead_at_1": "the first hit states a dead value of the asked fact",
            f"dead_at_{args.k}": f"a dead value of the asked fact is anywhere in the top {args.k}",
            f"dead_hits_at_{args.k}_all_questions": f"hits in the top {args.k}, over all questions, stating a value "
            "that is no longer current for its own fact",
        },
        "systems": systems,
        "embedder": info(kind, embedder),
        "machine": machine_info(info(kind, embedder)),
    }
    table = markdown(results)
    c = data["counts"]
    header = (
        f"# Changing facts\n\n{c['claims']} claims in {c['sessions']} sessions over {c['days']} days "
        f"({c['changes']} changes; facts: {c['facts']}), seed {data['seed']}, k = {args.k}. "
        f"Command: `python -m benchmarks.changing_facts`. Total {results['total_seconds']} s "
        f"(model load {results['model_load_seconds']} s).\n\n"
    )
    notes = []
    for name, r in systems.items():
        if "supersessions_of_another_fact" in r:
            notes.append(
                f"- {name}: outcomes {r['outcomes']}; supersessions within the same fact "
                f"{r['supersessions_same_fact']}, of another fact (false kills) "
                f"{len(r['supersessions_of_another_fact'])}; ingest {r['ingest_seconds']} s, "
                f"{len(r['score']['failures'])} questions with a miss or a dead hit."
            )
    write_results(args.out, "changing_facts", results, header + table + "\n\n" + "\n".join(notes) + "\n")
    plot(results, args.out / "changing_facts.png")
    print(table)
    print("\n".join(notes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
