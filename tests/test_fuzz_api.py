"""Schemathesis against the service's own OpenAPI schema: every generated request gets a 2xx or a
4xx, never a 5xx, and the store and both indexes stay consistent."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentmem import Memory
from api.app import create_app
from api.settings import load
from fakes import FakeEmbedder

SKIP = {"/v1/ingest/notes", "/v1/ingest/code"}  # they scan directories on the server's disk: not for random paths


def test_no_generated_request_gets_a_5xx(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "d", embedder=FakeEmbedder())
    for i in range(5):
        mem.remember(f"seed memory number {i} about the shop backend", project="default", key=f"k{i % 3}")
    env = {"AGENTMEM_SWEEP_EVERY_MINUTES": "0", "AGENTMEM_CONSOLIDATE_EVERY_MINUTES": "0",
           "AGENTMEM_ALLOWED_HOSTS": "testserver"}  # the name schemathesis calls the app by  # fmt: skip
    app = create_app(load(env=env), mem=mem)  # an open loopback server: every caller is admin
    schema = schemathesis.openapi.from_asgi("/docs/openapi.json", app)
    failures: list[str] = []
    statuses: Counter[int] = Counter()
    calls = 0
    operations = [r.ok() for r in schema.get_all_operations()]
    assert len(operations) > 30
    for op in operations:
        if op.path in SKIP:
            continue

        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(case=op.as_strategy())
        def check(case) -> None:  # type: ignore[no-untyped-def]
            nonlocal calls
            calls += 1
            response = case.call()
            statuses[response.status_code] += 1
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}")

        check()
    print(f"{calls} generated requests over {len(operations)} operations: {dict(sorted(statuses.items()))}")
    assert failures == [], failures[:10]
    assert calls > 300
    assert mem.check().ok  # after every generated request, the indexes still match DuckDB
    mem.close()


# -- import lines and strict types (issue 17) ------------------------------------------------

T = "2026-01-01T00:00:00Z"
BASE_LINE = {"id": 900, "lineage_id": 900, "version": 1, "parent_id": None, "is_latest": True, "status": "active",
             "content": "An imported fact", "tier": "semantic", "kind": "fact", "project": "default",
             "source": "import", "salience": 0.5, "confidence": 0.7, "created_at": T, "valid_from": T,
             "last_reinforced_at": T, "key": "fuzz.key", "source_ids": []}  # fmt: skip
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**64), max_value=2**64) | st.floats() | st.text(max_size=50)
    | st.sampled_from(["", "\u200b", "\x00", "x" * 40_000, "0001-01-01T00:00:00Z", "1815-06-09T00:00:00Z",
                       "9999-12-31T23:59:59Z", "archived", "deleted", "event", "working", "2**53", str(2**53),
                       2**31 - 1, 2**31, "a\x85b", "a\u2028b", "9999-12-31T23:59:59-05:00"]),  # issue 34
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip
NDJSON = "application/x-ndjson"
FIELDS = sorted({*BASE_LINE, "superseded_by", "valid_to", "expires_at", "title", "triple", "pinned", "colour",
                 "reinforcements", "accesses", "session", "agent"})  # fmt: skip


@pytest.fixture
def app_and_memory(tmp_path: Path):  # type: ignore[no-untyped-def]
    from litestar.testing import TestClient

    mem = Memory(tmp_path / "d", embedder=FakeEmbedder())
    mem.remember("A memory already stored", project="default", key="held.key")
    env = {"AGENTMEM_SWEEP_EVERY_MINUTES": "0", "AGENTMEM_CONSOLIDATE_EVERY_MINUTES": "0"}
    with TestClient(create_app(load(env=env), mem=mem), base_url="http://127.0.0.1") as client:
        yield client, mem
    mem.close()


def test_fuzzed_import_lines_are_refused_whole_or_keep_the_invariants(app_and_memory) -> None:  # type: ignore[no-untyped-def]
    client, mem = app_and_memory
    seen: Counter[int] = Counter()

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(changes=st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, min_size=1, max_size=3),
           extra=st.booleans())  # fmt: skip
    def check(changes: dict[str, object], extra: bool) -> None:
        start = mem.stats().versions + 1000  # fresh ids, so a good file is accepted
        line = {**BASE_LINE, "id": start, "lineage_id": start, **changes}
        lines = [json.dumps({"type": "memory", "memory": line})]
        if extra:  # a well-formed second lineage that must not be written when the first line is bad
            lines.append(json.dumps({"type": "memory", "memory": {**BASE_LINE, "id": start + 1,
                                                                  "lineage_id": start + 1, "key": None}}))  # fmt: skip
        before = mem.stats().versions
        r = client.post("/v1/import", content="\n".join(lines).encode(), headers={"content-type": NDJSON})
        seen[r.status_code] += 1
        assert r.status_code < 500, r.text
        if r.status_code >= 400:
            assert r.json()["error"]["message"] and mem.stats().versions == before
        report = mem.check()
        assert report.ok, report.store_problems

    check()
    assert seen[400] > 100 and seen[201] > 0, seen


def test_fuzzed_embeddings_are_refused_whole_or_stored_finite(app_and_memory) -> None:  # type: ignore[no-untyped-def]
    """Issue 34, finding 9: an embedding in an import (trusted: this open server's caller is an admin
    of every project) is stored only when each of its numbers is finite in float32."""
    client, mem = app_and_memory
    dim = FakeEmbedder.dim
    header = json.dumps({"type": "header", "format": "agentmem-export", "format_version": 1, "schema_version": 1,
                         "model": FakeEmbedder.name, "dim": dim, "exported_at": T})  # fmt: skip
    big = st.sampled_from([1e300, -1e300, 3.5e38, -3.5e38, 3.4e38, 1e-300, 0.0])
    seen: Counter[int] = Counter()

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(
        values=st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=dim, max_size=dim),
        odd=st.none() | st.tuples(st.integers(0, dim - 1), big),
    )
    def check(values: list[float], odd: tuple[int, float] | None) -> None:
        if odd is not None:
            values[odd[0]] = odd[1]
        start = mem.stats().versions + 1000
        line = {**BASE_LINE, "id": start, "lineage_id": start, "key": None, "content": f"An embedded fact {start}"}
        before = mem.stats().versions
        body = json.dumps({"type": "memory", "memory": line, "embedding": values})
        r = client.post("/v1/import", content=f"{header}\n{body}\n".encode(), headers={"content-type": NDJSON})
        seen[r.status_code] += 1
        assert r.status_code == (400 if odd is not None and abs(odd[1]) > 3.4028235e38 else 201), r.text
        if r.status_code == 400:
            assert "not finite" in r.json()["error"]["message"] and mem.stats().versions == before
        else:
            stored = [json.loads(x) for x in mem.export_lines() if b'"id":%d,' % start in x]
            assert all(math.isfinite(v) for v in stored[0]["embedding"])

    check()
    assert seen[400] > 0 and seen[201] > 0, seen


STRICT_BODIES = {
    "/v1/memories": {"content": "A strictly typed fact", "project": "default", "salience": 0.5, "pinned": False,
                     "source_ids": [1], "valid_from": T, "key": "strict.key", "kind": "fact"},
    "/v1/recall": {"query": "fact", "project": "default", "k": 5, "kinds": ["fact"], "as_of": T,
                   "include_history": False},
    "/v1/context": {"query": "fact", "project": "default", "max_memories": 3, "token_budget": 200},
    "/v1/delete": {"reason": "fuzz", "ids": [1], "dry_run": True, "scope": ["default"]},
    "/v1/sweep": {"dry_run": True, "limit": 3, "threshold": 0.5, "projects": ["default"]},
    "/v1/memories/1/pin": {"pinned": True},
    "/v1/memories/1/restore": {"ttl_days": 3.0},
}  # fmt: skip


def _wrong(value: object) -> st.SearchStrategy[object]:
    """JSON values of another type than `value`'s (an int is a number a float field takes). Only
    values JSON can carry: the client refuses to encode inf and NaN (they are sent raw, below)."""
    if isinstance(value, bool):
        return st.integers() | st.text() | st.just([value])
    if isinstance(value, int | float):
        return st.text() | st.booleans() | st.just([value]) | st.builds(str, st.just(value))
    if isinstance(value, str):
        finite = st.floats(allow_nan=False, allow_infinity=False)
        return st.integers() | finite | st.booleans() | st.just([value]) | st.just({"v": value})
    return st.text() | st.integers() | st.just({"v": value})


@pytest.mark.parametrize("path", list(STRICT_BODIES))
def test_a_fuzzed_wrong_type_is_a_400_naming_the_field(app_and_memory, path: str) -> None:  # type: ignore[no-untyped-def]
    client, mem = app_and_memory
    body = STRICT_BODIES[path]
    assert client.post(path, json=body).status_code != 400  # the body as it stands is not bad input

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        field = data.draw(st.sampled_from(sorted(body)))
        value = data.draw(_wrong(body[field]))
        before = mem.stats().versions
        r = client.post(path, json={**body, field: value})
        assert r.status_code == 400, (field, value, r.text)
        assert r.json()["error"]["message"].startswith(field), r.text
        assert mem.stats().versions == before

    check()


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("path", list(STRICT_BODIES))
def test_a_non_json_number_token_is_a_400(app_and_memory, path: str, token: str) -> None:  # type: ignore[no-untyped-def]
    """Python's json writes NaN and inf as bare tokens that JSON has no place for: sent as raw bytes,
    in every field of every strict body, each is refused whole."""
    client, mem = app_and_memory
    body = STRICT_BODIES[path]
    for field in sorted(body):
        raw = json.dumps({**body, field: float(token.replace("Infinity", "inf"))}).encode()
        assert token.encode() in raw
        before = mem.stats().versions
        r = client.post(path, content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 400, (field, token, r.text)
        assert r.json()["error"]["message"], r.text
        assert mem.stats().versions == before


# -- the request guard of a tokenless server (issue 34) -------------------------------------

GUARD_HEADERS = st.fixed_dictionaries(
    {"Host": st.sampled_from(["127.0.0.1", "localhost:8420", "[::1]:8420", "127.0.0.9"])
     | st.sampled_from(["evil.example", "127.0.0.1.evil.example", "0.0.0.0", "localhost.evil.example:8420"])},
    optional={
        "Origin": st.sampled_from(["http://127.0.0.1", "http://localhost:8420", "http://127.0.0.1:9", "null",
                                   "https://evil.example", "http://[::1]:8420"]),
        "Sec-Fetch-Site": st.sampled_from(["same-origin", "same-site", "cross-site", "none"]),
        "Sec-Fetch-Mode": st.sampled_from(["navigate", "cors", "no-cors"]),
        "Content-Type": st.sampled_from(["application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
                                         "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]),
    },
)  # fmt: skip


def _expected(method: str, h: dict[str, str]) -> int | None:
    """The guard's answer to these headers (None: let through), worked out apart from api.guard."""
    name = h["Host"].rsplit(":", 1)[0] if not h["Host"].endswith("]") else h["Host"]
    if name.strip("[]") not in ("127.0.0.1", "localhost", "::1", "127.0.0.9"):
        return 421
    origin = h.get("Origin")
    site = h.get("Sec-Fetch-Site", "none")
    navigates = method == "GET" and h.get("Sec-Fetch-Mode") == "navigate"
    if origin is not None and origin != f"http://{h['Host']}":
        return 403
    if site not in ("same-origin", "none") and not navigates:
        return 403
    if method == "POST" and h.get("Content-Type", "").split(";")[0].lower() != "application/json":
        return 400
    return None


def test_the_guard_lets_through_exactly_the_same_origin_requests(app_and_memory) -> None:  # type: ignore[no-untyped-def]
    client, mem = app_and_memory
    seen: Counter[int] = Counter()

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(headers=GUARD_HEADERS, write=st.booleans())
    @example(headers={"Host": "127.0.0.1", "Content-Type": "application/json"}, write=True)  # 201
    @example(headers={"Host": "localhost:8420", "Sec-Fetch-Site": "same-origin"}, write=False)  # 200
    @example(headers={"Host": "[::1]:8420", "Content-Type": "text/plain"}, write=True)  # 400
    @example(headers={"Host": "127.0.0.1", "Origin": "https://evil.example"}, write=False)  # 403
    @example(headers={"Host": "127.0.0.1.evil.example"}, write=True)  # 421
    def check(headers: dict[str, str], write: bool) -> None:
        before = mem.stats().versions
        body = json.dumps({"content": f"a fact written number {before}", "project": "default"}).encode()
        r = (client.post("/v1/memories", content=body, headers=headers) if write
             else client.get("/v1/memories", params={"project": "default"}, headers=headers))  # fmt: skip
        expected = _expected("POST" if write else "GET", headers)
        seen[r.status_code] += 1
        if expected is None:
            assert r.status_code in (200, 201), (headers, r.text)
        else:
            assert r.status_code == expected, (headers, r.text)
            assert "already stored" not in r.text and mem.stats().versions == before

    check()  # the examples above answer each status once; the drawn headers mix them
    assert all(seen[s] > 0 for s in (200, 201, 400, 403, 421)), seen


pytestmark = pytest.mark.slow
