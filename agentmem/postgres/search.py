"""Search in PostgreSQL: full-text search and pgvector, both over current versions only.

This is what the embedded engine's `indexes.sync.IndexSet` is on PostgreSQL, with nothing to
apply, replay, commit or rebuild: the GIN index on the generated `tsvector` and the partial
HNSW index change in the transaction that changes the rows, so a search on any node sees
every committed write (read your writes, on every node).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from agentmem.filters import Filter
from agentmem.postgres import bm25
from agentmem.postgres.schema import M_CURRENT
from agentmem.postgres.store import PgStore
from indexes.docs import Doc
from indexes.sync import Consistency, IndexReport

_WORD = re.compile(r"\w+", re.UNICODE)


def text_query(text: str) -> str:
    """The query's words joined by `or` (BM25's any-word semantics) for `websearch_to_tsquery`,
    which reads no other syntax from them."""
    return " or ".join(w for w in (m.lower() for m in _WORD.findall(text)) if w != "or")


class PgIndexes:
    """The search side of the PostgreSQL backend (see the module's docstring)."""

    rebuilt: list[str] = []

    def __init__(self, store: PgStore) -> None:
        self.store = store

    # -- search ------------------------------------------------------------

    def search_text(
        self,
        text: str,
        k: int,
        *,
        project: str | None = None,
        agents: Sequence[str] = (),
        kinds: Sequence[str] = (),
        tiers: Sequence[str] = (),
    ) -> list[tuple[int, float]]:
        """Top `k` (id, BM25 score) of current versions whose search document has a query word
        (`agentmem.postgres.bm25`)."""
        words = text_query(text)
        if not words or k <= 0:
            return []
        conds: list[str] = []
        params: list[object] = [" ".join(_WORD.findall(text)).lower()]
        if project is not None:
            params += [project, project]
        params.append(words)
        if project is not None:
            conds.append("m.project = ?")
            params.append(project)
        for column, values in (("agent", agents), ("kind", kinds), ("tier", tiers)):
            if values:
                conds.append(f"m.{column} = ANY(?::text[])")
                params.append(list(values))
        rows = self.store.query(bm25.search_sql(project, conds), [*params, int(k)])
        return [(int(i), float(s)) for i, s in rows]

    def search_vector(
        self, vector: np.ndarray, k: int, *, project: str | None = None, model: str | None = None
    ) -> list[tuple[int, float]]:
        """Top `k` (id, cosine similarity) of current versions, through the partial HNSW index (of
        the one model the database serves: `model` is not checked)."""
        if k <= 0:
            return []
        cond, params = M_CURRENT, [np.asarray(vector, dtype=np.float32)]
        if project is not None:
            cond += " AND m.project = ?"
            params.append(project)  # type: ignore[arg-type]
        # the scan goes on past hnsw.ef_search until k rows pass the filter (the connections set
        # hnsw.iterative_scan = relaxed_order); relaxed order is put right by the outer ORDER BY
        rows = self.store.query(
            f"WITH hits AS MATERIALIZED (SELECT m.id, m.embedding <=> ?::vector AS distance FROM memories m "
            f"WHERE {cond} AND m.embedding IS NOT NULL ORDER BY distance LIMIT {int(k)}) "
            "SELECT id, distance FROM hits ORDER BY distance, id DESC",
            [params[0], *params[1:]],
        )
        return [(int(i), 1.0 - float(d)) for i, d in rows]

    def waiting(self) -> list[int]:
        return []  # nothing waits for a commit of its own

    def vectors_of(self, ids: Sequence[int], project: str | None = None) -> dict[int, np.ndarray]:
        """The current vectors of `ids` (of `project`, when given: no lookup of their projects)."""
        rows: list[tuple[Any, ...]] = []
        grouped = {project: list(ids)} if project is not None else self.store.by_project(ids)
        for project, mine in grouped.items():
            rows += self.store.query(
                f"SELECT m.id, m.embedding FROM memories m WHERE m.project = ? AND m.id = ANY(?::bigint[]) "
                f"AND {M_CURRENT} AND m.embedding IS NOT NULL",
                [project, mine],
                binary=True,
            )
        return {int(i): np.asarray(v.to_numpy() if hasattr(v, "to_numpy") else v, dtype=np.float32)
                for i, v in rows}  # fmt: skip

    def ids(self, which: str) -> set[int]:
        """The current versions with a search document ("bm25") or a vector ("vectors")."""
        column = "doc" if which == "bm25" else "embedding"
        rows = self.store.query(f"SELECT m.id FROM memories m WHERE {M_CURRENT} AND m.{column} IS NOT NULL")
        return {int(r[0]) for r in rows}

    def sizes(self, ids: set[int] | None = None) -> tuple[int, int]:
        """Current versions with a search document, and with a vector (of `ids` when given)."""
        sql = ("SELECT count(*) FILTER (WHERE m.doc IS NOT NULL), count(*) FILTER (WHERE m.embedding IS NOT NULL) "
               f"FROM memories m WHERE {M_CURRENT}")  # fmt: skip
        if ids is None:
            row = self.store.query(sql)[0]
            return int(row[0]), int(row[1])
        docs = vectors = 0
        for project, mine in self.store.by_project(sorted(ids)).items():
            row = self.store.query(f"{sql} AND m.project = ? AND m.id = ANY(?::bigint[])", [project, mine])[0]
            docs, vectors = docs + int(row[0]), vectors + int(row[1])
        return docs, vectors

    def check(self) -> Consistency:
        """Every current version has its search document and its vector, and nothing else is indexed
        (the partial indexes hold exactly the current versions by construction)."""
        expected = set(self.store.ids(Filter(current_only=True)))
        reports = []
        for name in ("bm25", "vectors"):
            got = self.ids(name)
            reports.append(IndexReport(name=name, count=len(got), applied_seq=0, missing=sorted(expected - got),
                                       extra=sorted(got - expected)))  # fmt: skip
        return Consistency(expected=len(expected), last_seq=0, indexes=reports)

    # -- upkeep: the database's own ---------------------------------------

    def apply(self, upserts: list[Doc], deletes: list[int], purges: list[int], first: int, last: int) -> None:
        return None

    def refresh(self) -> None:
        return None

    def sync(self) -> int:
        return 0

    def lag(self) -> int:
        return 0

    def pending_ids(self) -> set[int]:
        return set()

    def rebuild(self, which: Sequence[str] = ("bm25", "vectors")) -> None:
        unknown = set(which) - {"bm25", "vectors"}
        if unknown:
            raise ValueError(f"unknown index {sorted(unknown)}: choose bm25 or vectors")
        names = {"bm25": "memories_search", "vectors": "memories_embedding"}
        for name in which:
            self.store.query(f"REINDEX INDEX CONCURRENTLY {names[name]}", autocommit=True)
            if name == "bm25":
                self.store.recount_bm25()

    def purge(self) -> None:
        """Erased text leaves the table's and the indexes' dead tuples once they are vacuumed."""
        self.store.query("VACUUM memories", autocommit=True)

    def flush(self) -> None:
        return None

    def close(self) -> None:
        return None
