"""Lifecycle through the real store and indexes: decay by kind, retention, TTL, sweep, restore, delete, audit."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec
import numpy as np
import pytest

from agentmem import Config, ConflictError, Memory, NotFoundError, ValidationError
from agentmem.kinds import KINDS, KindSpec, decay_factor
from agentmem.records import MemoryVersion
from agentmem.retention import RetentionPolicy, access_term, effective_confidence, effective_confidences, retention
from fakes import FakeEmbedder

BACKENDS = ("duckdb", "postgres")  # tests taking `memory` run on both (see conftest.py)

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def version(**over: object) -> MemoryVersion:
    base: dict[str, object] = dict(
        id=1, lineage_id=1, version=1, parent_id=None, is_latest=True, status="active", content="x",
        tier="semantic", kind="fact", project="p", source="api", salience=0.5, confidence=0.7,
        created_at=NOW, valid_from=NOW, last_reinforced_at=NOW,
    )  # fmt: skip
    base.update(over)
    return MemoryVersion(**base)  # type: ignore[arg-type]


def consistent(mem: Memory) -> None:
    report = mem.check()
    assert report.ok, report


# -- decay maths -------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("days", [0.0, 1.0, 7.0, 30.0, 180.0, 365.0, 3 * 365.0])
def test_decay_per_kind(memory: Memory, clock, kind: str, days: float) -> None:  # type: ignore[no-untyped-def]
    """effective confidence = start confidence x exp(-ln2 / half-life x days), read lazily."""
    m = memory.remember(f"a {kind} worth keeping", project="p", kind=kind).memory
    spec = KINDS[kind]
    assert m.confidence == spec.start_confidence
    clock.advance(days=days)
    expected = spec.start_confidence * (
        1.0 if spec.half_life_days is None else math.exp(-math.log(2) / spec.half_life_days * days)
    )
    r = memory.retention(m.id)
    assert r.effective_confidence == pytest.approx(expected, abs=1e-6)
    if spec.half_life_days is not None and days == spec.half_life_days:
        assert r.effective_confidence == pytest.approx(spec.start_confidence / 2, abs=1e-6)
    hit = memory.recall(f"a {kind} worth keeping", project="p")[0]
    assert hit.parts.effective_confidence == pytest.approx(expected, abs=1e-6)  # recall ranks by the same number


def test_kinds_are_ordered_as_documented() -> None:
    life = {k: s.half_life_days for k, s in KINDS.items()}
    assert life["event"] is None
    assert life["identity"] > life["preference"] == life["decision"] > life["config"] > life["observation"]  # type: ignore[operator]
    assert decay_factor("event", 10_000) == 1.0


def test_a_pool_decays_as_each_memory_does() -> None:
    """Recall's batch (`effective_confidences`) gives each version exactly what retention gives it:
    every kind, a kind nobody declared (ages like a fact) and a clock set in the future."""
    now = NOW + timedelta(days=40)
    pool = [version(id=i, kind=k, last_reinforced_at=NOW - timedelta(days=3 * i))
            for i, k in enumerate([*KINDS, "made_up"], 1)]  # fmt: skip
    pool.append(version(id=99, last_reinforced_at=now + timedelta(days=1)))
    assert effective_confidences(pool, now) == [effective_confidence(m, now) for m in pool]
    assert len(set(effective_confidences(pool, now))) > len(KINDS) // 2  # the kinds really decay apart


def test_reinforcement_resets_the_clock(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    m = memory.remember("Deploys go out on Tuesdays", project="p", kind="config").memory
    clock.advance(days=30)
    faded = memory.retention(m.id).effective_confidence
    assert faded == pytest.approx(0.4, abs=1e-6)  # half of 0.8 after one half-life
    again = memory.remember("Deploys go out on Tuesdays", project="p", kind="config")
    assert again.outcome == "reinforced"
    r = memory.retention(m.id)
    assert r.decay == 1.0
    assert r.effective_confidence > 0.8  # reinforced above its start and no longer decayed


def test_configured_kinds(tmp_path: Path, clock) -> None:  # type: ignore[no-untyped-def]
    kinds = {**KINDS, "config": KindSpec(10.0, 0.6), "runbook": KindSpec(None, 0.95)}
    with Memory(tmp_path / "d", embedder=FakeEmbedder(), clock=clock, config=Config(kinds=kinds)) as mem:
        c = mem.remember("The cache TTL is five minutes", project="p", kind="config").memory
        rb = mem.remember("Restart the worker with systemctl", project="p", kind="runbook").memory
        assert c.confidence == 0.6 and rb.confidence == 0.95
        clock.advance(days=10)
        assert mem.retention(c.id).effective_confidence == pytest.approx(0.3, abs=1e-6)
        assert mem.retention(rb.id).decay == 1.0
    with pytest.raises(ValueError):
        KindSpec(-1.0, 0.5)
    with pytest.raises(ValueError):
        Config(kinds={"identity": KINDS["identity"]})  # 'fact' must stay


# -- retention -----------------------------------------------------------------


def test_access_term_is_bounded() -> None:
    """One access a second ago must not outweigh a well-used, important memory.

    agentmemory's access term is a sum of 1 / days-since-access: a single fresh access is worth
    1 / 0.00001 before its cap and swamps every other signal. Ours saturates below 1.
    """
    policy = RetentionPolicy()
    one_fresh = version(accesses=1, last_accessed_at=NOW - timedelta(seconds=1), salience=0.1, confidence=0.2)
    well_used = version(accesses=40, last_accessed_at=NOW - timedelta(days=3), salience=0.9, confidence=0.9)
    assert 0 < access_term(one_fresh, NOW, policy) < 1 - math.exp(-1 / policy.access_saturation) + 1e-9
    for n in (1, 10, 1000, 10**9):
        assert 0 < access_term(version(accesses=n, last_accessed_at=NOW), NOW, policy) <= 1.0

    def naive(m: MemoryVersion, days_ago: list[float]) -> float:  # agentmemory: salience + conf + sum(1/days)
        return m.salience + m.confidence + sum(1 / max(d, 1e-9) for d in days_ago)

    assert naive(one_fresh, [1 / 86400]) > naive(well_used, [3.0 + i for i in range(40)])  # one access wins
    assert retention(one_fresh, NOW, policy).score < retention(well_used, NOW, policy).score  # ours: it does not
    # the access term fades as the access ages
    old = version(accesses=5, last_accessed_at=NOW - timedelta(days=28))
    assert access_term(old, NOW, policy) == pytest.approx((1 - math.exp(-1)) / 4, rel=1e-6)


def test_tiers_from_the_score() -> None:
    policy = RetentionPolicy()
    fresh = retention(version(confidence=0.9, salience=0.9), NOW, policy)
    assert fresh.tier == "hot"
    year = retention(version(), NOW + timedelta(days=365), policy)
    assert year.tier == "warm"
    old_obs = retention(version(kind="observation", confidence=0.5), NOW + timedelta(days=40), policy)
    assert old_obs.tier == "evictable"
    event = retention(version(kind="event", confidence=0.9, salience=0.1), NOW + timedelta(days=9000), policy)
    assert event.tier == "hot" and event.decay == 1.0
    config = version(kind="config", confidence=0.8)
    tiers = [retention(config, NOW + timedelta(days=d), policy).tier for d in range(0, 200, 5)]
    order = ["hot", "warm", "cold", "evictable"]
    assert [order.index(t) for t in tiers] == sorted(order.index(t) for t in tiers)  # only ever cools
    with pytest.raises(ValueError):
        RetentionPolicy(confidence=0.9, salience=0.9, access=0.2)


# -- TTL ---------------------------------------------------------------------------


def test_ttl_hides_at_once_and_the_sweep_expires(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    m = memory.remember("The office is closed for the holidays", project="p", ttl_days=2, kind="event").memory
    assert m.expires_at == clock.now + timedelta(days=2)
    assert memory.recall("office closed holidays", project="p")
    clock.advance(days=2, seconds=1)
    assert memory.recall("office closed holidays", project="p") == []  # before any sweep
    assert memory.retention(m.id).expired
    report = memory.sweep()
    assert (report.expired, report.archived) == (1, 0)
    assert memory.get(m.id).status == "expired"
    memory.indexes.refresh()  # searches see what waits in the BM25 writer after its commit
    assert m.id not in memory.indexes.ids("bm25") and m.id not in memory.indexes.ids("vectors")
    consistent(memory)


@pytest.mark.parametrize(
    "fields",
    [
        {"ttl_days": -1},
        {"ttl_days": 0},
        {"ttl_days": 10**9},
        {"ttl_days": float("nan")},
        {"ttl_days": True},
        {"expires_at": "2000-01-01T00:00:00Z"},
        {"expires_at": "soon"},
        {"ttl_days": 1, "expires_at": "2030-01-01T00:00:00Z"},
        {"kind": "gossip"},
    ],
)
def test_bad_lifecycle_input_changes_nothing(memory: Memory, fields: dict[str, object]) -> None:
    before = memory.stats()
    with pytest.raises(ValidationError):
        memory.remember("A memory with a bad lifetime", project="p", **fields)
    assert memory.stats() == before


def test_expired_memory_is_not_reinforced(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    old = memory.remember("Feature flag beta is on", project="p", key="flag.beta", ttl_days=1).memory
    clock.advance(days=2)
    new = memory.remember("Feature flag beta is on", project="p", key="flag.beta")
    assert new.outcome == "created" and new.memory.id != old.id
    assert memory.recall("feature flag beta", project="p")[0].memory.id == new.memory.id


# -- the archive sweep -----------------------------------------------------------


def _fill(memory: Memory) -> dict[str, int]:
    """Memories whose retention after 60 quiet days is known: some below 0.1, some above."""
    made = {
        "obs": ("Saw the build take nine minutes", {"kind": "observation"}),
        "obs_pinned": ("Saw the cache miss twice", {"kind": "observation", "pinned": True}),
        "config": ("The worker pool has eight threads", {"kind": "config"}),
        "fact": ("The repo uses a monorepo layout", {"kind": "fact"}),
        "event": ("Released version 2.0 to customers", {"kind": "event", "salience": 0.0}),
        "other": ("Saw the deploy stall once", {"kind": "observation", "project": "q"}),
    }
    return {
        name: memory.remember(text, **{"project": "p", **fields}).memory.id  # type: ignore[arg-type]
        for name, (text, fields) in made.items()
    }


def test_sweep_archives_exactly_what_is_below_threshold(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    ids = _fill(memory)
    clock.advance(days=100)
    scores = {name: memory.retention(i).score for name, i in ids.items()}
    below = {name for name, s in scores.items() if s < 0.1 and name != "obs_pinned"}
    assert below == {"obs", "config", "other"}  # config: 30-day half-life; observation: 7 days
    assert scores["obs_pinned"] < 0.1 and scores["event"] > 0.1
    dry = memory.sweep(dry_run=True)
    assert {i.id for i in dry.items} == {ids[n] for n in below} and dry.dry_run
    assert memory.stats().by_status == {"active": 6}  # a dry run changes nothing
    assert memory.audit()[0] == []
    report = memory.sweep()
    assert report.archived == 3 and report.examined == 6
    assert [i.retention for i in report.items] == sorted(i.retention for i in report.items)  # lowest first
    for name, i in ids.items():
        m = memory.get(i)
        assert (m.status == "archived") == (name in below), name
        assert m.status_reason == ("retention" if name in below else None)
    archived = {i for n, i in ids.items() if n in below}
    memory.indexes.refresh()  # searches see what waits in the BM25 writer after its commit
    assert not archived & memory.indexes.ids("bm25") and not archived & memory.indexes.ids("vectors")
    assert memory.recall("saw the build take nine minutes", project="p", k=10)[0].memory.id != ids["obs"]
    consistent(memory)
    entries, _ = memory.audit(actions=["archive"])
    assert sorted(e.memory_id for e in entries) == sorted(archived)  # one audit entry per archived memory
    assert all(e.reason and "retention" in e.reason for e in entries)
    assert memory.sweep().archived == 0  # nothing left to do


def test_sweep_limit_project_and_threshold(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    ids = _fill(memory)
    clock.advance(days=100)
    first = memory.sweep(limit=1)
    assert first.archived == 1 and first.left_for_next_run == 2
    assert first.items[0].id == min(
        (ids["obs"], ids["config"], ids["other"]), key=lambda i: (memory.retention(i).score, i)
    )
    assert memory.sweep(projects=["q"], dry_run=True).examined == 1
    assert memory.sweep(threshold=0.0, dry_run=True).archived == 0
    for bad in ({"limit": 0}, {"limit": True}, {"threshold": 1.5}, {"threshold": -0.1}):
        with pytest.raises(ValidationError):
            memory.sweep(**bad)  # type: ignore[arg-type]


def test_access_keeps_a_memory_warm(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    used = memory.remember("The staging host is called sparrow", project="p", kind="config").memory
    idle = memory.remember("The backup host is called finch", project="p", kind="config").memory
    for _ in range(60):
        clock.advance(days=1)
        memory.recall("staging host sparrow", project="p", k=1)
    memory.flush()
    assert memory.get(used.id).accesses >= 50
    assert memory.retention(used.id).score > memory.retention(idle.id).score
    report = memory.sweep(dry_run=True, threshold=0.15)
    assert idle.id in {i.id for i in report.items} and used.id not in {i.id for i in report.items}


# -- restore ------------------------------------------------------------------------


def test_archive_and_restore_round_trip(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    m = memory.remember("The build cache lives in bucket amber", project="p", kind="observation").memory
    clock.advance(days=60)
    memory.sweep()
    assert memory.get(m.id).status == "archived"
    consistent(memory)
    listed, _ = memory.list_versions(status="archived")
    assert [v.id for v in listed] == [m.id]
    back = memory.restore(m.id, actor="alice")
    assert back.status == "active" and back.archived_at is None and back.last_reinforced_at == clock.now
    memory.indexes.refresh()  # searches see what waits in the BM25 writer after its commit
    assert m.id in memory.indexes.ids("bm25") and m.id in memory.indexes.ids("vectors")
    assert memory.recall("build cache bucket amber", project="p")[0].memory.id == m.id
    consistent(memory)
    assert memory.sweep(dry_run=True).archived == 0  # its clock restarted
    (entry,), _ = memory.audit(actions=["restore"])
    assert (entry.actor, entry.memory_id) == ("alice", m.id)


def test_restore_refusals_change_nothing(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    active = memory.remember("The API is versioned by URL path", project="p").memory
    with pytest.raises(ConflictError):
        memory.restore(active.id)
    with pytest.raises(NotFoundError):
        memory.restore(999_999)
    old = memory.remember("The primary region is eu-west-1", project="p", key="region", kind="config").memory
    clock.advance(days=120)
    memory.sweep()
    new = memory.remember("The primary region is us-east-2", project="p", key="region", kind="config").memory
    assert new.id != old.id
    with pytest.raises(ConflictError, match=str(new.id)):
        memory.restore(old.id)  # two current memories may not hold one key
    assert memory.get(old.id).status == "archived"
    consistent(memory)


def test_restore_expired_drops_the_lapsed_ttl(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    m = memory.remember("Code freeze until Friday", project="p", ttl_days=3).memory
    clock.advance(days=4)
    memory.sweep()
    back = memory.restore(m.id)
    assert back.expires_at is None and memory.recall("code freeze", project="p")
    memory.sweep(threshold=1.0)  # archive everything not pinned
    again = memory.restore(m.id, ttl_days=1)
    assert again.expires_at == clock.now + timedelta(days=1)


def test_pin(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    m = memory.remember("Saw a flaky test in CI", project="p", kind="observation").memory
    pinned = memory.pin(m.id, actor="bob")
    assert pinned.pinned and memory.live.get(m.id).pinned  # type: ignore[union-attr]
    clock.advance(days=365)
    assert memory.sweep().archived == 0
    memory.pin(m.id, False)
    assert memory.sweep().archived == 1
    assert [e.action for e in memory.audit()[0]] == ["archive", "unpin", "pin"]
    with pytest.raises(ValidationError):
        memory.pin(m.id, "yes")  # type: ignore[arg-type]


# -- governance delete ------------------------------------------------------------


def _raw_contains(root: Path, needle: bytes) -> list[str]:
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.mark.embedded  # on disk: DuckDB's file, Tantivy's segments, the vector file (PostgreSQL: test_postgres.py)
def test_governance_delete_leaves_no_trace(memory: Memory, data_dir: Path, clock) -> None:  # type: ignore[no-untyped-def]
    v1 = memory.remember("The vault password hint is zanzibarquokka", project="p", key="vault").memory
    clock.advance(days=1)
    v2 = memory.remember("The vault password hint is xylophonewombat", project="p", key="vault").memory
    keep = memory.remember("The vault lives in the basement", project="p").memory
    vectors = {v.id: memory.embedder.embed([v.content])[0] for v in (v1, v2)}
    memory.flush()
    memory.store.checkpoint()  # the words are in the database file itself now, not only in its WAL
    dry = memory.delete(lineages=[v2.id], reason="GDPR erasure request 17", dry_run=True)
    assert (dry.versions, dry.lineages, dry.ids) == (2, 1, [v1.id, v2.id])
    assert memory.get(v1.id).content  # nothing changed yet
    report = memory.delete(lineages=[v2.id], reason="GDPR erasure request 17", actor="dpo")
    assert report.versions == 2 and report.audit_id
    for vec in vectors.values():  # the saved vector graph was overwritten in place, before any new save
        assert _raw_contains(data_dir / "index", np.asarray(vec, dtype=np.float32)[:8].tobytes()) == []
    for v in (v1, v2):
        tomb = memory.get(v.id)
        assert tomb.status == "deleted" and tomb.content == "" and tomb.key is None and tomb.content_hash == ""
        assert tomb.deleted_at == clock.now and tomb.status_reason == "GDPR erasure request 17"
        assert v.id not in memory.indexes.ids("bm25") and v.id not in memory.indexes.ids("vectors")
        hits = memory.indexes.search_vector(vectors[v.id], 10)
        assert v.id not in [i for i, _ in hits]
    for word in ("zanzibarquokka", "xylophonewombat"):
        assert memory.indexes.search_text(word, 10) == []
        assert {h.memory.id for h in memory.recall(word, project="p", k=10)} <= {keep.id}
        rows = (
            memory.store.cursor()
            .execute(
                "SELECT count(*) FROM memories WHERE content LIKE ? OR title LIKE ? OR key LIKE ?", [f"%{word}%"] * 3
            )
            .fetchone()
        )
        assert rows == (0,)
    left = memory.store.cursor().execute("SELECT count(*) FROM embeddings WHERE content_hash = ?",
                                         [v1.content_hash]).fetchone()  # fmt: skip
    assert left == (0,)
    consistent(memory)
    memory.close()
    # DuckDB does not wipe freed blocks: until compacted, the file may still hold the old bytes.
    before, after = Memory.compact(data_dir)
    assert before > 0 and after > 0
    # Now nothing on disk holds the words: the DuckDB file, its WAL, the Tantivy segments.
    for word in (b"zanzibarquokka", b"xylophonewombat"):
        assert _raw_contains(data_dir, word) == [], word
    for vec in vectors.values():  # nor the vector file the exact embedding
        assert _raw_contains(data_dir / "index", np.asarray(vec, dtype=np.float32)[:8].tobytes()) == []
    with Memory(data_dir, embedder=FakeEmbedder(), clock=clock) as again:
        (entry,), _ = again.audit(actions=["delete"])
        assert (entry.actor, entry.affected, entry.lineage_id) == ("dpo", 2, v1.id)
        assert entry.reason == "GDPR erasure request 17"
        assert "zanzibarquokka" not in msgspec.json.encode(entry).decode()
        assert again.history(v2.id)[-1].status == "deleted"  # the tombstones remain
        assert again.check().ok


def test_delete_by_id_and_by_filter(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    a = memory.remember("Saw login fail for user 12", project="p", kind="observation").memory
    clock.advance(days=10)
    b = memory.remember("Saw login fail for user 13", project="p", kind="observation").memory
    c = memory.remember("Login uses OAuth", project="p").memory
    d = memory.remember("Saw login fail for user 14", project="q", kind="observation").memory
    one = memory.delete(ids=[c.id], reason="wrong")
    assert one.versions == 1 and memory.get(c.id).status == "deleted"
    window = memory.delete(project="p", kinds=["observation"], created_to=clock.now - timedelta(days=1),
                           reason="retention policy")  # fmt: skip
    assert window.ids == [a.id]
    scoped = memory.delete(kinds=["observation"], reason="tenant cleanup", scope=["p"])
    assert scoped.ids == [b.id] and memory.get(d.id).status == "active"
    assert memory.delete(project="p", reason="again", dry_run=True).versions == 0  # tombstones are not re-deleted
    consistent(memory)
    assert [e.affected for e in memory.audit(actions=["delete"])[0]] == [1, 1, 1]


@pytest.mark.parametrize(
    "how",
    [
        {"reason": "", "ids": [1]},
        {"reason": "   ", "ids": [1]},
        {"reason": None, "ids": [1]},
        {"reason": "why"},  # no target, no filter
        {"reason": "why", "ids": [1], "project": "p"},  # both ways at once
        {"reason": "why", "ids": [0]},
        {"reason": "why", "ids": [True]},
        {"reason": "why", "kinds": ["gossip"]},
        {"reason": "why", "project": "p", "created_from": "2026-02-01", "created_to": "2026-01-01"},
        {"reason": "why", "created_from": "yesterday"},
    ],
)
def test_bad_deletes_change_nothing(memory: Memory, how: dict[str, object]) -> None:
    memory.remember("Something to keep", project="p")
    before = memory.stats()
    with pytest.raises(ValidationError):
        memory.delete(**how)  # type: ignore[arg-type]
    assert memory.stats() == before and memory.audit()[0] == []


def test_delete_unknown_or_out_of_scope(memory: Memory) -> None:
    m = memory.remember("Team q owns billing", project="q").memory
    with pytest.raises(NotFoundError):
        memory.delete(ids=[m.id + 100], reason="x")
    with pytest.raises(NotFoundError):
        memory.delete(ids=[m.id], reason="x", scope=["p"])
    with pytest.raises(NotFoundError):
        memory.delete(project="q", reason="x", scope=["p"])
    assert memory.get(m.id).status == "active"


# -- audit ------------------------------------------------------------------------


def test_audit_records_supersession_rebuild_and_filters(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    start = clock.now
    old = memory.remember("Prod database is Postgres 14", project="p", key="db").memory
    clock.advance(hours=1)
    new = memory.remember("Prod database is Postgres 16", project="p", key="db", actor="carol").memory
    memory.remember("Billing runs nightly", project="q", key="billing")
    memory.remember("Billing runs hourly", project="q", key="billing")
    clock.advance(hours=1)
    memory.rebuild(actor="ops")
    entries, _ = memory.audit()
    assert [e.action for e in entries] == ["rebuild", "supersede", "supersede"]
    sup = entries[-1]
    assert (sup.memory_id, sup.actor, sup.reason, sup.details["by"]) == (old.id, "carol", "key", new.id)
    assert [e.project for e in memory.audit(projects=["p"])[0]] == ["p"]  # cross-project entries hidden
    assert memory.audit(projects=[])[0] == []
    assert [e.action for e in memory.audit(since=start + timedelta(minutes=90))[0]] == ["rebuild"]
    assert len(memory.audit(until=start + timedelta(minutes=30))[0]) == 0
    assert [e.memory_id for e in memory.audit(memory_id=new.id)[0]] == [old.id]  # by lineage
    page, cursor = memory.audit(limit=2)
    rest, end = memory.audit(limit=2, before_id=cursor)
    assert len(page) == 2 and len(rest) == 1 and end is None
    for bad in ({"actions": ["nap"]}, {"since": "later"}, {"limit": 0}):
        with pytest.raises(ValidationError):
            memory.audit(**bad)  # type: ignore[arg-type]


def test_rebuild_on_open_is_audited(data_dir: Path, clock) -> None:  # type: ignore[no-untyped-def]
    import shutil

    with Memory(data_dir, embedder=FakeEmbedder(), clock=clock) as mem:
        mem.remember("Something indexed", project="p")
    shutil.rmtree(data_dir / "index" / "bm25")
    with Memory(data_dir, embedder=FakeEmbedder(), clock=clock) as mem:
        (entry,), _ = mem.audit(actions=["rebuild"])
        assert entry.actor == "startup" and entry.details["indexes"] == ["bm25"]
        assert mem.check().ok


@pytest.mark.embedded
def test_delete_succeeds_while_a_reader_holds_a_transaction(memory: Memory) -> None:
    """Found by the crash campaign: the post-delete CHECKPOINT raised (a 500 after the commit) when
    another connection had a transaction open. It is best effort now; the delete is whole."""
    m = memory.remember("A note to erase while someone reads", project="p").memory
    reader = memory.store.new_cursor()
    reader.execute("BEGIN TRANSACTION")
    reader.execute("INSERT INTO counters VALUES ('reader_probe', 1)")  # an open write transaction elsewhere
    report = memory.delete(ids=[m.id], reason="erase")
    assert report.versions == 1 and memory.get(m.id).status == "deleted" and memory.check().ok
    reader.execute("ROLLBACK")
    reader.close()
