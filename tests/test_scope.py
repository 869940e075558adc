"""Who may see and read what, through the real server: figures per project, ingest only under the
configured roots, and a viewer session that never carries the token itself."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from servers import Server

pytestmark = [pytest.mark.model, pytest.mark.slow]

SECRETS = {
    "alpha": "alpha-admin-secret-00000001",  # admin, but of project alpha only
    "beta": "beta-writer-secret-00000002",
    "root": "root-admin-secret-000000003",  # admin of every project
}
TOKENS = f"a:{SECRETS['alpha']}:admin:alpha;b:{SECRETS['beta']}:write:beta;r:{SECRETS['root']}:admin:*"


ALPHA = [("alpha", t) for t in ("Gears are cut in Leeds", "The lathe runs on Tuesdays", "Oil the bearings weekly")]
BETA = [("beta", t) for t in ("Sprockets ship from Porto", "Invoices go out in euros")]


def auth(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {SECRETS[who]}"}


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """roots/alpha (alpha's ingest root) with a note, a link inside it to a secret outside, and that secret."""
    base = tmp_path_factory.mktemp("ingest")
    alpha = base / "roots" / "alpha"
    alpha.mkdir(parents=True)
    (alpha / "decisions.md").write_text("# Decisions\n\n- Deploys happen on Fridays.\n")
    secret = base / "secret"
    secret.mkdir()
    (secret / "keys.md").write_text("# Decisions\n\n- The vault key is hunter2 forever.\n")
    (alpha / "escape").symlink_to(secret, target_is_directory=True)
    (alpha / "leak.md").symlink_to(secret / "keys.md")
    return base


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, roots: Path) -> Iterator[Server]:
    s = Server(
        tmp_path_factory.mktemp("scope") / "data",
        tokens=TOKENS,
        env={"AGENTMEM_INGEST_ROOTS": f"{roots / 'roots' / 'alpha'}=alpha"},
    )
    s.start()
    with httpx.Client(base_url=s.url) as c:
        for who, content in ALPHA + BETA:
            assert c.post("/v1/memories", json={"content": content}, headers=auth(who)).status_code == 201
        check = c.post("/v1/check", headers=auth("root")).json()  # and the indexes hold all 5 now
        assert [(i["count"], i["missing"]) for i in check["indexes"]] == [(5, []), (5, [])], check
    yield s
    s.close()


def gauges(text: str) -> dict[str, float]:
    """The unlabelled samples of a Prometheus text page, by name."""
    return {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples if not s.labels}


def test_a_project_token_sees_only_its_projects_figures(served: Server) -> None:
    with httpx.Client(base_url=served.url) as c:
        beta = c.get("/v1/stats", headers=auth("beta")).json()
        assert (beta["latest_active"], beta["bm25_docs"], beta["vector_docs"], beta["projects"]) == (2, 2, 2, 1)
        everything = c.get("/v1/stats", headers=auth("root")).json()
        assert (everything["bm25_docs"], everything["vector_docs"]) == (5, 5)

        for who, current in (("beta", 2), ("alpha", 3)):  # a project admin is still a project token
            text = c.get("/metrics", headers=auth(who)).text
            assert gauges(text)["agentmem_current_memories"] == current and "agentmem_bm25_documents" in gauges(text)
            assert "agentmem_requests_total" not in text and "request_seconds" not in text and "index_stale" not in text
        whole = c.get("/metrics", headers=auth("root")).text
        assert gauges(whole)["agentmem_current_memories"] == 5 and "agentmem_requests_total{" in whole

        assert c.post("/v1/check", headers=auth("alpha")).status_code == 403  # every project's index ids
        for headers in ({}, auth("alpha"), auth("beta")):  # /ready: outbox lag counts every project's writes
            assert c.get("/ready", headers=headers).json() == {"ready": True, "state": "ready"}
        assert c.get("/ready", headers=auth("root")).json()["outbox_lag"] == 0
        page = c.get("/ui/p/beta/stats", headers=auth("beta")).text
        assert "2 / 2 of 2 current" in page


@pytest.mark.parametrize(
    ("path", "project", "status"),
    [
        ("/etc", "alpha", 403),
        ("/proc/self", "alpha", 403),
        ("{alpha}/../../secret", "alpha", 403),  # `..` out of the root
        ("{alpha}/escape", "alpha", 403),  # a link out of the root
        ("roots/alpha", "alpha", 400),  # relative: against what?
        ("{alpha}", "beta", 403),  # alpha's token may not write beta
    ],
)
def test_admin_ingest_reads_only_under_its_roots(
    served: Server, roots: Path, path: str, project: str, status: int
) -> None:
    alpha = roots / "roots" / "alpha"
    body = {"path": path.format(alpha=alpha), "project": project, "dry_run": True}
    for route in ("/v1/ingest/notes", "/v1/ingest/code"):
        r = httpx.post(f"{served.url}{route}", json=body, headers=auth("alpha"))
        assert r.status_code == status, r.text
        assert "hunter2" not in r.text


def test_admin_ingest_under_a_root_skips_links_that_leave_it(served: Server, roots: Path) -> None:
    body = {"path": str(roots / "roots" / "alpha"), "project": "alpha", "dry_run": True}
    r = httpx.post(f"{served.url}/v1/ingest/notes", json=body, headers=auth("alpha"))
    assert r.status_code == 200, r.text
    report = r.json()
    assert [i["ref"] for i in report["admitted_items"]] == ["decisions.md:3"]
    assert report["skipped"]["symlink"] == 2 and "hunter2" not in r.text
    # the root token covers beta, but alpha's root feeds alpha only
    r = httpx.post(f"{served.url}/v1/ingest/notes", json={**body, "project": "beta"}, headers=auth("root"))
    assert r.status_code == 403


def test_the_viewer_cookie_is_a_session_that_sign_out_ends(served: Server) -> None:
    with httpx.Client(base_url=served.url) as c:
        r = c.post("/ui/login", data={"token": SECRETS["beta"], "next": "/ui/"})
        assert r.status_code == 303
        cookie = r.headers["set-cookie"]
        sid = c.cookies["agentmem_ui"]
        assert SECRETS["beta"] not in cookie and hashlib.sha256(SECRETS["beta"].encode()).hexdigest() not in cookie
        assert len(sid) >= 40 and "httponly" in cookie.lower() and "secure" not in cookie.lower()  # plain http
        page = c.get("/ui/p/beta/")
        assert page.status_code == 200 and "Sprockets ship from Porto" in page.text
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text)
        assert csrf is not None
        assert c.post("/ui/logout", data={"csrf": csrf.group(1)}).status_code == 303
    # the cookie copied before sign-out no longer opens anything
    r = httpx.get(f"{served.url}/ui/p/beta/", cookies={"agentmem_ui": sid})
    assert r.status_code == 401 and "Sign in" in r.text
