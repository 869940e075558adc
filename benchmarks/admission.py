"""Admission on LoCoMo: every conversation through the conversation path, and how its evidence fares.

Run from the repository root:

    python -m benchmarks.admission            # the real model and indexes (a few minutes)
    python -m benchmarks.admission --fake     # a hashing embedder: the same counts, much faster

Each LoCoMo sample is one project; each of its sessions one conversation scan, with every turn
a user message (`name` the speaker, `id` the dia_id, `time` the session's date). Reported: how
many candidates were admitted and rejected (by reason), what remember() did with the admitted
ones, and the share of questions whose evidence turns produced at least one admitted memory
(overall and by LoCoMo category). Results: admission.json and admission.md in --out (counts
only: no LoCoMo text is written; `--examples` prints a few turns of each outcome).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentmem import Memory
from benchmarks.harness.cli import progress
from benchmarks.harness.datasets import LOCOMO
from benchmarks.harness.paths import DEFAULT_DATA, RESULTS
from benchmarks.harness.report import write_results
from benchmarks.harness.tables import table

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def _when(text: str | None) -> str | None:
    if not text:
        return None
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC).isoformat()
    except ValueError:
        return None


def sessions(sample: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(session id, messages) of one LoCoMo sample, in order."""
    conv = sample["conversation"]
    found = []
    for key in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])):
        when = _when(conv.get(f"{key}_date_time"))
        messages = [
            {"role": "user", "name": t["speaker"], "content": t.get("text", ""), "id": t["dia_id"], "time": when}
            for t in conv[key]
        ]
        found.append((f"{sample['sample_id']}/{key}", messages))
    return found


def run(data: Path, fake: bool, dry_run: bool) -> dict[str, Any]:
    samples = json.loads((data / LOCOMO).read_text())
    if fake:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        from fakes import FakeEmbedder

        embedder: Any = FakeEmbedder()
    else:
        from indexes.embed import SentenceTransformerEmbedder

        embedder = SentenceTransformerEmbedder()
    rejected: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    claims: Counter[str] = Counter()
    admitted = turns = scans = claims_made = 0
    kept: Counter[str] = Counter()
    questions = covered = 0
    by_cat: dict[str, list[int]] = {}
    evidence_turns = evidence_admitted = 0
    examples: dict[str, list[str]] = {}
    evidence_verdicts: Counter[str] = Counter()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, Memory(tmp, embedder=embedder) as mem:
        for sample in progress(samples, desc="conversations"):
            project = str(sample["sample_id"])
            admitted_turns: set[str] = set()
            turn_reasons: dict[str, Counter[str]] = {}
            for session, messages in sessions(sample):
                r = mem.ingest_conversation(messages, project=project, session=session, dry_run=dry_run)
                scans += 1
                turns += r.units
                admitted += r.admitted
                rejected.update(r.rejected_by_reason)
                skipped.update(r.skipped)
                outcomes.update(r.outcomes)
                kept.update(r.turns)
                claims_made += r.claims
                for item in r.admitted_items:
                    admitted_turns.add(item.ref.rsplit("#", 1)[1])
                    claims[item.claim or "?"] += 1
                    examples.setdefault(item.claim or "?", []).append(item.text)
                for item in r.rejected_items:
                    turn_reasons.setdefault(item.ref.rsplit("#", 1)[1], Counter())[item.reason or "?"] += 1
                    examples.setdefault(f"rejected:{item.reason}", []).append(item.text)
            for qa in sample["qa"]:
                ids = {e for ev in qa.get("evidence", []) for e in re.split(r"[;,\s]+", str(ev)) if e}
                hit = bool(ids & admitted_turns)
                questions += 1
                covered += hit
                cat = CATEGORIES.get(int(qa.get("category", 0)), str(qa.get("category")))
                by_cat.setdefault(cat, [0, 0])
                by_cat[cat][0] += 1
                by_cat[cat][1] += hit
                evidence_turns += len(ids)
                evidence_admitted += len(ids & admitted_turns)
                for e in ids:
                    if e in admitted_turns:
                        evidence_verdicts["admitted"] += 1
                    elif e in turn_reasons:
                        evidence_verdicts[turn_reasons[e].most_common(1)[0][0]] += 1
                    else:
                        evidence_verdicts["no candidate"] += 1
        elapsed = time.perf_counter() - started
    n_rejected = sum(rejected.values())
    return {
        "command": "python -m benchmarks.admission" + (" --fake" if fake else "") + (" --dry-run" if dry_run else ""),
        "argv": shlex.join(sys.argv),
        "embedder": embedder.name,
        "dry_run": dry_run,
        "conversations": len(samples),
        "sessions": scans,
        "messages": turns,
        "candidates": admitted + n_rejected,
        "admitted": admitted,
        "rejected": n_rejected,
        "rejected_by_reason": dict(rejected.most_common()),
        "admitted_by_claim": dict(claims.most_common()),
        "skipped": dict(skipped),
        "outcomes": dict(outcomes),
        "turns_kept": dict(kept),  # each eligible message kept whole, as observe() keeps it
        "claims": claims_made,  # sentences of those turns that became claims
        "questions": questions,
        "questions_with_admitted_evidence": covered,
        "share": round(covered / questions, 4) if questions else 0.0,
        "by_category": {
            k: {"questions": v[0], "covered": v[1], "share": round(v[1] / v[0], 4)} for k, v in sorted(by_cat.items())
        },  # fmt: skip
        "evidence_turns": evidence_turns,
        "evidence_turns_admitted": evidence_admitted,
        "evidence_turn_verdicts": dict(evidence_verdicts.most_common()),
        "seconds": round(elapsed, 1),
        "examples": {k: v[:5] for k, v in sorted(examples.items())},
    }


def markdown(r: dict[str, Any]) -> str:
    lines = [
        "# Admission on LoCoMo",
        "",
        f"`{r['command']}` ({r['embedder']}, {r['seconds']} s): {r['conversations']} conversations, "
        f"{r['sessions']} sessions, {r['messages']} messages.",
        "",
        *table(["candidates", "admitted", "rejected", "questions with an admitted evidence turn"], [[
            f"{r['candidates']:,}", f"{r['admitted']:,}", f"{r['rejected']:,}",
            f"{r['questions_with_admitted_evidence']} / {r['questions']} ({r['share']:.1%})",
        ]], "rrrr"),  # fmt: skip
        "",
        "Rejected by reason: " + ", ".join(f"{k} {v:,}" for k, v in r["rejected_by_reason"].items()) + ".",
        "",
        "Admitted by claim: " + ", ".join(f"{k} {v:,}" for k, v in r["admitted_by_claim"].items()) + ".",
        "",
        "remember(): " + ", ".join(f"{k} {v:,}" for k, v in r["outcomes"].items()) + ".",
        "",
        "Turns kept whole: "
        + (", ".join(f"{k} {v:,}" for k, v in r.get("turns_kept", {}).items()) or "none")
        + f"; claims from their sentences: {r.get('claims', 0):,}.",
        "",
        *table(["category", "questions", "with admitted evidence", "share"],
               ([k, v["questions"], v["covered"], f"{v['share']:.1%}"] for k, v in r["by_category"].items()), "lrrr"),
    ]  # fmt: skip
    lines += ["", f"Evidence turns admitted: {r['evidence_turns_admitted']} / {r['evidence_turns']}; what became of "
              "each (admitted, else the commonest reason among its candidates): "
              + ", ".join(f"{k} {v:,}" for k, v in r["evidence_turn_verdicts"].items()) + ".", ""]  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--fake", action="store_true", help="a hashing embedder instead of the real model")
    p.add_argument("--dry-run", action="store_true", help="count only; remember nothing")
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--examples", action="store_true", help="print a few admitted and rejected turns (stdout only)")
    args = p.parse_args()
    result = run(args.data, args.fake, args.dry_run)
    examples = result.pop("examples")  # LoCoMo text stays out of the repository
    stem = "admission" if not (args.fake or args.dry_run) else "admission_quick"
    write_results(args.out, stem, result, markdown(result))
    print(markdown(result))
    if args.examples:
        for k, texts in examples.items():
            print(f"- {k}: " + " | ".join(t[:120] for t in texts))


if __name__ == "__main__":
    main()
