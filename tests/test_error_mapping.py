"""Every error carries its HTTP status, exit code and code; the API, the viewer, the client and the
CLI all answer with what the error carries."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient
from test_api import ENV, auth
from test_viewer import sign_in

from agentmem import Memory, errors
from agentmem.cli import main
from agentmem.errors import ERRORS, AccessDeniedError, AgentMemError, NotFoundError, ValidationError, for_reply
from api.app import create_app
from api.settings import load


class Unmapped(AgentMemError):
    """An error that says nothing of its own mapping: it gets the root's (500, exit 1)."""


@pytest.fixture
def client(memory: Memory) -> Iterator[TestClient]:  # type: ignore[type-arg]
    with TestClient(create_app(load(env=ENV), mem=memory)) as c:
        yield c


def fail_with(monkeypatch: pytest.MonkeyPatch, memory: Memory, error: AgentMemError) -> None:
    def stats(*_: Any) -> Any:
        raise error

    monkeypatch.setattr(memory, "stats", stats)


@pytest.mark.parametrize("cls", [*ERRORS, Unmapped], ids=lambda c: c.__name__)
def test_api_and_viewer_answer_the_status_the_error_carries(client, memory, monkeypatch, cls) -> None:  # type: ignore[no-untyped-def]
    fail_with(monkeypatch, memory, cls("boom"))
    r = client.get("/v1/stats", headers=auth("read"))
    assert (r.status_code, r.json()["error"]) == (cls.status, {"code": cls.code, "message": "boom", "details": None})
    assert for_reply(r.status_code, r.json()["error"]["code"]) is (AgentMemError if cls is Unmapped else cls)
    sign_in(client, "read")
    page = client.get("/ui/p/shop/stats")
    assert page.status_code == r.status_code and "text/html" in page.headers["content-type"]
    assert f"{cls.status}: boom" in page.text and f"<title>{cls.label.capitalize()}" in page.text


def test_an_unmapped_error_is_500_in_the_api_and_the_viewer(client, memory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    fail_with(monkeypatch, memory, Unmapped("nobody mapped me"))
    assert client.get("/v1/stats", headers=auth("read")).status_code == 500
    sign_in(client, "read")
    assert client.get("/ui/p/shop/stats").status_code == 500


class Failing:
    """What the CLI opens instead of a data directory: every command meets `error`."""

    def __init__(self, error: AgentMemError) -> None:
        self.error = error

    def __enter__(self) -> Failing:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def close(self) -> None:
        pass

    def stats(self, projects: object = None) -> None:
        raise self.error


@pytest.mark.parametrize("cls", [*ERRORS, Unmapped], ids=lambda c: c.__name__)
def test_cli_exits_with_the_code_the_error_carries(cls, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(["--data-dir", str(tmp_path), "stats"], open_memory=lambda _: Failing(cls("boom")))
    assert code == cls.exit_code and capsys.readouterr().err == f"agentmem: {cls.label}: boom\n"


def test_readme_exit_codes() -> None:
    codes = (AgentMemError, ValidationError, NotFoundError, errors.StoreLockedError)
    assert tuple(c.exit_code for c in codes) == (1, 2, 3, 4)


@pytest.mark.parametrize(
    ("method", "path", "body", "who", "status", "cls"),
    [
        ("GET", "/v1/stats", None, None, 401, AccessDeniedError),  # no token
        ("POST", "/v1/check", None, "read", 403, AccessDeniedError),  # the role is too low
        ("POST", "/v1/memories", {"content": "x" * 30_000}, "write", 413, ValidationError),  # over the body limit
        ("POST", "/v1/memories", {"content": 5}, "write", 400, ValidationError),
        ("GET", "/v1/memories/99", None, "read", 404, NotFoundError),
        ("GET", "/v1/no-such-route", None, "read", 404, NotFoundError),
        ("DELETE", "/v1/stats", None, "read", 405, AgentMemError),
    ],
)
def test_a_client_reads_litestar_refusals_as_agentmem_errors(client, method, path, body, who, status, cls) -> None:  # type: ignore[no-untyped-def]
    r = client.request(method, path, json=body, headers=auth(who))
    assert r.status_code == status
    assert for_reply(r.status_code, r.json()["error"]["code"]) is cls


def test_a_5xx_that_is_not_ours_is_the_service_failing() -> None:
    assert for_reply(502, None) is for_reply(500, "internal") is errors.ServiceUnavailableError


def test_the_docstring_tree_is_the_real_one() -> None:
    drawn = {m[1]: (int(m[2]), int(m[3])) for m in re.finditer(r"(\w+Error)\s+(\d{3})\s+(\d)\s", errors.__doc__ or "")}
    assert drawn == {c.__name__: (c.status, c.exit_code) for c in ERRORS}
    order = re.findall(r"^[│├└─ ]*(\w+Error)\b", errors.__doc__ or "", re.M)
    assert order == [c.__name__ for c in ERRORS]
