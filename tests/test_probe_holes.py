"""Issue 34's holes in what one project may plant in, learn of or forge for another, and in what
bad data gets through: each refused with a 4xx that says what is wrong, writing nothing.
(Embedding reuse across projects, finding 7, is tested in test_group_commit.py.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from litestar.testing import TestClient

from agentmem import Memory, validate
from agentmem.client import ndjson_lines
from agentmem.errors import ValidationError
from api.app import create_app
from api.settings import load
from fakes import FakeEmbedder
from servers import app_client

BACKENDS = ("duckdb", "postgres")  # tests taking `memory` run on both (see conftest.py)

SECRETS = {"evil": "evil-project-admin-secret-01", "root": "root-admin-of-everything-02"}
T = "2020-01-01T00:00:00Z"


def auth(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {SECRETS[who]}"}


@pytest.fixture
def roots(tmp_path: Path) -> Path:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# Decisions\n\n- Deploys happen on Fridays.\n")
    return tmp_path / "notes"


@pytest.fixture
def client(memory: Memory, roots: Path) -> Iterator[TestClient]:  # type: ignore[type-arg]
    env = {
        "AGENTMEM_TOKENS": f"ev:{SECRETS['evil']}:admin:evil;root:{SECRETS['root']}:admin:*",
        "AGENTMEM_INGEST_ROOTS": f"{roots}=evil",
    }
    with TestClient(create_app(load(env=env), mem=memory)) as c:
        yield c


def _header(embedder: FakeEmbedder) -> str:
    return json.dumps({"type": "header", "format": "agentmem-export", "format_version": 1, "schema_version": 1,
                       "model": embedder.name, "dim": embedder.dim, "exported_at": T})  # fmt: skip


def _memory(memory_id: int, content: str, project: str = "evil", **fields: Any) -> dict[str, Any]:
    return {"id": memory_id, "lineage_id": memory_id, "version": 1, "parent_id": None, "is_latest": True,
            "status": "active", "content": content, "tier": "semantic", "kind": "fact", "project": project,
            "source": "import", "salience": 0.5, "confidence": 0.7, "created_at": T, "valid_from": T,
            "last_reinforced_at": T, **fields}  # fmt: skip


def _file(embedder: FakeEmbedder, *lines: dict[str, Any]) -> bytes:
    return "\n".join([_header(embedder), *(json.dumps(x) for x in lines)]).encode() + b"\n"


def _vectors(memory: Memory) -> dict[str, list[float]]:
    """Each stored version's vector, by content (the last version of a text wins: see `_all_vectors`)."""
    return {c: v for c, v in _all_vectors(memory)}


def _all_vectors(memory: Memory) -> list[tuple[str, list[float]]]:
    """Each stored version's content and vector, one per version."""
    rows = [json.loads(x) for x in memory.export_lines()]
    return [(r["memory"]["content"], r["embedding"]) for r in rows if r["type"] == "memory"]


def _refused(r: Any, *words: str, status: int = 400) -> None:
    assert r.status_code == status, (r.status_code, r.text)
    message = r.json()["error"]["message"]
    assert all(w in message for w in words), message


# -- 2. a project admin cannot plant the vector another project's text is searched by


def test_only_a_whole_service_admin_imports_its_own_vectors(client: TestClient, memory: Memory, embedder) -> None:  # type: ignore[type-arg,no-untyped-def]
    planted = [1.0] + [0.0] * (embedder.dim - 1)
    text = "Deploy keys live in the vault"
    line = {"type": "memory", "memory": _memory(10, text), "embedding": planted}
    r = client.post("/v1/import", content=_file(embedder, line), headers=auth("evil"))
    assert r.status_code == 201, r.text
    model = FakeEmbedder().embed([text])[0]
    assert np.allclose(_vectors(memory)[text], model)  # embedded here, the file's vector ignored
    memory.remember(text, project="victim")  # the same text in another project: the model's vector too
    mine = [v for c, v in _all_vectors(memory) if c == text]
    assert len(mine) == 2 and all(np.allclose(v, model) for v in mine)
    own = [0.0, 1.0] + [0.0] * (embedder.dim - 2)
    line = {"type": "memory", "memory": _memory(20, "A root's own vector", project="other"), "embedding": own}
    assert client.post("/v1/import", content=_file(embedder, line), headers=auth("root")).status_code == 201
    assert _vectors(memory)["A root's own vector"] == own  # an admin of every project is trusted


# -- 3. imported audit entries are the importer's, and marked


def test_imported_audit_entries_name_the_importer(client: TestClient, memory: Memory, embedder) -> None:  # type: ignore[type-arg,no-untyped-def]
    forged = {"id": 7, "created_at": T, "action": "delete", "actor": "root", "project": "evil", "memory_id": 10,
              "lineage_id": 10, "affected": 1, "reason": "GDPR request", "details": {"imported": False}}  # fmt: skip
    body = _file(embedder, {"type": "memory", "memory": _memory(10, "A fact")}, {"type": "audit", "entry": forged})
    assert client.post("/v1/import", content=body, headers=auth("evil")).status_code == 201
    entries = client.get("/v1/audit", params={"project": "evil"}, headers=auth("evil")).json()["items"]
    entry = next(e for e in entries if e["reason"] == "GDPR request")
    assert entry["actor"] == "ev" and entry["details"] == {"imported": True, "imported_actor": "root"}
    assert entry["action"] == "delete" and entry["created_at"].startswith("2020")  # kept, but not as root's


def test_an_audit_entry_of_no_project_is_imported_by_a_whole_service_admin_only(
    client: TestClient, memory: Memory, embedder
) -> None:  # type: ignore[type-arg,no-untyped-def]
    entry = {"id": 7, "created_at": T, "action": "rebuild", "actor": "root", "project": None, "affected": 3}
    body = _file(embedder, {"type": "memory", "memory": _memory(10, "A fact")}, {"type": "audit", "entry": entry})
    before = memory.audit(limit=100)[0]
    _refused(client.post("/v1/import", content=body, headers=auth("evil")), "audit entry 7", "admin")
    assert memory.audit(limit=100)[0] == before and memory.stats().versions == 0
    assert client.post("/v1/import", content=body, headers=auth("root")).status_code == 201


# -- 6. a project admin may not rebuild every project, nor read the whole service's count


def test_a_project_admin_may_not_rebuild_every_project(client: TestClient) -> None:  # type: ignore[type-arg]
    _refused(client.post("/v1/rebuild", headers=auth("evil")), "every project", status=403)
    _refused(client.get("/v1/rebuild", headers=auth("evil")), "every project", status=403)
    assert client.post("/v1/rebuild", headers=auth("root")).status_code == 202
    assert client.get("/v1/rebuild", headers=auth("root")).status_code == 200


# -- 8, 9. numbers a store cannot hold


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"reinforcements": 2**31}, "reinforcements"),
        ({"accesses": 2**31}, "accesses"),
    ],
)
def test_an_import_with_a_count_past_32_bits_is_a_400(
    client: TestClient, memory: Memory, embedder, fields: dict[str, Any], words: str
) -> None:  # type: ignore[type-arg,no-untyped-def]
    line = {"type": "memory", "memory": _memory(11, "A counted fact", **fields)}
    _refused(client.post("/v1/import", content=_file(embedder, line), headers=auth("root")), words)
    assert memory.stats().versions == 0
    line = {"type": "memory", "memory": _memory(11, "A counted fact", reinforcements=2**31 - 1, accesses=2**31 - 1)}
    assert client.post("/v1/import", content=_file(embedder, line), headers=auth("root")).status_code == 201


@pytest.mark.parametrize("value", [1e300, 3.5e38, -1e39])
def test_an_embedding_past_float32_is_a_400(client: TestClient, memory: Memory, embedder, value: float) -> None:  # type: ignore[type-arg,no-untyped-def]
    vector = [value] + [0.0] * (embedder.dim - 1)
    line = {"type": "memory", "memory": _memory(12, "An odd vector"), "embedding": vector}
    _refused(client.post("/v1/import", content=_file(embedder, line), headers=auth("root")), "not finite")
    assert memory.stats().versions == 0


def test_a_nul_in_an_ingest_path_is_a_400(client: TestClient, memory: Memory, roots: Path) -> None:  # type: ignore[type-arg]
    before = memory.audit(limit=100)[0]
    for route in ("/v1/ingest/notes", "/v1/ingest/code"):
        body = {"path": f"{roots}/a\x00b", "project": "evil"}
        _refused(client.post(route, json=body, headers=auth("evil")), "NUL")
    assert memory.audit(limit=100)[0] == before and memory.stats().versions == 0
    with pytest.raises(ValidationError, match="NUL"):
        memory.ingest_notes(f"{roots}\x00", project="evil")
    assert memory.audit(limit=100)[0] == before


# -- 12. validation gaps


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029", "\x9f", "\x0b"])
@pytest.mark.parametrize("field", ["key", "session", "agent", "project", "source_ref"])
def test_names_refuse_line_separators_and_control_characters(
    client: TestClient, memory: Memory, field: str, char: str
) -> None:  # type: ignore[type-arg]
    body = {"content": "A fact with an odd name", "project": "evil", field: f"a{char}b"}
    _refused(client.post("/v1/memories", json=body, headers=auth("root")), field, "separators")
    assert memory.stats().versions == 0


def test_a_time_past_year_9999_in_utc_is_reported_as_such(client: TestClient) -> None:  # type: ignore[type-arg]
    body = {"query": "anything", "project": "evil", "as_of": "9999-12-31T23:59:59-05:00"}
    _refused(client.post("/v1/recall", json=body, headers=auth("evil")), "as_of", "after year 9999")
    body["as_of"] = "0001-01-01T00:00:00+05:00"
    _refused(client.post("/v1/recall", json=body, headers=auth("evil")), "as_of", "before year 1")


def test_an_empty_session_is_refused_everywhere(client: TestClient, memory: Memory) -> None:  # type: ignore[type-arg]
    before = memory.audit(limit=100)[0]
    body = {"messages": [{"role": "user", "content": "I live in Oslo."}], "project": "evil", "session": ""}
    _refused(client.post("/v1/ingest/conversation", json=body, headers=auth("evil")), "session may not be empty")
    obs = {"observations": [{"content": "ran the tests", "project": "evil", "session": ""}]}
    _refused(client.post("/v1/observations", json=obs, headers=auth("evil")), "session may not be empty")
    assert memory.audit(limit=100)[0] == before and memory.stats().versions == 0


@pytest.mark.parametrize(("path", "body"), [("/v1/sweep", {"dry_run": True}), ("/v1/consolidate", {})])
def test_an_empty_list_of_projects_is_not_every_project(
    client: TestClient, memory: Memory, path: str, body: dict[str, Any]
) -> None:  # type: ignore[type-arg]
    memory.remember("A fact of another project", project="other")
    _refused(client.post(path, json={**body, "projects": []}, headers=auth("root")), "projects", "at least one")


def test_revising_a_stale_version_is_a_409(client: TestClient) -> None:  # type: ignore[type-arg]
    first = client.post("/v1/memories", json={"content": "The port is 80", "project": "evil"}, headers=auth("evil"))
    old = first.json()["memory"]["id"]
    body = {"content": "The port is 81", "reason": "moved"}
    assert client.post(f"/v1/memories/{old}/versions", json=body, headers=auth("evil")).status_code == 201
    body = {"content": "The port is 82", "reason": "moved again"}
    r = client.post(f"/v1/memories/{old}/versions", json=body, headers=auth("evil"))
    _refused(r, "not the current version", status=409)
    assert r.json()["error"]["code"] == "conflict"


@pytest.mark.parametrize("value", ["1e3", "10.0", "-1", "", "١٢"])
@pytest.mark.parametrize(("path", "param"), [("/v1/memories", "limit"), ("/v1/memories", "cursor"),
                                             ("/v1/audit", "limit"), ("/v1/audit", "memory_id")])  # fmt: skip
def test_query_numbers_are_written_in_digits(client: TestClient, path: str, param: str, value: str) -> None:  # type: ignore[type-arg]
    _refused(client.get(path, params={param: value}, headers=auth("root")), param, "whole number")
    assert client.get(path, params={param: "5"}, headers=auth("root")).status_code == 200


def test_validate_utc_names_the_side_of_the_range() -> None:
    with pytest.raises(ValidationError, match="after year 9999"):
        validate.utc("9999-12-31T23:59:59-05:00", "t")
    with pytest.raises(ValidationError, match="before year 1"):
        validate.utc("0001-01-01T00:00:00+05:00", "t")


# -- 4. the client's export keeps texts holding Unicode line separators whole


def test_ndjson_lines_split_on_newline_bytes_only() -> None:
    text = '{"a": "x\u2028y\u2029z\x85w"}\n{"b": 1}\n{"c": 2}'.encode()
    for size in (1, 2, 3, 7, len(text)):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        assert list(ndjson_lines(chunks)) == [x + b"\n" for x in text.split(b"\n")]


def test_export_then_import_through_the_client_keeps_line_separators(tmp_path: Path) -> None:
    text = "Line\u2028separator, paragraph\u2029separator and next\x85line stay in one memory"
    with Memory(tmp_path / "a", embedder=FakeEmbedder()) as src, Memory(tmp_path / "b", embedder=FakeEmbedder()) as dst:
        src.remember(text, project="p", key="odd.text")
        with TestClient(create_app(load(env={}), mem=src)) as a, TestClient(create_app(load(env={}), mem=dst)) as b:
            lines = list(app_client(a, None).export_lines())
            assert [json.loads(x)["type"] for x in lines].count("memory") == 1  # every line whole JSON
            assert app_client(b, None).import_lines(lines) == 1
        assert dst.get(1).content == text and dst.check().ok
