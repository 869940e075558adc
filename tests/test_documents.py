"""The text analysis behind BM25's documents has a version (`agentmem.documents.ANALYSIS`): a
change to the indexed text without a new version fails here, and an index built by another
version is rebuilt from the store when it is opened."""

from __future__ import annotations

import hashlib
from pathlib import Path

from conftest import FakeEmbedder

from agentmem import Memory
from agentmem.documents import ANALYSIS, doc_text
from indexes.meta import read_meta, write_meta

# What BM25 indexes for a version: title, content and the words carried from what it superseded.
SAMPLES = [
    (None, "We deploy the shop API on Fly.io", None),
    ("Deploys", "We're on Render now for the shop API", ["We deploy the shop API on Fly.io"]),
    (None, "Backups moved to 4am", ["The nightly backup runs at 2am"]),
    (None, "we're on 4000 now", ["The dev server port is 3000", "The dev server port is 3500"]),
    (None, "Priya changed jobs, she's now a product manager at Stripe.", ["Priya works as a data analyst at Shopify."]),
    (None, "Café au lait, not espresso", ["Mia drinks espresso every morning."]),
]
# ANALYSIS -> the SHA-256 of the samples' text: record the new one when you bump ANALYSIS
TEXT_OF = {"1": "abe573a2b2b519b7f9742681af875238bc027b868b9e77c1f6c37ac9824854a1"}


def analysed() -> str:
    return hashlib.sha256("\x00".join(doc_text(t, c, h) for t, c, h in SAMPLES).encode()).hexdigest()


def test_the_indexed_text_changes_only_with_a_new_analysis_version() -> None:
    assert TEXT_OF.get(ANALYSIS) == analysed(), (
        "the text BM25 indexes has changed: bump agentmem.documents.ANALYSIS (every BM25 index is then"
        f" rebuilt from the store) and record {analysed()} for it in TEXT_OF"
    )


def test_a_bm25_index_of_another_analysis_is_rebuilt_from_the_store(data_dir: Path, embedder: FakeEmbedder) -> None:
    with Memory(data_dir, embedder=embedder) as mem:
        a = mem.remember("The nightly backup runs at 2am", project="p").memory.id
        b = mem.remember("Our team uses Jira for tickets", project="p").memory.id
    meta_path = data_dir / "index" / "bm25" / "bm25.meta.json"
    meta = read_meta(meta_path)
    assert meta is not None and meta["analysis"] == ANALYSIS
    write_meta(meta_path, {**meta, "analysis": "0"})  # an index from an older release
    with Memory(data_dir, embedder=embedder) as mem:
        assert mem.engine.indexes.rebuilt == ["bm25"]
        assert read_meta(meta_path)["analysis"] == ANALYSIS  # type: ignore[index]
        assert [i for i, _ in mem.engine.indexes.search_text("jira tickets", 5, project="p")] == [b]
        assert [i for i, _ in mem.engine.indexes.search_text("nightly backup", 5, project="p")] == [a]
        rebuilt, _ = mem.audit(actions=["rebuild"])
        assert rebuilt and "another text analysis" in (rebuilt[0].reason or "")
    with Memory(data_dir, embedder=embedder) as mem:
        assert mem.engine.indexes.rebuilt == []  # once
