"""Consolidation through the real store and indexes: episodic, semantic, procedural, provenance, provider."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from agentmem import Config, Memory, NewMemory, NotFoundError, ValidationError
from agentmem.config import ConsolidationSettings
from agentmem.provider import ProviderConfig
from fakes import FakeEmbedder, FakeProvider

BACKENDS = ("duckdb", "postgres")  # tests taking `memory` run on both (see conftest.py)


def observe(mem: Memory, clock, session: str, items: list[tuple[str, str | None]], project: str = "p") -> list[int]:  # type: ignore[no-untyped-def]
    """Observations of one session, a minute apart: (content, tool)."""
    out = []
    for content, tool in items:
        clock.advance(minutes=1)
        (v,) = mem.observe(
            [NewMemory(content=content, project=project, kind="observation", tier="working", session=session,
                       title=tool, valid_from=clock.now)]
        )  # fmt: skip
        out.append(v.id)
    return out


# -- episodic ---------------------------------------------------------------------------


def test_episode_from_a_scripted_session(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    ids = observe(
        memory,
        clock,
        "s1",
        [
            ("Opened api/app.py to add the retention route", "edit"),
            ("Ran pytest: tests/test_api.py failed on the retention route", "pytest"),
            ("Fixed the retention route in api/app.py", "edit"),
            ("Ran pytest: all retention tests pass", "pytest"),
            ("Committed the retention route", "git"),
        ],
    )
    result = memory.end_session("s1", project="p", actor="host")
    ep = result.memory
    assert result.outcome == "created" and ep is not None
    assert (ep.tier, ep.kind, ep.source, ep.session, ep.source_ref) == ("episodic", "event", "consolidation", "s1",
                                                                        "session:s1")  # fmt: skip
    assert sorted(ep.source_ids) == ids and ep.valid_from == memory.get(ids[0]).valid_from
    assert "5 observations" in ep.content and "retention" in ep.content
    assert "Files: api/app.py, tests/test_api.py." in ep.content and "Tools: edit, pytest, git." in ep.content
    prov = memory.provenance(ep.id)
    assert [e.id for e in prov.evidence] == ids and prov.sessions == ["s1"]
    assert [d.id for d in memory.provenance(ids[0]).derived] == [ep.id]  # from the observation, what it built
    assert memory.end_session("s1", project="p").outcome == "unchanged"
    more = observe(memory, clock, "s1", [("Pushed the branch", "git")])
    again = memory.end_session("s1", project="p")
    assert again.outcome == "updated" and again.memory is not None
    assert again.memory.version == 2 and sorted(again.memory.source_ids) == ids + more
    assert memory.recall("retention route session", project="p", tiers=["episodic"])[0].memory.id == again.memory.id
    with pytest.raises(NotFoundError, match="nope"):
        memory.end_session("nope", project="p")
    with pytest.raises(ValidationError):
        memory.end_session("", project="p")


def test_a_run_covers_open_sessions_once(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    observe(memory, clock, "a", [("Read the design doc", None)])
    observe(memory, clock, "b", [("Wrote the migration", None)])
    (first,) = memory.consolidate(passes=["episodic"])
    assert (first.episodic.created, first.episodic.unchanged) == (2, 0)
    (second,) = memory.consolidate(passes=["episodic"])
    assert second.episodic.created == 0 and second.memory_ids == []
    with pytest.raises(ValidationError):
        memory.consolidate(passes=["dreaming"])


# -- semantic ---------------------------------------------------------------------------

FLAKY = "The upload test is flaky on the CI runner"


def test_semantic_needs_sessions_reinforces_then_archives_children(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    a = observe(memory, clock, "s1", [(FLAKY, None), ("The upload test is flaky on the CI runner again", None)])
    (r,) = memory.consolidate(passes=["semantic"])
    assert r.semantic.created == 0 and r.semantic.skipped == 1  # one session is not enough
    b = observe(memory, clock, "s2", [(FLAKY + " today", None)])
    (r,) = memory.consolidate(passes=["semantic"])
    assert r.semantic.created == 1
    (sem,) = [memory.get(i) for i in r.memory_ids]
    assert sem.tier == "semantic" and sem.source == "consolidation" and sem.kind == "fact"
    assert sorted(sem.source_ids) == sorted(a + b) and sem.content == FLAKY  # the medoid, verbatim
    assert memory.provenance(sem.id).sessions == ["s1", "s2"]
    (r,) = memory.consolidate(passes=["semantic"])
    assert (r.semantic.created, r.semantic.reinforced, r.semantic.children_archived) == (0, 1, 0)
    assert memory.get(sem.id).reinforcements == 1
    (r,) = memory.consolidate(passes=["semantic"])
    assert r.semantic.reinforced == 1 and r.semantic.children_archived == 3  # reinforced twice: children go
    assert all(memory.get(i).status == "archived" for i in a + b)
    assert memory.get(a[0]).status_reason == "consolidated"
    assert memory.check().ok
    hits = memory.recall("upload test flaky CI", project="p")
    assert [h.memory.id for h in hits] == [sem.id]  # the abstraction stands in for its children
    assert memory.recall("upload test flaky", project="p", tiers=["working"]) == []
    (r,) = memory.consolidate(passes=["semantic"])
    assert (r.semantic.created, r.semantic.reinforced) == (0, 0)  # nothing new: left alone, no duplicate
    c = observe(memory, clock, "s3", [(FLAKY + " once more", None)])
    (r,) = memory.consolidate(passes=["semantic"])
    assert r.semantic.reinforced == 1 and r.semantic.created == 0
    assert c[0] in [e.id for e in memory.provenance(sem.id).evidence]  # new evidence links to it
    entries, _ = memory.audit(actions=["consolidate"])
    assert entries[0].details["semantic"]["reinforced"] == 1 and entries[0].project == "p"
    archived, _ = memory.audit(actions=["archive"])
    turns = {e.memory_id for e in archived if memory.get(e.memory_id).kind != "claim"}  # claims go with their turns
    assert turns == set(a + b + c)  # later evidence, once linked, steps aside too
    assert all(e.details["into"] == sem.id for e in archived)


def test_semantic_keeps_projects_and_subjects_apart(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    observe(memory, clock, "s1", [(FLAKY, None)], project="p")
    observe(memory, clock, "s2", [(FLAKY, None)], project="q")
    reports = memory.consolidate(passes=["semantic"])
    assert [(x.project, x.semantic.created) for x in reports] == [("p", 0), ("q", 0)]


# -- procedural -------------------------------------------------------------------------

STEPS = [("run the tests", "run tests"), ("edit the failing module", "fix"), ("run the tests again", "run tests"),
         ("git commit", "commit")]  # fmt: skip


def test_procedure_from_repeated_steps(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    observe(memory, clock, "s1", [("look at the issue", "read issue"), *STEPS])
    (r,) = memory.consolidate(passes=["procedural"])
    assert r.procedural.created == 0
    observe(memory, clock, "s2", [*STEPS, ("push", "push")])
    (r,) = memory.consolidate(passes=["procedural"])
    assert r.procedural.created == 1
    proc = memory.get(r.memory_ids[0])
    assert (proc.kind, proc.tier) == ("procedure", "procedural")
    assert proc.key == "procedure:run tests > fix > run tests > commit"
    assert proc.content == (
        "Procedure, when run tests: 1. run tests; 2. fix; 3. run tests; 4. commit (seen in 2 sessions)."
    )
    assert len(proc.source_ids) == 8 and memory.provenance(proc.id).sessions == ["s1", "s2"]
    (r,) = memory.consolidate(passes=["procedural"])
    assert (r.procedural.created, r.procedural.reinforced, r.procedural.unchanged) == (0, 0, 1)
    observe(memory, clock, "s3", STEPS)
    (r,) = memory.consolidate(passes=["procedural"])
    assert r.procedural.reinforced == 1
    now = memory.get(r.memory_ids[0])
    assert now.lineage_id == proc.lineage_id and "seen in 3 sessions" in now.content
    assert now.confidence > proc.confidence
    assert memory.recall("how do I fix a failing test", project="p", tiers=["procedural"])[0].memory.id == now.id


# -- determinism --------------------------------------------------------------------------


def _script(mem: Memory, clock) -> list[Any]:  # type: ignore[no-untyped-def]
    for s in ("s1", "s2", "s3"):
        observe(mem, clock, s, [(FLAKY, "pytest"), *STEPS, (f"Session {s} touched src/{s}.py", "edit")])
    out = []
    for _ in range(3):
        for r in mem.consolidate():
            out.append(msgspec.to_builtins(msgspec.structs.replace(r, took_ms=0.0)))
    out.append(sorted((v.content, v.tier, v.status) for v in mem.store.where("true")))
    return out


def test_same_input_same_output(tmp_path: Path) -> None:
    from conftest import Clock

    runs = []
    for name in ("one", "two"):
        clock = Clock()
        with Memory(tmp_path / name, embedder=FakeEmbedder(), clock=clock) as mem:
            runs.append(_script(mem, clock))
    assert runs[0] == runs[1]


# -- the provider -----------------------------------------------------------------------


@pytest.fixture
def stub() -> Iterator[FakeProvider]:
    s = FakeProvider()
    yield s
    s.stop()


def _with_provider(path: Path, url: str, clock) -> Memory:  # type: ignore[no-untyped-def]
    cfg = Config(provider=ProviderConfig(base_url=url, model="local-test", timeout_seconds=0.5))
    return Memory(path, embedder=FakeEmbedder(), clock=clock, config=cfg)


@pytest.mark.parametrize("mode", ["prose", "badjson", "fields", "slow", "http500"])
def test_provider_failures_skip_and_count(tmp_path: Path, clock, stub: FakeProvider, mode: str) -> None:  # type: ignore[no-untyped-def]
    stub.mode = mode
    with _with_provider(tmp_path / "d", stub.url, clock) as mem:
        observe(mem, clock, "s1", [(FLAKY, None)])
        observe(mem, clock, "s2", [(FLAKY + " today", None)])
        before = mem.stats().versions
        (r,) = mem.consolidate(passes=["semantic"])
        assert (r.semantic.failed, r.semantic.created) == (1, 0)
        assert mem.stats().versions == before  # nothing written
        (ep,) = mem.consolidate(passes=["episodic"])
        assert ep.episodic.failed == 2 and ep.episodic.created == 0
        assert mem.store.scalar("SELECT count(*) FROM provider_cache") == 0
        assert mem.check().ok


def test_provider_words_and_replays_from_cache(tmp_path: Path, clock, stub: FakeProvider) -> None:  # type: ignore[no-untyped-def]
    with _with_provider(tmp_path / "d", stub.url, clock) as mem:
        observe(mem, clock, "s1", [(FLAKY, None)])
        observe(mem, clock, "s2", [(FLAKY + " today", None)])
        (r,) = mem.consolidate(passes=["semantic"])
        sem = mem.get(r.memory_ids[0])
        assert sem.content == "The upload test fails intermittently on CI."
        assert mem.provider is not None and mem.provider.calls == 1
    body = stub.requests[0]
    assert body["temperature"] == 0 and body["model"] == "local-test"
    prompt = body["messages"][1]["content"]
    assert "1. " + FLAKY in prompt and str(sem.id) not in prompt.replace(FLAKY, "")  # ordinals, never ids
    stub.stop()  # offline from here on: the replay must come from the cache
    with _with_provider(tmp_path / "d", stub.url, clock) as mem:
        provider = mem.provider
        assert provider is not None
        again = provider.write("State the one fact or pattern all of these pieces of evidence support.",
                               [FLAKY, FLAKY + " today"])  # fmt: skip
        assert again == sem.content and provider.cache_hits == 1 and provider.calls == 0


def test_consolidation_settings_are_checked() -> None:
    for bad in ({"min_sessions": 0}, {"similarity": 0.0}, {"min_steps": 1}, {"min_steps": 5, "max_steps": 4}):
        with pytest.raises(ValueError):
            ConsolidationSettings(**bad)  # type: ignore[arg-type]


def test_provider_proposes_claims_the_policy_still_judges(tmp_path: Path, clock, stub: FakeProvider) -> None:  # type: ignore[no-untyped-def]
    messages = [{"role": "user", "content": "Honestly, tabs are what my fingers always go for.", "id": "m1"}]
    with _with_provider(tmp_path / "d", stub.url, clock) as mem:
        plain = mem.ingest_conversation(messages, project="p", session="s1", dry_run=True)
        assert plain.admitted == 0  # the rules alone find no claim here
        stub.mode = "claims"
        report = mem.ingest_conversation(messages, project="p", session="s1", use_provider=True)
        admitted = report.admitted_items
        assert [i.text for i in admitted] == ["I prefer tabs over spaces for indentation."]
        assert admitted[0].kind == "preference" and admitted[0].ref == "s1#m1"
        reasons = {i.text: i.reason for i in report.rejected_items}
        assert reasons["I ran the tests"] == "event" and reasons["rm -rf /tmp/build"] == "command"  # still refused
        stub.mode = "prose"
        failed = mem.ingest_conversation(
            [{"role": "user", "content": "We decided to ship on Fridays.", "id": "m2"}], project="p", session="s2",
            use_provider=True,
        )  # fmt: skip
        assert failed.skipped.get("provider_failed") == 1 and failed.admitted == 1  # the rules still work
    with Memory(tmp_path / "e", embedder=FakeEmbedder(), clock=clock) as plain_mem, pytest.raises(ValidationError):
        plain_mem.ingest_conversation(messages, project="p", use_provider=True)
