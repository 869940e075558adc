"""The typed filter: each field selects the versions it says, on a small real store, and a
value that looks like SQL is only ever a bound parameter."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from agentmem.filters import ALL, Filter, one_of
from agentmem.records import Link, MemoryVersion
from agentmem.store import Store, filter_sql
from agentmem.text import sha256

INJECTION = "it's'; DROP TABLE memories; --"
SNEAKY_AGENT = "x' OR '1'='1"


def day(n: int) -> datetime:
    return datetime(2026, 1, n, tzinfo=UTC)


def version(id: int, content: str, created: int, **fields: object) -> MemoryVersion:
    base: dict[str, object] = dict(
        id=id, lineage_id=id, version=1, parent_id=None, is_latest=True, status="active", content=content,
        tier="semantic", kind="fact", project="shop", source="api", salience=0.5, confidence=0.8,
        created_at=day(created), valid_from=day(created), last_reinforced_at=day(created),
        content_hash=sha256(content),
    )  # fmt: skip
    return MemoryVersion(**{**base, **fields})  # type: ignore[arg-type]


VERSIONS = [
    version(1, "The API listens on port 8080", 1, agent="a", session="s1", is_latest=False, status="superseded",
            valid_to=day(10), superseded_by=2),
    version(2, "The API listens on port 4000", 10, lineage_id=1, version=2, parent_id=1, agent="a"),
    version(3, "We deploy on Fridays", 5, kind="decision", tier="procedural", agent="b", session="s1",
            source="notes", source_ref=INJECTION),
    version(4, "ran the migration script", 20, project="o'hare", kind="observation", tier="working",
            status="archived", session="s2"),
    version(5, "", 25, status="deleted"),
    version(6, "The web app caches for an hour", 2, project="web", agent=SNEAKY_AGENT, expires_at=day(15)),
]  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    s = Store(Path(tmp_path_factory.mktemp("filters")) / "m.duckdb")
    with s.transaction() as tx:
        s.insert_versions(tx, VERSIONS, {})
        s.add_links(tx, [Link(2, 1, "derived_from", day(10)), Link(3, 1, "derived_from", day(5)),
                         Link(6, 3, "derived_from", day(2))])  # fmt: skip
        for v, vec in ((1, [1.0, 0.0]), (2, [0.8, 0.6]), (3, [0.0, 1.0]), (6, [0.6, 0.8])):
            s.put_embeddings(tx, [VERSIONS[v - 1].content_hash], "fake", np.asarray([vec]), new=True)
    yield s
    s.close()


@pytest.mark.parametrize(
    ("f", "expected"),
    [
        (ALL, [1, 2, 3, 4, 5, 6]),
        (Filter(ids=(2, 4, 99)), [2, 4]),
        (Filter(ids=(3,)), [3]),
        (Filter(ids=()), []),
        (Filter(lineages=(1,)), [1, 2]),
        (Filter(lineages=(1, 3)), [1, 2, 3]),
        (Filter(projects=("shop",)), [1, 2, 3, 5]),
        (Filter(projects=("shop", "web")), [1, 2, 3, 5, 6]),
        (Filter(projects=()), []),
        (Filter(projects=("o'hare",)), [4]),
        (Filter(projects=("shop' OR '1'='1",)), []),
        (Filter(projects=("shop", "x') OR true OR ('")), [1, 2, 3, 5]),
        (Filter(kinds=("fact",)), [1, 2, 5, 6]),
        (Filter(tiers=("working", "procedural")), [3, 4]),
        (Filter(statuses=("active",)), [2, 3, 6]),
        (Filter(statuses=("archived", "deleted")), [4, 5]),
        (Filter(agent="a"), [1, 2]),
        (Filter(agent=SNEAKY_AGENT), [6]),
        (Filter(agent="' OR 1=1 --"), []),
        (Filter(session="s1"), [1, 3]),
        (Filter(source="notes", source_ref=INJECTION), [3]),
        (Filter(source_ref="it's"), []),
        (Filter(content_hash=sha256("The API listens on port 4000")), [2]),
        (Filter(exclude_deleted=True), [1, 2, 3, 4, 6]),
        (Filter(latest_only=True), [2, 3, 4, 5, 6]),
        (Filter(current_only=True), [2, 3, 6]),
        (Filter(created_from=day(5), created_to=day(20)), [2, 3]),
        (Filter(created_from=day(20)), [4, 5]),
        (Filter(valid_at=day(5)), [1, 3, 6]),
        (Filter(valid_at=day(16)), [2, 3]),  # 1 is no longer valid, 6 has expired, 4 is not valid yet
        (Filter(before_id=3), [1, 2]),
        (Filter(projects=("shop",), kinds=("fact",), current_only=True), [2]),
        (Filter(projects=("shop",), kinds=("fact", "decision"), agent="b", exclude_deleted=True), [3]),
    ],
)
def test_filter_selects(store: Store, f: Filter, expected: list[int]) -> None:
    assert [v.id for v in store.versions(f)] == expected
    assert store.ids(f) == expected
    assert store.count(f) == len(expected)
    assert store.count(ALL) == len(VERSIONS)  # nothing a value said was run as SQL


def test_values_are_parameters_not_sql() -> None:
    where, params = filter_sql(Filter(projects=(INJECTION, "shop"), agent=SNEAKY_AGENT, source_ref=INJECTION), "m")
    assert "DROP" not in where and "'1'" not in where
    assert where == "m.project IN (SELECT unnest(?::VARCHAR[])) AND m.agent = ? AND m.source_ref = ?"
    assert params == [[INJECTION, "shop"], SNEAKY_AGENT, INJECTION]
    assert filter_sql(ALL) == ("true", [])


def test_one_of_reads_empty_as_any() -> None:
    assert one_of([]) is None and one_of(None) is None
    assert one_of(["fact", "event"]) == ("fact", "event")


@pytest.mark.parametrize(
    ("order", "expected"),
    [("id", [1, 2, 3, 4, 5, 6]), ("-id", [6, 5, 4, 3, 2, 1]), ("valid_from", [1, 6, 3, 2, 4, 5])],
)
def test_orders(store: Store, order: str, expected: list[int]) -> None:
    assert store.ids(ALL, order=order) == expected  # type: ignore[arg-type]
    assert [v.id for v in store.versions(ALL, order=order, limit=2)] == expected[:2]  # type: ignore[arg-type]


def test_lineage_counts_and_links(store: Store) -> None:
    assert [(v.id, v.version) for v in store.lineage(1)] == [(1, 1), (2, 2)]
    assert store.counts_by("project") == {"o'hare": 1, "shop": 4, "web": 1}
    assert store.counts_by("status", Filter(projects=("shop",))) == {"active": 2, "deleted": 1, "superseded": 1}
    assert store.count_links(Filter(projects=("shop",))) == 2
    assert [(x.src_id, x.dst_id) for x in store.links_from(Filter(ids=(3, 6)))] == [(6, 3), (3, 1)]


def test_nearest_and_word_matches(store: Store) -> None:
    valid = Filter(exclude_deleted=True, valid_at=day(16))
    nearest = store.nearest(valid, "fake", np.asarray([0.0, 1.0]), 5)
    assert [(v.id, round(s, 3)) for v, s in nearest] == [(3, 1.0), (2, 0.6)]
    assert [v.id for v in store.word_matches(Filter(exclude_deleted=True), ["api", "port"], 5)] == [2, 1]
    assert [v.id for v in store.word_matches(ALL, ["frid"], 5)] == [3]
    assert store.word_matches(ALL, [], 5) == []
    assert [v.id for v, _ in store.versions_with_vectors(Filter(ids=(1, 4)), "fake")] == [1, 4]
    assert [vec is None for _, vec in store.versions_with_vectors(Filter(ids=(1, 4)), "fake")] == [False, True]
    assert store.embedded([VERSIONS[0].content_hash, VERSIONS[3].content_hash], "fake") == {VERSIONS[0].content_hash}
