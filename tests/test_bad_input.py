"""Bad input over a socket to the real server (issue 17, items 1-8): every refusal is a 400 whose
body says what is wrong, never a 500, and a refused request writes nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from servers import Server

ADMIN, WRITER, BETA = "alpha-admin-secret-00001", "alpha-writer-secret-0001", "beta-writer-secret-00001"
ROOT = "every-project-admin-0001"  # the consistency check covers every project: an admin of all of them
TOKENS = f"adm:{ADMIN}:admin:alpha,gamma;wr:{WRITER}:write:alpha;bw:{BETA}:write:beta;root:{ROOT}:admin:*"
T = "2026-01-01T00:00:00Z"

pytestmark = pytest.mark.model  # the real server loads the packaged model


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("bad-input") / "data", tokens=TOKENS)
    s.start()
    yield s
    s.close()


def call(server: Server, method: str, path: str, token: str = ADMIN, **kw: Any) -> httpx.Response:
    return httpx.request(method, server.url + path, headers={"Authorization": f"Bearer {token}"}, timeout=60, **kw)


def refused(r: httpx.Response, *words: str) -> str:
    """The message of a 400 invalid_input reply, which names each of `words`."""
    assert r.status_code == 400, (r.status_code, r.text)
    message: str = r.json()["error"]["message"]
    assert r.json()["error"]["code"] == "invalid_input"
    for w in words:
        assert w in message, message
    return message


def versions(server: Server) -> int:
    r = call(server, "GET", "/v1/stats")
    assert r.status_code == 200, r.text
    return int(r.json()["versions"])


def remember(server: Server, token: str = WRITER, **fields: Any) -> dict[str, Any]:
    r = call(server, "POST", "/v1/memories", token, json={"project": "alpha", **fields})
    assert r.status_code in (200, 201), r.text
    return r.json()["memory"]  # type: ignore[no-any-return]


# -- 1. deep JSON ------------------------------------------------------------------

JSON_ROUTES = [
    "/v1/memories", "/v1/observations", "/v1/memories/1/versions", "/v1/recall", "/v1/context", "/v1/sweep",
    "/v1/memories/1/restore", "/v1/memories/1/pin", "/v1/delete", "/v1/rebuild", "/v1/consolidate",
    "/v1/sessions/s-1/end", "/v1/ingest/conversation", "/v1/ingest/notes", "/v1/ingest/code", "/v1/import",
]  # fmt: skip
DEEP = {
    "issue repro (1,000 deep)": '{"content": ' + "[" * 1000 + "]" * 1000 + "}",
    "10,000 deep": "[" * 10_000 + "]" * 10_000,
    "10,000 deep in an unknown field": '{"x": ' + '{"a": ' * 10_000 + "1" + "}" * 10_000 + "}",
}


@pytest.mark.parametrize("body", list(DEEP.values()), ids=list(DEEP))
@pytest.mark.parametrize("path", JSON_ROUTES)
def test_deep_json_is_a_400_on_every_json_route(server: Server, path: str, body: str) -> None:
    headers = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}
    refused(httpx.post(server.url + path, content=body.encode(), headers=headers, timeout=60))


@pytest.mark.parametrize("content_type", ["application/json", "application/x-www-form-urlencoded"])
def test_deep_json_to_the_viewer_forms_is_a_4xx(server: Server, content_type: str) -> None:
    body = DEEP["10,000 deep"]
    payload = body.encode() if content_type == "application/json" else b"csrf=x&content=" + body.encode()
    r = httpx.post(server.url + "/ui/p/alpha/remember", content=payload, headers={"Content-Type": content_type})
    assert 400 <= r.status_code < 500, r.text
    assert "text/html" in r.headers["content-type"]


# -- 2. import trusts nothing ------------------------------------------------------------

_ids = count(50_000)


def _version(**fields: Any) -> dict[str, Any]:
    i = next(_ids)
    base = {"id": i, "lineage_id": i, "version": 1, "parent_id": None, "is_latest": True, "status": "active",
            "content": f"Imported fact number {i}", "tier": "semantic", "kind": "fact", "project": "alpha",
            "source": "import", "salience": 0.5, "confidence": 0.7, "created_at": T, "valid_from": T,
            "last_reinforced_at": T}  # fmt: skip
    return {**base, **fields}


def _file(*memories: dict[str, Any], links: tuple[dict[str, Any], ...] = ()) -> bytes:
    lines = [json.dumps({"type": "memory", "memory": m}) for m in memories]
    lines += [json.dumps({"type": "link", "link": ln}) for ln in links]
    return ("\n".join(lines) + "\n").encode()


def _lineage(n: int = 2, **last: Any) -> list[dict[str, Any]]:
    """A well-formed lineage of `n` versions (the last one current), its last version changed by `last`."""
    first = _version(is_latest=False, status="superseded")
    chain = [first]
    for k in range(2, n + 1):
        chain.append(_version(lineage_id=first["id"], version=k, parent_id=chain[-1]["id"], is_latest=k == n,
                              status="active" if k == n else "superseded"))  # fmt: skip
        chain[-2]["superseded_by"] = chain[-1]["id"]
    chain[-1].update(last)
    return chain


def _bad_files() -> dict[str, tuple[bytes, str]]:
    lin = _lineage(3)
    two_latest = [dict(m) for m in lin]
    two_latest[1].update(is_latest=True, status="active", superseded_by=None)
    gap = _lineage(2)
    gap[1]["version"] = 3
    ghost = _lineage(2)
    ghost[0]["superseded_by"] = 999_999
    a, b = _version(), _version(project="gamma")
    keyed = [_version(key="db.engine"), _version(key="db.engine", content="We use MySQL")]
    return {
        "id 2**53": (_file(_version(id=2**53, lineage_id=2**53)), "2**52"),
        "NUL in content": (_file(_version(content="a\x00b")), "NUL"),
        "40,000-character content": (_file(_version(content="x" * 40_000)), "at most"),
        "10,000-character key": (_file(_version(key="k" * 10_000)), "key"),
        "unknown field": (_file(_version(colour="red")), "colour"),
        "created_at in year 1": (_file(_version(created_at="0001-01-01T00:00:00Z")), "created_at"),
        "salience 50": (_file(_version(salience=50)), "salience"),
        "confidence -3": (_file(_version(confidence=-3)), "confidence"),
        "string id": (_file(_version(id="7")), "id"),
        "two latest versions of one lineage": (_file(*two_latest), "latest"),
        "a gap in the versions": (_file(*gap), "without gaps"),
        "superseded_by that does not exist": (_file(*ghost), "superseded_by"),
        "link to another project": (
            _file(a, b, links=({"src_id": a["id"], "dst_id": b["id"], "kind": "derived_from", "created_at": T},)),
            "one project",
        ),
        "link to a missing id": (
            _file(a, links=({"src_id": a["id"], "dst_id": 1, "kind": "derived_from", "created_at": T},)),
            "one project",
        ),
        "source_ids naming a missing id": (_file(_version(source_ids=[1])), "source_ids"),
        "two current memories for one key": (_file(*keyed), "db.engine"),
    }


BAD_FILES = _bad_files()


@pytest.mark.parametrize("name", list(BAD_FILES))
def test_a_bad_import_file_is_a_400_and_writes_nothing(server: Server, name: str) -> None:
    good = _version(content="A good line beside the bad one")  # a bad file writes nothing, not even its good lines
    body, words = BAD_FILES[name]
    before = versions(server)
    refused(call(server, "POST", "/v1/import", content=_file(good) + body), words)
    assert versions(server) == before
    r = call(server, "GET", f"/v1/memories/{good['id']}")
    assert r.status_code == 404
    mine = remember(server, content=f"Written after the refused import {name}")
    assert mine["id"] < 2**52
    assert call(server, "GET", f"/v1/memories/{mine['id']}/history").status_code == 200
    assert call(server, "GET", "/v1/audit", params={"memory_id": mine["id"]}).status_code == 200
    report = call(server, "POST", "/v1/check", ROOT).json()
    assert report["store_problems"] == [] and all(not i["missing"] and not i["extra"] for i in report["indexes"])


def test_a_good_import_with_a_lineage_and_historic_times_is_accepted(server: Server) -> None:
    chain = _lineage(3, valid_from="1815-06-09T00:00:00Z", key="treaty.in.force")
    chain[0]["valid_from"] = "1814-09-01T00:00:00Z"
    chain[0]["valid_to"] = "1815-06-09T00:00:00Z"
    r = call(server, "POST", "/v1/import", content=_file(*chain))
    assert r.status_code == 201, r.text
    history = call(server, "GET", f"/v1/memories/{chain[-1]['id']}/history").json()
    assert [v["version"] for v in history] == [1, 2, 3] and history[-1]["valid_from"].startswith("1815")


def test_remember_refuses_source_ids_it_does_not_hold(server: Server) -> None:
    theirs = remember(server, BETA, project="beta", content="Beta's own evidence")
    before = versions(server)
    for ids in ([999_999_999], [theirs["id"]]):
        refused(call(server, "POST", "/v1/memories", json={"content": "Built on evidence", "project": "alpha",
                                                            "source_ids": ids}), "source_ids")  # fmt: skip
    assert versions(server) == before
    mine = remember(server, content="Alpha's own evidence")
    assert remember(server, content="Built on alpha's evidence", source_ids=[mine["id"]])["source_ids"] == [mine["id"]]


# -- 3. check sees the store's own invariants -------------------------------------------


def test_check_reports_broken_store_invariants(tmp_path: Path) -> None:
    s = Server(tmp_path / "data", tokens=TOKENS)
    try:
        s.start()
        first = remember(s, content="The API port is 8080", key="api.port")
        second = remember(s, content="The API port is 4000", key="api.port")
        assert call(s, "POST", "/v1/check", ROOT).json()["store_problems"] == []
        assert s.stop(signal.SIGTERM) in (0, -signal.SIGTERM)
        with duckdb.connect(str(tmp_path / "data" / "agentmem.duckdb")) as db:  # what a bad import once left behind
            db.execute("UPDATE memories SET is_latest = true, status = 'active', superseded_by = 77 WHERE id = ?",
                       [first["id"]])  # fmt: skip
        s.start()
        problems = call(s, "POST", "/v1/check", ROOT).json()["store_problems"]
        text = "\n".join(problems)
        assert "exactly one latest" in text and "superseded_by" in text and "keys held by more than one" in text
        assert str(first["lineage_id"]) in text and second["lineage_id"] == first["lineage_id"]
    finally:
        s.close()


# -- 4. strict types ------------------------------------------------------------------

STRICT = [
    ("/v1/delete", {"reason": "x", "ids": ["1"]}, "ids[0]"),
    ("/v1/recall", {"query": "port", "k": "5"}, "k"),
    ("/v1/memories", {"content": "A salient fact", "project": "alpha", "salience": "0.5"}, "salience"),
    ("/v1/sweep", {"dry_run": True, "threshold": "0.5"}, "threshold"),
    ("/v1/memories", {"content": "Valid from a number", "project": "alpha", "valid_from": 12345}, "valid_from"),
    ("/v1/recall", {"query": "port", "as_of": 12345}, "as_of"),
    ("/v1/memories/1/pin", {"pinned": 0}, "pinned"),
    ("/v1/observations", {"observations": [{"content": "ran", "project": "alpha", "at": 1}]}, "observations[0].at"),
    ("/v1/context", {"query": "port", "max_memories": 2.0}, "max_memories"),
    ("/v1/memories", {"content": "x", "project": "alpha", "pinned": "true"}, "pinned"),
]  # fmt: skip


@pytest.mark.parametrize(("path", "body", "field"), STRICT, ids=[f"{p} {f}" for p, _, f in STRICT])
def test_a_wrong_type_is_a_400_naming_the_field(server: Server, path: str, body: dict[str, Any], field: str) -> None:
    first = remember(server, content="Memory one must survive a coerced delete")
    before = versions(server)
    assert refused(call(server, "POST", path, json=body), field).startswith(field)
    assert versions(server) == before
    assert call(server, "GET", f"/v1/memories/{first['id']}").status_code == 200
    assert call(server, "GET", "/v1/memories/1").json()["status"] != "deleted"


def test_query_strings_still_parse_numbers(server: Server) -> None:
    r = call(server, "GET", "/v1/memories", params={"limit": "2", "latest_only": "true"})
    assert r.status_code == 200 and len(r.json()["items"]) <= 2


# -- 5. empty values --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"content": "\u200b\u200b"}, "content may not be empty"),
        ({"content": "\ufeff \u2060\u200d"}, "content may not be empty"),
        ({"content": "A keyed fact", "key": ""}, "key may not be empty"),
        ({"content": "A keyed fact", "key": "\u200b"}, "key may not be empty"),
    ],
)
def test_blank_content_and_empty_keys_are_refused(server: Server, fields: dict[str, Any], words: str) -> None:
    before = versions(server)
    refused(call(server, "POST", "/v1/memories", json={"project": "alpha", **fields}), words)
    assert versions(server) == before


# -- 6. years 1 to 9999 everywhere ----------------------------------------------------------


def test_historic_and_far_times_are_accepted_everywhere(server: Server) -> None:
    treaty = remember(server, content="The treaty took effect", valid_from="1815-06-09T00:00:00Z")
    assert treaty["valid_from"].startswith("1815-06-09")
    for t in ("0001-01-01T00:00:00Z", "9999-12-31T00:00:00Z"):
        assert remember(server, content=f"A fact valid from {t[:4]}", valid_from=t)["valid_from"].startswith(t[:4])
    hits = call(server, "POST", "/v1/recall", json={"query": "treaty took effect", "project": "alpha",
                                                     "as_of": "1816-01-01T00:00:00Z"}).json()["hits"]  # fmt: skip
    assert treaty["id"] in [h["memory"]["id"] for h in hits]
    ancient = {"query": "x", "project": "alpha", "as_of": "0001-01-01T00:00:00Z"}
    assert call(server, "POST", "/v1/recall", json=ancient).status_code == 200
    msg = {"role": "user", "content": "My favorite castle is Vianden.", "id": "h1", "time": "1800-01-01T00:00:00Z"}
    r = call(server, "POST", "/v1/ingest/conversation", WRITER, json={"messages": [msg], "session": "hist"})
    assert r.status_code == 200 and r.json()["outcomes"] == {"created": 1}, r.text
    made = call(server, "GET", f"/v1/memories/{r.json()['admitted_items'][0]['memory_id']}").json()
    assert made["valid_from"].startswith("1800-01-01")
    # year 0 in UTC is before year 1: refused with the field's name, not a 500
    early = {"content": "Too early", "project": "alpha", "valid_from": "0001-01-01T00:00:00+05:00"}
    refused(call(server, "POST", "/v1/memories", json=early), "valid_from")


def test_the_cli_takes_historic_times_too(server: Server) -> None:
    env = {**os.environ, "AGENTMEM_URL": server.url, "AGENTMEM_TOKEN": WRITER, "HF_HUB_OFFLINE": "1"}
    base = [sys.executable, "-m", "agentmem", "--json"]
    args = ["remember", "The Congress of Vienna closed", "--project", "alpha", "--valid-from", "1815-06-09T00:00:00Z"]
    out = subprocess.run([*base, *args], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    made = json.loads(out.stdout)["memory"]
    out = subprocess.run([*base, "recall", "Congress of Vienna", "--project", "alpha", "--as-of",
                          "1815-12-31T00:00:00Z"], env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert made["id"] in [h["memory"]["id"] for h in json.loads(out.stdout)]


# -- 7. a dry run checks what the real run checks -------------------------------------------


@pytest.mark.parametrize(
    ("time", "verdict"),
    [("1800-01-01T00:00:00Z", "admitted"), ("0001-01-01T00:00:00+05:00", "invalid")],
)
def test_ingest_dry_run_agrees_with_the_real_run(server: Server, time: str, verdict: str) -> None:
    editor = "vim" if verdict == "admitted" else "emacs"
    msg = {"role": "user", "content": f"My favorite editor is {editor}.", "id": "m1", "time": time}
    body = {"messages": [msg], "session": f"dry-{verdict}"}
    dry = call(server, "POST", "/v1/ingest/conversation", WRITER, json={**body, "dry_run": True}).json()
    real = call(server, "POST", "/v1/ingest/conversation", WRITER, json=body).json()
    assert (dry["admitted"], dry["rejected_by_reason"]) == (real["admitted"], real["rejected_by_reason"])
    assert dry["rejected_by_reason"] == ({} if verdict == "admitted" else {"invalid": 1})
    assert dry["admitted"] == (1 if verdict == "admitted" else 0)


# -- 8. unknown kinds ---------------------------------------------------------------------


@pytest.mark.parametrize(("param", "words"), [("kind", "unknown kind 'bogus'"), ("tier", "unknown tier 'bogus'")])
def test_listing_with_an_unknown_kind_or_tier_is_a_400_like_recall(server: Server, param: str, words: str) -> None:
    refused(call(server, "GET", "/v1/memories", params={param: "bogus"}), words)
    recall = {"query": "port", "project": "alpha", f"{param}s": ["bogus"]}
    refused(call(server, "POST", "/v1/recall", json=recall), words)
    known = "fact" if param == "kind" else "semantic"
    assert call(server, "GET", "/v1/memories", params={param: known}).status_code == 200
