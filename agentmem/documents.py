"""What the indexes see of the store: current versions as search documents, and the outbox.

A document's text is the version's title and content, then the words of the versions it
superseded that still describe it (`supersede.carried`: dead values left out), so a brief
update stays findable by the words of the claim it replaced. That rule belongs to
supersession, not to the store of record, so it lives here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from agentmem.filters import Filter
from agentmem.records import MemoryVersion
from agentmem.store import Store
from agentmem.supersede import carried
from indexes.docs import Doc, OutboxEntry

# The version of the text analysis behind BM25's documents (`doc_text`, `supersede.carried`): a
# change to what is indexed for a version bumps it, and a BM25 index of another version is rebuilt
# from the store when it is opened. tests/test_documents.py fails when the text changes and it does not.
ANALYSIS = "1"
CURRENT = Filter(current_only=True)  # what the indexes hold
_DOC_COLUMNS = ("id", "title", "content", "project", "agent", "kind", "tier")

# `history`: the contents of the versions this one superseded (erased ones are gone)
_DOC_SQL = (
    "SELECT m.id, m.title, m.content, m.project, m.agent, m.kind, m.tier, e.vector, "
    "(SELECT list(o.content ORDER BY o.version) FROM memories o "
    "WHERE o.lineage_id = m.lineage_id AND o.status = 'superseded') AS history "
    "FROM memories m JOIN embeddings e ON e.content_hash = m.content_hash AND e.model = ? "
    "WHERE m.is_latest AND m.status = 'active'"
)


def doc_text(title: str | None, content: str, history: Sequence[str] | None) -> str:
    """What BM25 indexes for a current version: its title and content, then the carried words."""
    text = f"{title}\n{content}" if title else content
    context = " ".join(dict.fromkeys(w for old in history or () for w in carried(old, content).split()))
    return f"{text}\n{context}" if context else text


def doc_of(v: MemoryVersion, vector: np.ndarray, history: Sequence[str] | None = None) -> Doc:
    """The document of a version whose history (superseded contents) the caller already knows."""
    return Doc(
        id=v.id,
        text=doc_text(v.title, v.content, history),
        vector=vector,
        project=v.project,
        agent=v.agent or "",
        kind=v.kind,
        tier=v.tier,
    )


def _row_doc(r: Sequence[Any], vector: np.ndarray) -> Doc:
    return Doc(
        id=r[0],
        text=doc_text(r[1], r[2], r[8]),
        vector=vector,
        project=r[3],
        agent=r[4] or "",
        kind=r[5],
        tier=r[6],
    )


class StoreSource:
    """The store seen from the indexes (`indexes.sync.Source`): documents and the outbox."""

    def __init__(self, store: Store, model: str) -> None:
        self.store = store
        self.model = model

    def outbox_after(self, seq: int, limit: int) -> list[OutboxEntry]:
        return self.store.outbox_after(seq, limit)

    def docs(self, ids: Sequence[int]) -> list[Doc]:
        if not ids:
            return []
        sql = f"{_DOC_SQL} AND m.id IN (SELECT unnest(?::BIGINT[]))"
        rows = self.store.cursor().execute(sql, [self.model, list(ids)]).fetchall()
        return [_row_doc(r, np.asarray(r[7], dtype=np.float32)) for r in rows]

    def iter_docs(self, batch: int) -> Iterator[list[Doc]]:
        cur = self.store.new_cursor()  # its own cursor: a rebuild may run beside other reads
        try:
            reader = cur.sql(f"{_DOC_SQL} ORDER BY m.id", params=[self.model]).to_arrow_reader(batch)
            for chunk in reader:
                if not chunk.num_rows:
                    continue
                vectors = chunk.column("vector").flatten().to_numpy(zero_copy_only=False)
                vectors = vectors.reshape(chunk.num_rows, -1).astype(np.float32, copy=False)
                cols = [chunk.column(c).to_pylist() for c in (*_DOC_COLUMNS, "history")]
                yield [_row_doc((*r[:7], None, r[7]), vectors[n]) for n, r in enumerate(zip(*cols, strict=True))]
        finally:
            cur.close()

    def indexable_count(self) -> int:
        return self.store.count(CURRENT)

    def indexable_ids(self) -> set[int]:
        return set(self.store.ids(CURRENT))

    def last_seq(self) -> int:
        return self.store.last_seq

    def prune_outbox(self, upto: int) -> None:
        self.store.prune_outbox(upto)
