"""The web viewer through Litestar's TestClient: pages, escaping, sign-in, CSRF, roles and error pages."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from litestar.testing import TestClient
from test_api import ENV, TOKENS, auth

from agentmem import Memory, NewMemory
from api.app import create_app
from api.auth import LOCAL
from api.settings import load
from api.viewer.session import Sessions

XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture
def client(memory: Memory) -> Iterator[TestClient]:  # type: ignore[type-arg]
    with TestClient(create_app(load(env=ENV), mem=memory)) as c:
        yield c


@pytest.fixture
def seeded(memory: Memory) -> Memory:
    memory.remember(NewMemory(content="The API listens on port 8080", project="shop", key="api.port", agent="bob"))
    memory.remember(NewMemory(content="Invoices are exported nightly as CSV", project="shop", kind="procedure"))
    memory.remember(NewMemory(content=XSS, project="shop"))
    memory.remember(NewMemory(content="Other team uses Postgres 16", project="other"))
    return memory


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, html
    return found.group(1)


def sign_in(client: TestClient, who: str) -> None:  # type: ignore[type-arg]
    r = client.post("/ui/login", data={"token": TOKENS[who], "next": "/ui/"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie


def test_no_token_gets_the_sign_in_page(client: TestClient, seeded: Memory) -> None:  # type: ignore[type-arg]
    for path in ("/ui/", "/ui/p/shop/", "/ui/memories/1", "/ui/p/shop/stats"):
        r = client.get(path)
        assert r.status_code == 401 and "text/html" in r.headers["content-type"], path
        assert '<label for="token">Token</label>' in r.text and "Traceback" not in r.text
    r = client.post("/ui/login", data={"token": "not-a-token"})
    assert r.status_code == 401 and "unknown or expired token" in r.text


def test_sign_in_then_list_search_and_filter(client: TestClient, seeded: Memory) -> None:  # type: ignore[type-arg]
    sign_in(client, "read")
    r = client.get("/ui/", follow_redirects=False)
    assert r.status_code in (302, 307) and r.headers["location"] == "/ui/p/shop/"
    r = client.get("/ui/p/shop/")
    assert r.status_code == 200 and "The API listens on port 8080" in r.text
    assert "Postgres" not in r.text  # another project's memory
    assert "<h1>Memories in shop</h1>" in r.text and 'class="tag' in r.text  # retention tier shown
    assert "remember box is hidden" in r.text  # read token
    r = client.get("/ui/p/shop/", params={"q": "which port does the API use"})
    assert r.status_code == 200 and "Recalled for" in r.text and "port 8080" in r.text
    r = client.get("/ui/p/shop/", params={"kind": "procedure"})
    assert "Invoices" in r.text and "port 8080" not in r.text
    r = client.get("/ui/p/shop/", params={"agent": "bob", "tier": "semantic"})
    assert "port 8080" in r.text and "Invoices" not in r.text


def test_memory_text_is_escaped(client: TestClient, seeded: Memory) -> None:  # type: ignore[type-arg]
    for path in ("/ui/p/shop/", "/ui/memories/3"):
        r = client.get(path, headers=auth("read"))
        assert r.status_code == 200
        assert "<script>" not in r.text and "<img src=x" not in r.text
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in r.text
        assert "script-src" not in r.headers["content-security-policy"]  # default-src 'none': no script runs
        assert "default-src 'none'" in r.headers["content-security-policy"]


def test_pages_read_without_javascript(client: TestClient, seeded: Memory) -> None:  # type: ignore[type-arg]
    seeded.remember(NewMemory(content="The API listens on port 4000", project="shop", key="api.port"))
    h = auth("read")
    page = client.get("/ui/memories/1", headers=h)
    assert page.status_code == 200 and "<script" not in page.text
    assert "Version 1" in page.text and "Version 2" in page.text and "port 4000" in page.text
    assert "Replaced by" in page.text and "same key “api.port”" in page.text
    old = client.get("/ui/p/shop/", params={"status": "superseded"}, headers=h)
    assert "port 8080" in old.text and "port 4000" not in old.text and "status superseded" in old.text
    assert client.get("/ui/p/shop/", params={"status": "zombie"}, headers=h).status_code == 400
    audit = client.get("/ui/p/shop/audit", headers=h)
    assert audit.status_code == 200 and "supersede" in audit.text
    assert client.get("/ui/p/shop/audit", params={"memory_id": 1}, headers=h).status_code == 200
    stats = client.get("/ui/p/shop/stats", headers=h)
    assert stats.status_code == 200 and "<svg" in stats.text and "Outbox lag" in stats.text
    assert "By tier" in stats.text and "By kind" in stats.text
    assert client.get("/ui/p/shop/stats", params={"check": 1}, headers=h).status_code == 403
    admin = client.get("/ui/p/shop/stats", params={"check": 1}, headers=auth("admin"))
    assert "Full check (admin)" in admin.text and "consistent" in admin.text
    assert client.get("/ui/p/shop/archive", headers=h).status_code == 200
    projects = client.get("/ui/", headers=auth("admin"))
    assert projects.status_code == 200 and 'href="/ui/p/shop/"' in projects.text and "other" in projects.text


def test_remember_box_supersedes_and_shows_it(client: TestClient, seeded: Memory) -> None:  # type: ignore[type-arg]
    sign_in(client, "write")
    token = csrf_of(client.get("/ui/memories/1").text)
    r = client.post(
        "/ui/p/shop/remember", data={"content": "We moved the API to port 4000", "key": "api.port", "csrf": token}
    )
    assert r.status_code == 201, r.text
    assert "Superseded" in r.text and "port 8080" in r.text and "is no longer believed" in r.text
    assert 'id="v1" class="dead"' in r.text and "Replaced by" in r.text
    r = client.post(
        "/ui/p/shop/remember", data={"content": "We moved the API to port 4000", "key": "api.port", "csrf": token}
    )
    assert r.status_code == 200 and "Reinforced" in r.text


def test_remember_box_names_every_memory_a_new_answer_retires(client: TestClient, seeded: Memory) -> None:  # type: ignore[type-arg]
    older = seeded.remember("Who holds the record for the fastest marathon? Eliud Kipchoge.", project="shop").memory
    seeded.remember("Who has the record for the fastest marathon? Kelvin Kiptum.", project="shop")
    sign_in(client, "write")
    token = csrf_of(client.get("/ui/memories/1").text)
    new = "Who holds the record for the fastest marathon? Kelvin Kiptum."
    r = client.post("/ui/p/shop/remember", data={"content": new, "csrf": token})
    assert r.status_code == 201, r.text
    also = r.text.split("Also superseded", 1)[1].split("</p>", 1)[0]
    assert f'href="/ui/memories/{older.id}"' in also and seeded.get(older.id).status == "superseded"


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("content=caf%E9+au+lait&csrf={c}", "application/x-www-form-urlencoded"),  # Latin-1, not UTF-8
        ("content=%FF%FE&csrf={c}", "application/x-www-form-urlencoded"),
        ("--b\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n{c}\r\n--b\r\nContent-Disposition: "
         "form-data; name=\"content\"\r\n\r\ncaf\udce9\r\n--b--\r\n", "multipart/form-data; boundary=b"),
    ],
)
def test_a_form_that_is_not_utf8_is_a_400(client: TestClient, seeded: Memory, body: str, content_type: str) -> None:  # type: ignore[type-arg]
    """Issue 34, finding 12: as JSON does, not stored with U+FFFD in place of the bad bytes."""
    sign_in(client, "write")
    token = csrf_of(client.get("/ui/p/shop/").text)
    before = seeded.stats().versions
    raw = body.format(c=token).encode("utf-8", "surrogateescape")
    r = client.post("/ui/p/shop/remember", content=raw, headers={"content-type": content_type})
    assert r.status_code == 400 and "not valid UTF-8" in r.text, r.text
    assert seeded.stats().versions == before


def test_forms_need_csrf_and_same_origin(client: TestClient, seeded: Memory) -> None:  # type: ignore[type-arg]
    sign_in(client, "write")
    r = client.post("/ui/p/shop/remember", data={"content": "forged"})
    assert r.status_code == 403 and "CSRF" in r.text
    token = csrf_of(client.get("/ui/p/shop/").text)
    r = client.post(
        "/ui/p/shop/remember", data={"content": "forged", "csrf": token}, headers={"Origin": "https://evil.example"}
    )
    assert r.status_code == 403
    r = client.post("/ui/p/shop/remember", data={"content": "forged", "csrf": "0" * 64})
    assert r.status_code == 403
    assert all("forged" not in m.content for m in seeded.list_versions()[0])


def test_roles_and_projects(client: TestClient, seeded: Memory) -> None:  # type: ignore[type-arg]
    sign_in(client, "read")
    token = csrf_of(client.get("/ui/p/shop/").text)
    r = client.post("/ui/p/shop/remember", data={"content": "reader writes", "csrf": token})
    assert r.status_code == 403 and "write is needed" in r.text and "Traceback" not in r.text
    r = client.post("/ui/memories/1/restore", data={"csrf": token})
    assert r.status_code == 403
    for path in (
        "/ui/memories/4",
        "/ui/p/other/",
        "/ui/p/other/stats",
        "/ui/memories/999",
        "/ui/nowhere",
        "/ui/memories/abc",
        "/ui/p/",
    ):
        r = client.get(path)
        assert r.status_code == 404 and "text/html" in r.headers["content-type"] and "Not found" in r.text, path
    assert "Postgres" not in client.get("/ui/memories/4").text
    for path, name in (("/ui/p/shop/", "cursor"), ("/ui/p/shop/audit", "cursor"), ("/ui/p/shop/audit", "memory_id")):
        for bad in ("-3", "1e3", "10.0"):
            r = client.get(path, params={name: bad})
            assert r.status_code == 400 and "text/html" in r.headers["content-type"], (path, name, bad)
    r = client.get("/ui/p/shop/", params={"tier": "nonsense"})
    assert r.status_code == 400
    r = client.get("/ui/logout")
    assert r.status_code == 405 and "text/html" in r.headers["content-type"]
    assert client.get("/v1/memories/999", headers=auth("read")).json()["error"]["code"] == "not_found"  # API: JSON


def test_sign_in_redirects_only_inside_the_viewer(client: TestClient) -> None:  # type: ignore[type-arg]
    for target, lands in (
        ("https://evil.example/", "/ui/"),
        ("//evil.example/ui/", "/ui/"),
        ("/ui/p/shop/", "/ui/p/shop/"),
    ):
        r = client.post("/ui/login", data={"token": TOKENS["read"], "next": target}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == lands
    assert 'name="next" value="/ui/"' in client.get("/ui/login", params={"next": "https://evil.example/"}).text


def test_unknown_session_and_sign_out(client: TestClient, seeded: Memory) -> None:  # type: ignore[type-arg]
    client.cookies.set("agentmem_ui", "revoked-or-expired-session", path="/ui")
    r = client.get("/ui/p/shop/")
    assert r.status_code == 401 and "your session has ended" in r.text
    client.cookies.clear()
    sign_in(client, "read")
    token = csrf_of(client.get("/ui/p/shop/").text)
    sid = client.cookies["agentmem_ui"]
    r = client.post("/ui/logout", data={"csrf": token}, follow_redirects=False)
    assert r.status_code == 303 and 'agentmem_ui=""' in r.headers["set-cookie"]
    client.cookies.set("agentmem_ui", sid, path="/ui")  # a copy of the cookie kept past sign-out
    assert client.get("/ui/p/shop/").status_code == 401


def test_a_session_ends_after_its_idle_time() -> None:
    now = [0.0]
    sessions = Sessions(idle_minutes=30, clock=lambda: now[0])
    sid = sessions.open(LOCAL)
    now[0] = 29 * 60
    assert sessions.get(sid) == LOCAL  # used: the idle time starts again
    now[0] += 29 * 60
    assert sessions.get(sid) == LOCAL
    now[0] += 30 * 60
    assert sessions.get(sid) is None and sessions.get(sid) is None


def test_archive_and_restore(client: TestClient, seeded: Memory) -> None:  # type: ignore[type-arg]
    seeded.remember(NewMemory(content="Staging password rotates weekly", project="shop", ttl_days=1))
    seeded.clock.advance(days=2)  # type: ignore[attr-defined]
    seeded.sweep()
    sign_in(client, "write")
    r = client.get("/ui/p/shop/archive")
    assert r.status_code == 200 and "Staging password" in r.text and "Restore #5" in r.text
    r = client.post("/ui/memories/5/restore", data={"csrf": csrf_of(r.text)}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/ui/memories/5"
    assert seeded.get(5).status == "active"
    r = client.post("/ui/memories/5/restore", data={"csrf": csrf_of(client.get("/ui/p/shop/").text)})
    assert r.status_code == 409 and "Conflict" in r.text


def test_open_server_needs_no_sign_in(memory: Memory) -> None:
    memory.remember(NewMemory(content="loopback only", project="solo"))
    with TestClient(create_app(load(env={}), mem=memory), base_url="http://127.0.0.1") as c:
        assert c.get("/ui/login", follow_redirects=False).status_code in (302, 307)
        assert "loopback only" in c.get("/ui/p/solo/").text
        r = c.post("/ui/p/solo/remember", data={"content": "no csrf"})
        assert r.status_code == 403


def test_the_session_cookie_is_secure_when_configured(memory: Memory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "agentmem.toml"
    config.write_text("[viewer]\nsecure_cookie = true\nidle_minutes = 5\n")
    with TestClient(create_app(load(config, env=ENV), mem=memory)) as c:
        r = c.post("/ui/login", data={"token": TOKENS["read"], "next": "/ui/"}, follow_redirects=False)
        assert r.status_code == 303 and "secure" in r.headers["set-cookie"].lower()
        assert TOKENS["read"] not in r.headers["set-cookie"]


def test_a_recall_shows_which_hit_is_the_older_statement(client: TestClient, memory: Memory) -> None:  # type: ignore[type-arg]
    from datetime import UTC, datetime

    old, new = memory.observe(
        [
            NewMemory(content="What is my highest score in Ticket to Ride? 124 points.", project="shop",
                      kind="observation", valid_from=datetime(2026, 1, 2, tzinfo=UTC)),
            NewMemory(content="What is my highest score in Ticket to Ride? 132 points.", project="shop",
                      kind="observation", valid_from=datetime(2026, 1, 20, tzinfo=UTC)),
        ]
    )  # fmt: skip
    r = client.get("/ui/p/shop/", params={"q": "What is my highest score in Ticket to Ride?"}, headers=auth("read"))
    assert r.status_code == 200
    assert r.text.index("132 points") < r.text.index("124 points")
    hits = memory.recall("What is my highest score in Ticket to Ride?", project="shop", k=5)
    top = hits[0].memory.id  # the newer turn's claim, or the turn itself
    assert hits[0].stated_in is None or hits[0].stated_in.id == new.id
    assert f'(older than <a href="/ui/memories/{top}">#{top}</a>: same question)' in r.text


def test_a_recall_shows_the_turn_a_claim_was_said_in_and_the_older_turn(client: TestClient, memory: Memory) -> None:  # type: ignore[type-arg]
    from datetime import UTC, datetime

    from agentmem.claims import CLAIM

    old, new = (
        memory.observe([NewMemory(content=text, project="shop", kind="observation", valid_from=when)])[0]
        for text, when in (
            ("We deploy the shop API on Fly.io. Can you help me write a Dockerfile?", datetime(2026, 1, 2, tzinfo=UTC)),
            ("Quick update: we're on Render now for the shop API.", datetime(2026, 1, 20, tzinfo=UTC)),
        )
    )
    query = "where is the shop API deployed?"
    hits = memory.recall(query, project="shop", k=5)
    claim = next(h for h in hits if h.memory.kind == CLAIM and h.stated_in is not None)
    assert claim.stated_in is not None and claim.stated_in.id == new.id
    stale = next(h for h in hits if h.memory.id == old.id)
    assert stale.older_than is not None
    r = client.get("/ui/p/shop/", params={"q": query}, headers=auth("read"))
    assert r.status_code == 200
    row = next(tr for tr in r.text.split("<tr>") if f'href="/ui/memories/{claim.memory.id}">#' in tr)
    assert f'(said in <a href="/ui/memories/{new.id}">#{new.id}</a>)' in row
    row = next(tr for tr in r.text.split("<tr>") if f'<td><a href="/ui/memories/{old.id}">' in tr)
    n = stale.older_than
    assert f'(older than <a href="/ui/memories/{n}">#{n}</a>: claim superseded)' in row and "said in" not in row
    page = client.get(f"/ui/memories/{claim.memory.id}", headers=auth("read")).text
    assert f'<dt>Said in</dt><dd><a href="/ui/memories/{new.id}">#{new.id}</a></dd>' in page
