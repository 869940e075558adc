"""A Tantivy BM25 index over document text, with exact-match filter fields."""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import tantivy

from indexes.docs import FILTER_FIELDS, Doc, IndexCorrupt, IndexFailure
from indexes.meta import read_meta, write_meta

SCHEMA_VERSION = 1
_WORD = re.compile(r"\w+", re.UNICODE)


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    # i64, not u64: tantivy-py 0.27 silently deletes nothing by term on a u64 field.
    sb.add_integer_field("id", stored=True, indexed=True, fast=True)
    sb.add_text_field("text", stored=False, tokenizer_name="en_stem")
    for name in FILTER_FIELDS:
        sb.add_text_field(name, stored=False, tokenizer_name="raw")
    return sb.build()


def query_words(text: str) -> str:
    """The query reduced to plain words, so that no user text is read as query syntax."""
    return " ".join(w.lower() for w in _WORD.findall(text))


class BM25Index:
    """BM25 over `Doc.text`; ids are the documents' integer ids.

    >>> ix = BM25Index.create(path)          # doctest: +SKIP
    >>> ix.apply([Doc(1, "we use postgres")], [], seq=1)
    >>> ix.search("postgres", k=5)
    [(1, 0.28...)]
    """

    def __init__(self, path: Path, *, analysis: str = "", _fresh: bool = False) -> None:
        """`analysis` names the text analysis that made the documents' text: an index built by
        another one is refused (IndexCorrupt), so its owner rebuilds it from the store."""
        self.path = path
        self.analysis = analysis
        self._meta_path = path / "bm25.meta.json"
        self._lock = threading.Lock()
        meta = read_meta(self._meta_path)
        if not _fresh and (meta is None or meta.get("schema_version") != SCHEMA_VERSION):
            raise IndexCorrupt(f"BM25 index at {path} is missing or from another schema")
        if not _fresh and meta is not None and meta.get("analysis", "") != analysis:
            built = meta.get("analysis", "")
            raise IndexCorrupt(f"BM25 index at {path} holds text of analysis {built!r}, not {analysis!r}")
        try:
            self._index = tantivy.Index(_schema(), path=str(path / "tantivy"), reuse=True)
            self._writer: tantivy.IndexWriter | None = self._index.writer(heap_size=50_000_000, num_threads=1)
            self._index.reload()
            n = self._index.searcher().num_docs
        except Exception as exc:  # tantivy raises ValueError/OSError/RuntimeError on damage
            raise IndexCorrupt(f"BM25 index at {path} cannot be opened: {exc}") from exc
        self.applied_seq = int(meta["applied_seq"]) if meta else 0  # committed
        self.staged_seq = self.applied_seq  # in the writer, committed or not
        self.staged = 0  # changes waiting for a commit
        self.waiting_ids: list[int] = []  # ids they upsert: not found by `search` until the commit
        # Bumped to odd before a commit and back to even after the reload: a searcher taken while it
        # stays even and unchanged shows that generation's documents (see `_only_project`).
        self._generation = 0
        self._sole: dict[str, tuple[int, bool | None]] = {}  # project -> (generation, holds every doc)
        if meta is not None and meta.get("count") != n:
            self.close()
            raise IndexCorrupt(f"BM25 index at {path} holds {n} documents, its meta says {meta.get('count')}")

    @classmethod
    def create(cls, path: Path, analysis: str = "") -> BM25Index:
        """An empty index at `path` for text of `analysis`, replacing whatever was there."""
        shutil.rmtree(path, ignore_errors=True)
        (path / "tantivy").mkdir(parents=True)
        ix = cls(path, analysis=analysis, _fresh=True)
        ix._write_meta()
        return ix

    def _write_meta(self) -> None:
        write_meta(
            self._meta_path,
            {
                "schema_version": SCHEMA_VERSION,
                "analysis": self.analysis,
                "applied_seq": self.applied_seq,
                "count": self.count(),
            },  # fmt: skip
        )

    def apply(self, upserts: Sequence[Doc], deletes: Iterable[int], seq: int, *, commit: bool = True) -> None:
        """Replace `upserts` and remove `deletes` up to `seq`; with `commit=False` they wait in the
        writer (searches do not see them yet) until `commit()`, so many changes share one commit.

        A failure drops whatever was waiting: `staged_seq` falls back to `applied_seq`, and the
        caller replays the outbox from there.
        """
        with self._lock:
            writer = self._writer
            if writer is None:
                raise IndexFailure("BM25 index is closed")
            try:
                for doc_id in [d.id for d in upserts] + list(deletes):
                    writer.delete_documents_by_term("id", doc_id)
                for d in upserts:
                    writer.add_document(
                        tantivy.Document(
                            id=d.id, text=d.text, project=d.project, agent=d.agent, kind=d.kind, tier=d.tier
                        )
                    )
            except Exception as exc:
                self._drop_staged(writer)
                raise IndexFailure(f"BM25 write failed: {exc}") from exc
            self.staged_seq = max(self.staged_seq, seq)
            self.staged += 1
            self.waiting_ids.extend(d.id for d in upserts)
            if commit:
                self._commit(writer)

    def commit(self) -> bool:
        """Make what waits in the writer searchable and durable; False if nothing was waiting."""
        with self._lock:
            if not self.staged:
                return False
            writer = self._writer
            if writer is None:
                raise IndexFailure("BM25 index is closed")
            self._commit(writer)
            return True

    def _commit(self, writer: tantivy.IndexWriter) -> None:
        self._generation += 1
        try:
            writer.commit()
            self._index.reload()
        except Exception as exc:
            self._drop_staged(writer)
            raise IndexFailure(f"BM25 write failed: {exc}") from exc
        finally:
            self._generation += 1
        self.applied_seq = self.staged_seq
        self.staged = 0
        self.waiting_ids = []
        try:
            self._write_meta()
        except OSError as exc:
            raise IndexFailure(f"cannot record the BM25 index state: {exc}") from exc

    def _drop_staged(self, writer: tantivy.IndexWriter) -> None:
        try:
            writer.rollback()
        except Exception:  # the writer is unusable either way; the outbox still has every change
            pass
        self.staged_seq = self.applied_seq
        self.staged = 0
        self.waiting_ids = []

    def search(
        self,
        text: str,
        k: int,
        *,
        project: str | None = None,
        agents: Sequence[str] = (),
        kinds: Sequence[str] = (),
        tiers: Sequence[str] = (),
    ) -> list[tuple[int, float]]:
        """Top `k` (id, BM25 score) for `text`, restricted by the filter fields.

        The filters add nothing to the score (the text's BM25 alone ranks), and a project clause
        is left out when every document is in that project: a bare text query lets Tantivy skip
        whole blocks of postings that cannot reach the top k, and costs about half as much."""
        words = query_words(text)
        if not words or k <= 0:
            return []
        generation = self._generation
        searcher = self._index.searcher()
        if generation != self._generation or generation % 2:
            generation = -1  # a commit ran meanwhile: decide from this searcher alone
        schema = self._index.schema
        filters: list[tantivy.Query] = []
        if project is not None:
            sole = self._only_project(searcher, project, generation)
            if sole is None:
                return []
            if not sole:
                filters.append(tantivy.Query.term_query(schema, "project", project))
        for field, values in (("agent", agents), ("kind", kinds), ("tier", tiers)):
            if values:
                filters.append(tantivy.Query.term_set_query(schema, field, list(values)))
        query, _errors = self._index.parse_query_lenient(words, ["text"])
        if filters:
            clauses = [(tantivy.Occur.Must, tantivy.Query.const_score_query(f, 0.0)) for f in filters]
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, query), *clauses])
        result = searcher.search(query, k, count=False)
        if not result.hits:
            return []
        ids = searcher.fast_field_values("id", [addr for _score, addr in result.hits])
        return [(int(i), float(score)) for i, (score, _addr) in zip(ids, result.hits, strict=True)]  # type: ignore[arg-type]

    def _only_project(self, searcher: tantivy.Searcher, project: str, generation: int) -> bool | None:
        """True if every document of `searcher` is in `project`, False if some are not, None if
        none is; remembered for the generation (-1: not remembered)."""
        seen = self._sole.get(project)
        if seen is not None and seen[0] == generation >= 0:
            return seen[1]
        term = tantivy.Query.term_query(self._index.schema, "project", project)
        count = searcher.search(term, 1, count=True).count or 0  # type: ignore[attr-defined]
        sole = None if count == 0 else count == searcher.num_docs
        if generation >= 0:
            if len(self._sole) > 1024:
                self._sole.clear()
            self._sole[project] = (generation, sole)
        return sole

    def count(self) -> int:
        return int(self._index.searcher().num_docs)

    def ids(self) -> set[int]:
        """Every id in the index (for the consistency check)."""
        searcher = self._index.searcher()
        n = searcher.num_docs
        if n == 0:
            return set()
        hits = searcher.search(tantivy.Query.all_query(), n, count=False).hits
        return {int(i) for i in searcher.fast_field_values("id", [addr for _s, addr in hits])}  # type: ignore[arg-type]

    def close(self) -> None:
        with self._lock:
            writer = self._writer
            if writer is not None:
                try:
                    writer.wait_merging_threads()
                except Exception:  # already consumed or failed: the lock file goes with the process
                    pass
                self._writer = None
