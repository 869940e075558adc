"""Adjudication by a model of the pairs the supersession rules leave undecided, against a scripted
OpenAI-compatible endpoint on a real socket (tests/fakes.py FakeProvider): what each ruling does,
the reply cache, cache-only replay, the fallback when the provider fails, the death record."""

from __future__ import annotations

import json
import logging
import os
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentmem import Config, Memory, NewMemory
from agentmem.adjudicate import Pending, parse, request
from agentmem.errors import ProviderCacheMissError, ProviderError
from agentmem.provider import CACHE_ONLY_ENV, ProviderConfig
from fakes import FakeEmbedder, FakeProvider
from servers import TOKEN, Server

BACKENDS = ("duckdb", "postgres")  # tests taking `open_memory` run on both (see conftest.py)
OLD = "We keep the release notes in the wiki"
NEW = "We keep the release notes in the repository docs folder"  # the hint band: Jaccard 0.6, no rule


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    p = FakeProvider()
    p.mode = "script"
    yield p
    p.stop()


def ruling(*verdicts: tuple[str, str]) -> Any:
    """A script answering every request with these rulings for statements 1, 2, ..."""
    reply = {"rulings": [{"statement": n, "ruling": r, "reason": why} for n, (r, why) in enumerate(verdicts, 1)]}
    return lambda body: json.dumps(reply)


def opened(where: Path | Any, clock, url: str, **provider: Any) -> Memory:  # type: ignore[no-untyped-def]
    """A Memory whose provider at `url` adjudicates: in the directory `where`, or from `open_memory`."""
    cfg = Config(provider=ProviderConfig(base_url=url, model="judge", timeout_seconds=0.5, adjudicate=True, **provider))
    if isinstance(where, Path):
        return Memory(where, embedder=FakeEmbedder(), clock=clock, config=cfg)
    return where(embedder=FakeEmbedder(), clock=clock, config=cfg)  # type: ignore[no-any-return]


def two(mem: Memory, clock, old: str = OLD, new: str = NEW, project: str = "p") -> tuple[Any, Any]:  # type: ignore[no-untyped-def]
    first = mem.remember(old, project=project)
    clock.advance(days=1)
    second = mem.remember(new, project=project)
    return first, second


def prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][1]["content"])


def test_update_supersedes_and_the_reason_is_the_death_record(open_memory, clock, provider: FakeProvider) -> None:  # type: ignore[no-untyped-def]
    provider.script = ruling(("update", "the notes moved from the wiki to the repository"))
    with opened(open_memory, clock, provider.url) as mem:
        first, second = two(mem, clock)
        assert second.outcome == "superseded" and second.superseded_id == first.memory.id
        assert second.reason == "model update: the notes moved from the wiki to the repository"
        old = mem.get(first.memory.id)
        assert old.status == "superseded" and old.superseded_by == second.memory.id
        assert old.supersede_reason == second.reason
        assert [v.id for v in mem.history(second.memory.id)] == [first.memory.id, second.memory.id]
        assert [h.memory.id for h in mem.recall("where are the release notes?", project="p")] == [second.memory.id]
        entries, _ = mem.audit(actions=["supersede"])
        assert [e.reason for e in entries] == [second.reason]
        assert mem.check().ok
    (body,) = provider.requests
    assert body["temperature"] == 0 and body["model"] == "judge"
    text = prompt(body)
    assert f"New statement (2026-01-02): {NEW}" in text and f"1. (2026-01-01) {OLD}" in text
    assert text.endswith(f"Evidence:\n1. (2026-01-01) {OLD}")  # by ordinal: no id (the purity test below)


def test_a_same_slot_pair_outside_the_hint_band_is_put_too(tmp_path: Path, clock, provider: FakeProvider) -> None:  # type: ignore[no-untyped-def]
    provider.script = ruling(("update", "a fifth project since the fourth"))
    old, new = (
        "I've completed 4 projects since starting painting classes",
        "I just finished my 5th project since starting painting classes",
    )
    with opened(tmp_path / "d", clock, provider.url) as mem:
        first, second = two(mem, clock, old, new)
        assert second.near_duplicates == [] and second.superseded_id == first.memory.id  # no hint: the slot test
        assert second.reason == "model update: a fifth project since the fourth"
    assert prompt(provider.requests[0]).endswith(f"1. (2026-01-01) {old}")


@pytest.mark.parametrize(
    ("verdict", "superseded"), [("contradiction", True), ("refinement", True), ("unrelated", False)]
)
def test_what_each_ruling_does(tmp_path: Path, clock, provider: FakeProvider, verdict: str, superseded: bool) -> None:  # type: ignore[no-untyped-def]
    provider.script = ruling((verdict, "because"))
    with opened(tmp_path / "d", clock, provider.url) as mem:
        first, second = two(mem, clock)
        assert second.outcome == ("superseded" if superseded else "created")
        assert mem.get(first.memory.id).status == ("superseded" if superseded else "active")
        if superseded:
            assert mem.get(first.memory.id).supersede_reason == f"model {verdict}: because"
        else:
            assert [n.id for n in second.near_duplicates] == [first.memory.id]  # still named, both kept


def test_the_rules_decide_first_and_no_pair_no_call(tmp_path: Path, clock, provider: FakeProvider) -> None:  # type: ignore[no-untyped-def]
    provider.script = ruling(("unrelated", "never asked"))
    with opened(tmp_path / "d", clock, provider.url) as mem:
        first, moved = two(mem, clock, "We deploy the shop API on Fly.io", "We're on Render now for the shop API")
        assert moved.reason == "moved"  # a rule was sure: the model is not asked
        mem.remember("Lunch is at noon", project="p")  # nothing similar
        clock.advance(days=1)
        same_time = mem.remember("We keep the release notes in the wiki", project="q")
        mem.remember(NEW, project="q")  # the same moment as its candidate: not older, not put to the model
        assert mem.get(same_time.memory.id).status == "active"
        assert provider.requests == []


def test_replies_cached_by_request_and_cache_only_replays(open_memory, clock, provider, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    provider.script = ruling(("update", "moved"))
    with opened(open_memory, clock, provider.url) as mem:
        two(mem, clock)
        assert mem.provider is not None and (mem.provider.calls, mem.provider.cache_hits) == (1, 0)
        clock.now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
        again = two(mem, clock, project="other")[1]  # other ids, same texts and dates: the same request
        assert again.outcome == "superseded" and again.reason == "model update: moved"
        assert (mem.provider.calls, mem.provider.cache_hits) == (1, 1)
        ((_, model, reply),) = mem.store.cached_replies()  # one request, kept once
        assert model == "judge" and json.loads(reply)["rulings"][0]["ruling"] == "update"
    assert len(provider.requests) == 1
    provider.stop()  # no model from here on
    for how in ("config", "environment"):
        clock.now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
        if how == "environment":
            monkeypatch.setenv(CACHE_ONLY_ENV, "1")
        with opened(open_memory, clock, provider.url, cache_only=how == "config") as mem:
            replayed = two(mem, clock, project=f"replay-{how}")[1]
            assert replayed.reason == "model update: moved"
            before = mem.stats().versions
            clock.advance(days=1)
            with pytest.raises(ProviderCacheMissError, match="cache-only mode: no cached reply"):
                mem.remember("We keep the release notes in a shared drive folder", project=f"replay-{how}")
            assert mem.stats().versions == before  # nothing written
            assert mem.check().ok


@pytest.mark.parametrize("failure", ["down", "slow", "prose", "wrong count", "unknown ruling", "http500"])
def test_a_failing_provider_leaves_the_rules_decision(tmp_path, clock, provider, failure: str, caplog) -> None:  # type: ignore[no-untyped-def]
    provider.script = {
        "wrong count": ruling(("update", "x"), ("update", "y")),
        "unknown ruling": ruling(("obsolete", "x")),
    }.get(failure, ruling(("update", "x")))
    if failure in ("slow", "prose", "http500"):
        provider.mode = failure
    if failure == "down":
        provider.stop()
    with opened(tmp_path / "d", clock, provider.url) as mem, caplog.at_level(logging.WARNING, "agentmem"):
        first, second = two(mem, clock)
        assert second.outcome == "created" and [n.id for n in second.near_duplicates] == [first.memory.id]
        assert mem.get(first.memory.id).status == "active"
        assert "adjudication skipped, the supersession rules decide" in caplog.text
        assert mem.store.scalar("SELECT count(*) FROM provider_cache") == 0  # a bad reply is not kept


def test_asked_outside_the_write_lock_and_rechecked(open_memory, clock, provider: FakeProvider) -> None:  # type: ignore[no-untyped-def]
    seen: dict[str, Any] = {}
    with opened(open_memory, clock, provider.url) as mem:
        first = mem.remember(OLD, project="p")

        def script(body: dict[str, Any]) -> str:
            lock = mem.engine.writer.lock
            seen["free"] = lock.acquire(blocking=False)  # from the server's thread: nobody holds it
            if seen["free"]:
                lock.release()
            # another writer changes the candidate while the model thinks (it would deadlock if the
            # lock were held): the ruling was on the old text and must not apply to the new one
            seen["revised"] = mem.revise(first.memory.id, "We keep the release notes in Notion", reason="edit")
            return ruling(("update", "moved"))(body)

        provider.script = script
        clock.advance(days=1)
        second = mem.remember(NEW, project="p")
        assert seen["free"] is True
        revised = seen["revised"].memory
        assert mem.get(revised.id).status == "active"  # the ruling was about a text no longer current
        assert second.outcome == "created" and second.superseded_id is None
        assert mem.check().ok


def test_without_adjudicate_the_provider_is_not_asked(tmp_path: Path, clock, provider: FakeProvider) -> None:  # type: ignore[no-untyped-def]
    cfg = Config(provider=ProviderConfig(base_url=provider.url, model="judge"))  # consolidation only
    with Memory(tmp_path / "d", embedder=FakeEmbedder(), clock=clock, config=cfg) as mem:
        assert two(mem, clock)[1].outcome == "created"
    assert provider.requests == []


def test_the_request_is_a_pure_function_and_replies_are_checked(tmp_path: Path, clock, provider: FakeProvider) -> None:  # type: ignore[no-untyped-def]
    with opened(tmp_path / "d", clock, provider.url) as mem:
        a = mem.remember(OLD, project="p").memory
        b = mem.remember(OLD, project="q").memory  # another id, same text and date
        assert mem.provider is not None
        when = datetime(2026, 3, 1, tzinfo=UTC)
        assert request(mem.provider, Pending(NEW, when, [a])) == request(mem.provider, Pending(NEW, when, [b]))
    ok = json.dumps({"rulings": [{"statement": 2, "ruling": "unrelated", "reason": " another  fact "},
                                 {"statement": 1, "ruling": "update", "reason": "new"}]})  # fmt: skip
    got = [(v.statement, v.ruling, v.reason) for v in parse(ok, 2)]
    assert got == [(1, "update", "new"), (2, "unrelated", "another fact")]
    one = {"statement": 1, "ruling": "update"}
    for bad in ("Sure, it is an update.", {"rulings": []}, {"rulings": [{**one, "reason": ""}]}, {"rulings": [one]},
                {"rulings": [{**one, "reason": "x"}, {**one, "reason": "y"}]}):  # fmt: skip
        with pytest.raises(ProviderError):
            parse(bad if isinstance(bad, str) else json.dumps(bad), 1)


def test_the_real_server_and_model_keep_the_ruling_in_history(tmp_path: Path, provider: FakeProvider) -> None:
    """Through `agentmem serve` (the config file's [provider], the packaged model) over HTTP."""
    provider.script = ruling(("update", "the notes moved from the wiki to the repository"))
    config = tmp_path / "agentmem.toml"
    config.write_text(
        textwrap.dedent(f"""
        [provider]
        base_url = "{provider.url}"
        model = "judge"
        adjudicate = true
        timeout_seconds = 5
    """)
    )
    server = Server(tmp_path / "data", env={"AGENTMEM_CONFIG": str(config)})
    try:
        server.start()
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=server.url, headers=auth, timeout=30) as http:
            old = http.post("/v1/memories", json={"content": OLD, "project": "shop",
                                                  "valid_from": "2026-01-01T00:00:00Z"}).json()  # fmt: skip
            new = http.post("/v1/memories", json={"content": NEW, "project": "shop"})
            assert new.status_code in (200, 201), new.text
            body = new.json()
            if body["outcome"] != "superseded" or not str(body.get("reason", "")).startswith("model"):
                pytest.fail(f"expected the model's ruling to supersede: {body} (requests: {len(provider.requests)})")
            history = http.get(f"/v1/memories/{body['memory']['id']}/history").json()
            assert [v["id"] for v in history] == [old["memory"]["id"], body["memory"]["id"]]
            dead = history[0]
            assert dead["status"] == "superseded" and dead["superseded_by"] == body["memory"]["id"]
            assert dead["supersede_reason"] == "model update: the notes moved from the wiki to the repository"
            assert len(provider.requests) == 1
    finally:
        server.close()
    assert os.path.exists(tmp_path / "data" / "agentmem.duckdb")


def test_the_viewer_says_a_model_ruled() -> None:
    from api.viewer.pages import why

    assert (
        why("model update: moved", 0.6, None, None)
        == "a model ruled the newer memory an update: moved (similarity 0.600)"
    )
    assert (
        why("model refinement: more detail", None, None, None)
        == "a model ruled the newer memory a refinement: more detail"
    )


def test_cache_only_consolidation_fails_instead_of_counting_a_failure(tmp_path: Path, clock, provider) -> None:  # type: ignore[no-untyped-def]
    cfg = Config(provider=ProviderConfig(base_url=provider.url, model="judge", cache_only=True))
    with Memory(tmp_path / "d", embedder=FakeEmbedder(), clock=clock, config=cfg) as mem:
        for session in ("s1", "s2"):
            clock.advance(minutes=1)
            seen = NewMemory(content="The upload test is flaky on the CI runner", project="p", kind="observation",
                             session=session, valid_from=clock.now)  # fmt: skip
            mem.observe([seen])
        with pytest.raises(ProviderCacheMissError):
            mem.consolidate(passes=["semantic"])
    assert provider.requests == []
