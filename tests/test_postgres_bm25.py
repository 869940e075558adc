"""BM25 on PostgreSQL (agentmem.postgres.bm25): a word every document has weighs little, and the
per-project statistics stay exact through every kind of write, on several nodes at once."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agentmem import Memory
from agentmem.postgres.schema import SCHEMA_VERSION
from agentmem.records import NewMemory
from fakes import FakeEmbedder

BACKENDS = ("duckdb", "postgres")
TOPICS = ["the weather", "a new bike", "her garden", "the football match", "a long walk", "dinner plans",
          "the school run", "a podcast", "the train delay", "a birthday gift"]  # fmt: skip


def _rows(url: str, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params or []).fetchall()  # type: ignore[arg-type]


def _conversation(mem: Memory) -> dict[str, int]:
    """Turns that each start with the speaker's name (as LoCoMo's do); one of them is the answer."""
    ids = {}
    for n, topic in enumerate(TOPICS * 2):
        text = f"Caroline: I was thinking about {topic} on day {n}"
        ids[f"c{n}"] = mem.remember(text, project="p", kind="event").memory.id
    ids["answer"] = mem.remember("Melanie: my pottery class made a bowl", project="p", kind="event").memory.id
    ids["other"] = mem.remember("Melanie: we went camping in the mountains", project="p", kind="event").memory.id
    return ids


def test_a_word_every_document_has_weighs_less_than_a_rare_one(open_memory: Any, backend: str) -> None:
    """"Caroline pottery": the one turn with "pottery" ranks first on both backends; by term
    frequency alone (ts_rank) every Caroline turn scored as high."""
    mem = open_memory(embedder=FakeEmbedder())
    ids = _conversation(mem)
    hits = _text(mem, "What did Caroline say about pottery?", 5)
    assert hits[0][0] == ids["answer"]
    assert hits[0][1] > 1.5 * hits[1][1]  # a rare word is worth far more than a common one


def test_both_backends_score_alike(tmp_path: Path, database_url: str) -> None:
    """The same documents and query: the same order, and scores within a few percent (Tantivy
    rounds document lengths to a byte). Stopwords count on both: "was", "on" and "the" weigh a
    little in the score ("on day 3" names one turn), but on PostgreSQL they find no document alone."""
    with Memory(tmp_path / "e", embedder=FakeEmbedder()) as e, \
            Memory(tmp_path / "p", embedder=FakeEmbedder(), database_url=database_url) as p:  # fmt: skip
        a, b = _conversation(e), _conversation(p)
        assert [n for n in a] == [n for n in b]
        by_e, by_p = {v: k for k, v in a.items()}, {v: k for k, v in b.items()}
        queries = ("Melanie camping mountains", "Caroline garden 12", "pottery bowl class",
                   "What was Caroline thinking about on day 3?",
                   "When did Melanie go camping in the mountains?")  # fmt: skip
        for query in queries:  # each turn's score on both; ties (turns alike but for a topic) in any order
            he, hp = dict(_text(e, query, 5)), dict(_text(p, query, 5))
            se, sp = {by_e[i]: s for i, s in he.items()}, {by_p[i]: s for i, s in hp.items()}
            top = sorted(se.values(), reverse=True)[: len(sp)]  # PostgreSQL leaves out a turn with only "in", "the"
            assert sorted(sp.values(), reverse=True) == pytest.approx(top, rel=0.05), query
            assert len(sp) == len(se) or query.startswith("When")
            for name in se.keys() & sp.keys():
                assert sp[name] == pytest.approx(se[name], rel=0.05), (query, name)
        assert _text(p, "What was the", 5) == []  # stopwords alone find nothing


def _text(mem: Memory, query: str, k: int) -> list[tuple[int, float]]:
    mem.engine.refresh()  # the embedded BM25 index commits what waits (as a recall does)
    return mem.indexes.search_text(query, k, project="p")


def _stats(url: str, project: str) -> tuple[dict[str, int], tuple[int, int] | None]:
    terms = dict(_rows(url, "SELECT term, docs FROM bm25_terms WHERE project = %s", [project]))
    size = _rows(url, "SELECT docs, tokens FROM bm25_projects WHERE project = %s", [project])
    return terms, (size[0] if size else None)


def test_the_statistics_follow_every_kind_of_write_on_two_nodes(tmp_path: Path, database_url: str) -> None:
    a = Memory(tmp_path / "a", embedder=FakeEmbedder(), database_url=database_url)
    b = Memory(tmp_path / "b", embedder=FakeEmbedder(), database_url=database_url)
    try:
        def write(mem: Memory, n: int) -> None:
            for i in range(12):
                mem.remember(f"node {n} says the port of service {i % 4} is {4000 + i}", project="p",
                             key=f"port{i % 4}")  # fmt: skip
                mem.remember(f"zebra number {n}-{i} crossed the road", project="p" if i % 2 else "q")

        threads = [threading.Thread(target=write, args=(m, n)) for n, m in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        a.observe([NewMemory(content="Dana said the build is green. The cache is warm.", project="p",
                             kind="observation", tier="working", session="s")])  # fmt: skip
        archived = a.sweep(projects=["p"], threshold=0.999, limit=5).archived
        assert archived
        a.restore(a.list_versions(projects=["p"], status="archived")[0][0].id)
        first = a.remember("The quokkabilling service moved to Berlin", project="p").memory
        a.revise(first.id, "The quokkabilling service moved to Paris")
        assert not a.check().store_problems  # includes each project's kept statistics against its documents
        terms, size = _stats(database_url, "p")
        current = a.stats(projects=["p"]).latest_active
        assert size is not None and size[0] == current
        assert "quokkabil" in terms  # stemmed, as the search document's tsvector holds it
        a.delete(reason="governance", lineages=[first.id])
        terms, _ = _stats(database_url, "p")
        assert not [t for t in terms if t.startswith("quokka")]  # an erased text leaves no word behind
        assert not b.check().store_problems
    finally:
        a.close()
        b.close()


def test_a_rebuild_counts_the_statistics_again(tmp_path: Path, database_url: str) -> None:
    with Memory(tmp_path / "a", embedder=FakeEmbedder(), database_url=database_url) as mem:
        _conversation(mem)
        with psycopg.connect(database_url) as conn:
            conn.execute("UPDATE bm25_terms SET docs = docs + 7 WHERE term = 'carolin'")
        assert any("carolin" in p for p in mem.check().store_problems)
        report = mem.rebuild(["bm25"])
        assert report.ok and not report.store_problems


def test_a_database_of_schema_2_gets_its_statistics_and_id_directory(tmp_path: Path, database_url: str) -> None:
    with Memory(tmp_path / "a", embedder=FakeEmbedder(), database_url=database_url) as mem:
        ids = _conversation(mem)
        before = _text(mem, "Caroline pottery", 5)
    with psycopg.connect(database_url) as conn:  # as schema 2 left it
        conn.execute("DROP TABLE bm25_terms, bm25_projects, memory_projects")
        conn.execute("UPDATE agentmem_meta SET value = '2' WHERE name = 'schema_version'")
    with Memory(tmp_path / "b", embedder=FakeEmbedder(), database_url=database_url) as mem:
        assert mem.engine.store.schema_version == SCHEMA_VERSION  # type: ignore[attr-defined]
        assert _text(mem, "Caroline pottery", 5) == before
        assert mem.get(ids["answer"]).content.startswith("Melanie")
        assert not mem.check().store_problems


def test_a_database_of_schema_3_keeps_stopwords_in_its_search_documents(tmp_path: Path, database_url: str) -> None:
    """Schema 3 built search documents with PostgreSQL's `english`, stopwords dropped: opening it
    makes them again as Tantivy reads text, and counts the statistics afresh."""
    from agentmem.postgres.schema import CURRENT, RECOUNT

    with Memory(tmp_path / "a", embedder=FakeEmbedder(), database_url=database_url) as mem:
        _conversation(mem)
        fresh = _text(mem, "What was Caroline thinking about on day 3?", 5)
    with psycopg.connect(database_url) as conn:  # as schema 3 left it
        conn.execute("ALTER TABLE memories DROP COLUMN search")
        conn.execute("ALTER TABLE memories ADD COLUMN search tsvector "
                     "GENERATED ALWAYS AS (to_tsvector('english', coalesce(doc, ''))) STORED")  # fmt: skip
        conn.execute(f"CREATE INDEX memories_search ON memories USING gin (search) WHERE {CURRENT}")
        conn.execute("DROP TEXT SEARCH CONFIGURATION agentmem_english")
        conn.execute("DROP TEXT SEARCH DICTIONARY agentmem_stem")
        for sql in RECOUNT:
            conn.execute(sql)
        conn.execute("UPDATE agentmem_meta SET value = '3' WHERE name = 'schema_version'")
    assert "was" not in _stats(database_url, "p")[0]
    with Memory(tmp_path / "b", embedder=FakeEmbedder(), database_url=database_url) as mem:
        assert mem.engine.store.schema_version == SCHEMA_VERSION  # type: ignore[attr-defined]
        assert "was" in _stats(database_url, "p")[0]
        assert _text(mem, "What was Caroline thinking about on day 3?", 5) == fresh
        assert not mem.check().store_problems
