"""The conversation data sets (LongMemEval-S, LoCoMo) and the corpus of sentence-sized texts built from them.

The files are read in place from the data folder (benchmarks.harness.paths.DEFAULT_DATA or --data).
"""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

LONGMEMEVAL = "longmemeval_s_dev50.jsonl.gz"
LONGMEMEVAL_B = "longmemeval_s_dev150b.jsonl.gz"  # 150 more questions, none in dev50
LOCOMO = "locomo10.json"

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def chunk_text(text: str, max_chars: int = 300) -> list[str]:
    """Split a chat turn into sentence-sized pieces: whole sentences packed up to `max_chars`.

    A sentence longer than `max_chars` is cut at a space.
    """
    out: list[str] = []
    cur = ""
    for piece in _SENTENCE.split(text):
        s = " ".join(piece.split())
        if not s:
            continue
        while len(s) > max_chars:
            cut = s.rfind(" ", 0, max_chars)
            if cut < max_chars // 2:
                cut = max_chars
            if cur:
                out.append(cur)
                cur = ""
            out.append(s[:cut].strip())
            s = s[cut:].strip()
        if not s:
            continue
        if cur and len(cur) + 1 + len(s) > max_chars:
            out.append(cur)
            cur = s
        else:
            cur = f"{cur} {s}".strip()
    if cur:
        out.append(cur)
    return out


def _longmemeval(data_dir: Path) -> tuple[list[str], list[str]]:
    turns: list[str] = []
    questions: list[str] = []
    with gzip.open(data_dir / LONGMEMEVAL, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            item = json.loads(line)
            questions.append(item["question"])
            for session in item["haystack_sessions"]:
                turns.extend(t["content"] for t in session if t.get("content"))
    return turns, questions


def _locomo(data_dir: Path) -> tuple[list[str], list[str]]:
    turns: list[str] = []
    questions: list[str] = []
    with open(data_dir / LOCOMO, encoding="utf-8") as f:
        conversations = json.load(f)
    for conv in conversations:
        c = conv["conversation"]
        sessions = sorted(
            (k for k, v in c.items() if re.fullmatch(r"session_\d+", k) and isinstance(v, list)),
            key=lambda k: int(k.split("_")[1]),
        )
        for key in sessions:
            turns.extend(t["text"] for t in c[key] if t.get("text"))
        questions.extend(q["question"] for q in conv.get("qa", []) if q.get("question"))
    return turns, questions


class Corpus:
    """Distinct sentence-sized texts and distinct questions, each in a seeded random order."""

    def __init__(self, texts: list[str], queries: list[str], sources: dict[str, int]) -> None:
        self.texts = texts
        self.queries = queries
        self.sources = sources

    @classmethod
    def load(cls, data_dir: Path, *, seed: int = 0, max_chars: int = 300, min_chars: int = 20) -> Corpus:
        missing = [n for n in (LONGMEMEVAL, LOCOMO) if not (data_dir / n).exists()]
        if missing:
            raise SystemExit(f"data files not found in {data_dir}: {', '.join(missing)} (use --data)")
        lme_turns, lme_q = _longmemeval(data_dir)
        loc_turns, loc_q = _locomo(data_dir)
        seen: dict[str, None] = {}
        for turn in lme_turns + loc_turns:
            for piece in chunk_text(turn, max_chars):
                if len(piece) >= min_chars:
                    seen.setdefault(piece, None)
        texts = list(seen)
        queries = list(dict.fromkeys(q.strip() for q in lme_q + loc_q if q.strip()))
        rng = random.Random(seed)
        rng.shuffle(texts)
        rng.shuffle(queries)
        sources = {
            "longmemeval_turns": len(lme_turns),
            "locomo_turns": len(loc_turns),
            "distinct_texts": len(texts),
            "longmemeval_questions": len(set(lme_q)),
            "locomo_questions": len(set(loc_q)),
            "distinct_queries": len(queries),
        }
        return cls(texts, queries, sources)
