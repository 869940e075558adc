"""Lifecycle over HTTP: retention, sweep, archived listing, restore, pin, governance delete, audit, schedule."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from agentmem import Memory
from api.app import create_app
from api.settings import load
from tests.test_api import ENV, auth, remember

BACKENDS = ("duckdb", "postgres")  # tests taking `memory` run on both (see conftest.py)


@pytest.fixture
def client(memory: Memory) -> Iterator[TestClient]:  # type: ignore[type-arg]
    with TestClient(create_app(load(env={**ENV, "AGENTMEM_SWEEP_EVERY_MINUTES": "0"}), mem=memory)) as c:
        yield c


def ok(r: Any, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json()


def test_sweep_restore_and_audit(client: TestClient, memory: Memory, clock) -> None:  # type: ignore[no-untyped-def,type-arg]
    obs = remember(client, "Saw the nightly job run long", kind="observation")["memory"]["id"]
    fact = remember(client, "The nightly job runs at 02:00", kind="fact")["memory"]["id"]
    clock.advance(days=60)
    r = ok(client.get(f"/v1/memories/{obs}/retention", headers=auth("read")))
    assert r["tier"] == "evictable" and r["score"] < 0.1
    assert ok(client.get(f"/v1/memories/{fact}/retention", headers=auth("read")))["tier"] in ("hot", "warm")
    dry = ok(client.post("/v1/sweep", json={"dry_run": True}, headers=auth("admin")))
    assert [i["id"] for i in dry["items"]] == [obs] and memory.get(obs).status == "active"
    done = ok(client.post("/v1/sweep", json={}, headers=auth("admin")))
    assert done["archived"] == 1 and memory.get(obs).status == "archived"
    listed = ok(client.get("/v1/memories", params={"status": "archived"}, headers=auth("read")))["items"]
    assert [m["id"] for m in listed] == [obs]
    assert ok(client.post("/v1/recall", json={"query": "nightly job run long"}, headers=auth("read")))["hits"][0][
        "memory"
    ]["id"] == fact
    back = ok(client.post(f"/v1/memories/{obs}/restore", json={}, headers=auth("write")))
    assert back["status"] == "active"
    again = client.post(f"/v1/memories/{obs}/restore", json={}, headers=auth("write"))
    assert again.status_code == 409 and "not archived" in again.json()["error"]["message"]
    assert client.post(f"/v1/memories/{obs}/restore", json={}, headers=auth("wrong")).status_code == 404
    bad = client.post(f"/v1/memories/{obs}/restore", json={"ttl_days": -1}, headers=auth("write"))
    assert bad.status_code == 400 and "ttl_days" in bad.json()["error"]["message"]  # bad input before the lookup
    pinned = ok(client.post(f"/v1/memories/{obs}/pin", json={"pinned": True}, headers=auth("write")))
    assert pinned["pinned"] is True
    audit = ok(client.get("/v1/audit", params={"project": "shop"}, headers=auth("read")))
    assert [(e["action"], e["actor"]) for e in audit["items"]] == [("pin", "w"), ("restore", "w"), ("archive", "a")]
    archived = ok(client.get("/v1/audit", params={"action": "archive"}, headers=auth("read")))["items"]
    assert archived[0]["memory_id"] == obs
    bad = client.get("/v1/audit", params={"action": "nap"}, headers=auth("read"))
    assert bad.status_code == 400 and "nap" in bad.json()["error"]["message"]
    assert client.get("/v1/audit", params={"since": "soon"}, headers=auth("read")).status_code == 400
    assert client.post("/v1/sweep", json={"limit": 0}, headers=auth("admin")).status_code == 400
    assert client.post("/v1/sweep", json={"threshold": 2}, headers=auth("admin")).status_code == 400
    assert client.post("/v1/sweep", json={"bogus": 1}, headers=auth("admin")).status_code == 400


def test_supersession_is_audited_with_the_token(client: TestClient) -> None:  # type: ignore[type-arg]
    remember(client, "Prod runs Postgres 14", key="db")
    new = remember(client, "Prod runs Postgres 16", key="db")
    (entry,) = ok(client.get("/v1/audit", params={"action": "supersede"}, headers=auth("read")))["items"]
    assert entry["actor"] == "w" and entry["details"]["by"] == new["memory"]["id"]


def test_governance_delete_over_http(client: TestClient, memory: Memory) -> None:  # type: ignore[type-arg]
    secret = remember(client, "The door code is quokkazanzibar 4411")["memory"]["id"]
    keep = remember(client, "The door is painted green")["memory"]["id"]
    before = memory.stats()
    for body in (
        {"ids": [secret]},  # no reason
        {"ids": [secret], "reason": ""},
        {"reason": "why"},  # nothing chosen
        {"reason": "why", "ids": [secret], "project": "shop"},
        {"reason": "why", "kinds": ["gossip"]},
        {"reason": "why", "ids": ["x"]},
        {"reason": "why", "project": "shop", "created_from": "2030-01-01T00:00:00Z", "created_to": "2020-01-01"},
    ):
        r = client.post("/v1/delete", json=body, headers=auth("admin"))
        assert r.status_code == 400 and r.json()["error"]["message"], (body, r.text)
    assert client.post("/v1/delete", json={"ids": [secret], "reason": "x"}, headers=auth("write")).status_code == 403
    assert memory.stats() == before
    dry_body = {"ids": [secret], "reason": "leaked", "dry_run": True}
    dry = ok(client.post("/v1/delete", json=dry_body, headers=auth("admin")))
    assert dry["versions"] == 1 and memory.get(secret).content
    done = ok(client.post("/v1/delete", json={"ids": [secret], "reason": "leaked"}, headers=auth("admin")))
    assert done["versions"] == 1 and done["audit_id"]
    tomb = ok(client.get(f"/v1/memories/{secret}", headers=auth("read")))
    assert tomb["status"] == "deleted" and tomb["content"] == ""
    hits = ok(client.post("/v1/recall", json={"query": "door code quokkazanzibar"}, headers=auth("read")))["hits"]
    assert [h["memory"]["id"] for h in hits] == [keep]
    (entry,) = ok(client.get("/v1/audit", params={"action": "delete"}, headers=auth("admin")))["items"]
    assert (entry["actor"], entry["affected"], entry["reason"]) == ("a", 1, "leaked")
    assert "quokkazanzibar" not in msgspec.json.encode(entry).decode()
    assert memory.check().ok


def test_scheduled_sweep_in_the_server(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    old = memory.remember("Saw a slow query on Monday", project="shop", kind="observation").memory
    clock.advance(days=90)
    settings = load(env={**ENV, "AGENTMEM_SWEEP_EVERY_MINUTES": "0.002"})  # every 0.12 s
    with TestClient(create_app(settings, mem=memory)) as c:
        deadline = time.monotonic() + 30
        while memory.get(old.id).status != "archived" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert memory.get(old.id).status == "archived"
        (entry,) = c.get("/v1/audit", params={"action": "archive"}, headers=auth("read")).json()["items"]
        assert entry["actor"] == "scheduler"


def test_settings_for_kinds_and_retention(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from agentmem import ValidationError

    path = tmp_path / "agentmem.toml"
    path.write_text(
        'sweep_every_minutes = 5\n[kinds.config]\nhalf_life_days = 45\nstart_confidence = 0.7\n'
        '[kinds.runbook]\nhalf_life_days = "never"\nstart_confidence = 0.9\n[retention]\narchive_below = 0.05\n'
    )
    s = load(path, env={})
    cfg = s.config()
    assert cfg.kinds["config"].half_life_days == 45 and cfg.kinds["runbook"].half_life_days is None
    assert cfg.kinds["fact"].half_life_days == 365 and cfg.retention.archive_below == 0.05
    for bad in (
        "[kinds.config]\nhalf_life_days = -3\nstart_confidence = 0.7\n",
        "[kinds.Bad-Name]\nhalf_life_days = 3\nstart_confidence = 0.7\n",
        "[retention]\nconfidence = 0.9\n",
        "sweep_every_minutes = -1\n",
        "sweep_evrey_minutes = 5\n",
    ):
        path.write_text(bad)
        with pytest.raises(ValidationError):
            load(path, env={})


def test_consolidation_over_http(client: TestClient, memory: Memory) -> None:  # type: ignore[type-arg]
    for session in ("s1", "s2"):
        body = {"observations": [{"content": "The upload test is flaky on the CI runner", "session": session}]}
        ok(client.post("/v1/observations", json=body, headers=auth("write")), 201)
    ep = ok(client.post("/v1/sessions/s1/end", json={}, headers=auth("write")))
    assert ep["outcome"] == "created" and ep["memory"]["tier"] == "episodic"
    missing = client.post("/v1/sessions/nope/end", json={}, headers=auth("write"))
    assert missing.status_code == 404 and "nope" in missing.json()["error"]["message"]
    (report,) = ok(client.post("/v1/consolidate", json={"passes": ["semantic"]}, headers=auth("write")))
    assert report["project"] == "shop" and report["semantic"]["created"] == 1
    sem = report["memory_ids"][0]
    prov = ok(client.get(f"/v1/memories/{sem}/provenance", headers=auth("read")))
    assert prov["sessions"] == ["s1", "s2"] and len(prov["evidence"]) == 2
    query = {"query": "flaky upload test", "tiers": ["semantic"]}
    hits = ok(client.post("/v1/recall", json=query, headers=auth("read")))
    # the abstraction, beside the claim its turns made (a claim is semantic too, but said, not consolidated)
    assert [h["memory"]["id"] for h in hits["hits"] if h["memory"]["kind"] != "claim"] == [sem]
    bad = client.post("/v1/consolidate", json={"passes": ["dreaming"]}, headers=auth("write"))
    assert bad.status_code == 400 and "dreaming" in bad.json()["error"]["message"]
    assert client.post("/v1/consolidate", json={"projects": ["other"]}, headers=auth("write")).status_code == 403
    assert client.get(f"/v1/memories/{sem}/provenance", headers=auth("wrong")).status_code == 404


@pytest.mark.parametrize("source", ["docs/operations/configuration.md", "api/settings.py"])
def test_documented_config_examples_load(tmp_path, source: str) -> None:  # type: ignore[no-untyped-def]
    """The TOML shown to users is a valid config (with a real secret in place of the elided hash)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / source).read_text()
    block = re.search(r"```toml\n(.*?)```", text, re.S)
    assert block is not None
    toml = re.sub(r'(?m)^sha256 = ".*$', 'token = "a-secret-of-sixteen-chars"', block.group(1))
    path = tmp_path / "agentmem.toml"
    path.write_text(toml)
    settings = load(path, env={})
    cfg = settings.config()
    assert settings.consolidate_every_minutes == 60 and settings.provider is not None
    assert cfg.kinds["config"].half_life_days == 45 and cfg.consolidation.min_sessions == 2
