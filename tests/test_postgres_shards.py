"""Every statement the PostgreSQL backend sends for one project's requests names that project.

`project` is meant to be the distribution column of a Citus cluster: a statement that names
it (`project = ...` on every table it reads or changes, or the column among those it inserts)
runs on one shard; one that does not runs on all of them. The ids' directory,
`memory_projects`, would be distributed by id instead, so a statement on it must name ids.

The statements are caught where psycopg sends them (`Cursor.execute`, `executemany`, `copy`
and the server-side cursor's `execute`, wrapped for the test) while a workload of one
project's requests runs on a real PostgreSQL: writes, supersession, observations and their
claims, reads by id, recall, the lifecycle, consolidation, the audit log, export and import.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agentmem import Memory
from agentmem.postgres.schema import CURRENT_UP_TO
from agentmem.records import NewMemory, Triple
from fakes import FakeEmbedder

BY_PROJECT = ("memories", "embeddings", "links", "audit", "bm25_terms", "bm25_projects")
BY_ID = ("memory_projects",)
UPKEEP = (
    "vacuum ",
    "reindex ",
    "analyze ",
    "lock table ",
    "drop index ",
    "create index ",
    CURRENT_UP_TO.split(" LIMIT ")[0].lower(),
)
_KEYWORDS = {"where", "set", "on", "join", "left", "inner", "cross", "using", "order", "group", "limit", "select",
             "values", "returning", "and", "or", "as", "for", "union", "from", "full"}  # fmt: skip
_REF = re.compile(r"(?<![\w.])(" + "|".join(BY_PROJECT + BY_ID) + r")(?![\w.(])(?:\s+(?:as\s+)?(\w+))?")


def unrouted(statement: str) -> list[str]:
    """The tables `statement` reads or changes without naming their distribution column ([] if
    it names it on every one). Upkeep of a whole table (VACUUM after a governance delete, ANALYZE
    after an import, the vector index a restore into an empty database builds after its rows, and
    the question whether the database is empty) names none by nature, and is left out."""
    text = " ".join(statement.lower().split())
    if text.startswith(UPKEEP):
        return []
    missing = []
    unqualified = len(re.findall(r"(?<![\w.])project\s*(?:=|in\b)", text))
    needed = 0
    for ref in _REF.finditer(text):
        table, alias = ref.group(1), ref.group(2)
        before = text[: ref.start()].rstrip()
        if alias in _KEYWORDS or alias is None:
            alias = table
        if before.endswith(("into", "copy")):  # rows given whole: each names its column
            columns = re.match(r"\s*\(([^)]*)\)", text[ref.end(1) :])
            column = "id" if table in BY_ID else "project"
            if columns is None or column not in [c.strip() for c in columns.group(1).split(",")]:
                missing.append(table)
            continue
        if table in BY_ID:
            if not re.search(rf"(?<![\w.])(?:{alias}\.)?id\s*=", text):
                missing.append(table)
            continue
        if re.search(rf"\b{alias}\.project\s*(?:=|in\b)|=\s*{alias}\.project\b", text):
            continue
        needed += 1  # an unqualified `project = ...` each
        if alias != table or needed > unqualified:
            missing.append(table)
    return missing


def test_the_check_finds_a_statement_that_names_no_project() -> None:
    assert unrouted("SELECT id FROM memories WHERE id = %s") == ["memories"]
    assert unrouted("SELECT m.id FROM memories m JOIN links l ON l.src_id = m.id WHERE m.project = %s") == ["links"]
    assert unrouted("UPDATE memories SET accesses = accesses + 1 WHERE memories.id = %s") == ["memories"]
    assert unrouted("INSERT INTO links (src_id, dst_id) VALUES (%s, %s)") == ["links"]
    assert unrouted("SELECT project FROM memory_projects") == ["memory_projects"]
    assert unrouted("SELECT id FROM memories WHERE project = %s AND id IN (SELECT dst_id FROM links "
                    "WHERE src_id = %s)") == ["links"]  # fmt: skip
    assert unrouted("SELECT id FROM memories WHERE project = %s AND id IN (SELECT dst_id FROM links "
                    "WHERE project = %s AND src_id = %s)") == []  # fmt: skip
    assert unrouted("UPDATE memories m SET doc = NULL FROM memories o WHERE m.project = %s AND o.project = "
                    "m.project AND o.id = m.id") == []  # fmt: skip
    assert unrouted("COPY memories (id, project, content) FROM STDIN") == []
    assert unrouted("SELECT id, project FROM memory_projects WHERE id = ANY(%s::bigint[])") == []
    assert unrouted("SET lock_timeout = '5000ms'") == []
    assert unrouted("SELECT count(*) FROM links WHERE links.project = %s AND src_id IN (SELECT id FROM memories "
                    "WHERE project = %s)") == []  # fmt: skip
    assert unrouted("SELECT count(*) FROM links WHERE project = %s AND src_id IN (SELECT id FROM memories)") == [
        "memories"
    ]


class Recorder:
    """The SQL of every statement psycopg sends while it is on (any thread)."""

    def __init__(self) -> None:
        self.statements: list[str] = []
        self.on = False
        self._lock = threading.Lock()

    def add(self, query: Any) -> None:
        if self.on:
            text = query.as_string(None) if hasattr(query, "as_string") else str(query)
            with self._lock:
                self.statements.append(text)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    rec = Recorder()

    def wrap(cls: type, name: str) -> None:
        original = getattr(cls, name)

        def recorded(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            rec.add(query)
            return original(self, query, *args, **kwargs)

        monkeypatch.setattr(cls, name, recorded)

    for cls, name in ((psycopg.Cursor, "execute"), (psycopg.Cursor, "executemany"), (psycopg.Cursor, "copy"),
                      (psycopg.ServerCursor, "execute")):  # fmt: skip
        wrap(cls, name)
    yield rec


def _create(url: str) -> None:
    name = url.split("?", 1)[0].rsplit("/", 1)[1]
    with psycopg.connect(url.replace(f"/{name}?", "/postgres?", 1), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")


def _workload(mem: Memory, fresh: Memory) -> None:
    """One project's requests, end to end (another project has memories in the same database)."""
    mem.remember("Bob reviews every pull request in the other team", project="q", key="review")
    db = mem.remember("We use Postgres 15 for the shop", project="p", key="db").memory
    mem.remember("We moved the shop to MySQL 8", project="p", key="db")
    lead = mem.remember("Alice leads payments", project="p", triple=Triple("Alice", "leads", "payments")).memory
    now = mem.remember("Alice leads billing now", project="p", triple=Triple("Alice", "leads", "billing")).memory
    port = mem.remember("The service listens on port 4000", project="p", session="s1").memory
    mem.revise(port.id, "The service listens on port 5000", reason="changed")
    mem.observe([NewMemory(content=text, project="p", kind="observation", tier="working", session="s1")
                 for text in ("Carol said the deploy runs every Friday. The cache is Redis.",
                              "Dan asked whether the deploy could move to Thursday.",
                              "Carol agreed to try Thursday deploys for a month.",
                              "Erin will watch the first Thursday deploy.")])  # fmt: skip
    mem.remember("We use Postgres 15 for the shop", project="p", key="db")  # supersedes MySQL again
    mem.get(db.id)
    mem.history(lead.id)
    mem.links(port.id)
    mem.provenance(port.id)
    mem.retention(lead.id)
    mem.recall("which database does the shop use", project="p", k=5)
    mem.search("who leads billing", project="p", k=5)
    mem.context("what port does the service listen on", project="p")
    mem.pin(now.id)
    mem.pin(now.id, False)
    mem.sweep(projects=["p"], threshold=0.99)
    archived = [v for v in mem.list_versions(projects=["p"], status="archived")[0]]
    if archived:
        mem.restore(archived[0].id)
    mem.end_session("s1", project="p")
    mem.consolidate(["p"])
    mem.list_versions(projects=["p"])
    mem.audit(projects=["p"])
    mem.stats(projects=["p"])
    victim = mem.remember("The old wiki password is hunter2", project="p").memory
    mem.delete(reason="a secret", ids=[victim.id])
    mem.delete(reason="gone", lineages=[lead.id])
    mem.flush()  # the access counts of the recalls
    exported = list(mem.export_lines(projects=["p"]))
    assert fresh.import_lines(exported) > 0


def test_every_statement_of_one_projects_requests_names_its_project(
    tmp_path: Path, database_url: str, recorder: Recorder
) -> None:
    other = database_url.replace("?", "_b?", 1)
    _create(other)
    with Memory(tmp_path / "a", embedder=FakeEmbedder(), database_url=database_url) as mem, \
            Memory(tmp_path / "b", embedder=FakeEmbedder(), database_url=other) as fresh:  # fmt: skip
        recorder.on = True
        _workload(mem, fresh)
        recorder.on = False
        assert not mem.check().store_problems and not fresh.check().store_problems
    assert len(recorder.statements) > 100  # the workload ran through psycopg
    wrong = {s: unrouted(s) for s in dict.fromkeys(recorder.statements) if unrouted(s)}
    assert not wrong, "\n\n".join(f"{t}: {s}" for s, t in wrong.items())
