"""The version is written once, in agentmem.__version__; the package metadata and the API's
OpenAPI page say the same."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from litestar.testing import TestClient

import agentmem
from agentmem import Memory
from api.app import create_app
from api.settings import load

ROOT = Path(__file__).parent.parent


def test_the_version_is_written_once() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "agentmem.__version__"}
    quoted = f'"{agentmem.__version__}"'
    sources = [ROOT / "pyproject.toml", *(p for d in ("agentmem", "api", "indexes") for p in (ROOT / d).rglob("*.py"))]
    assert [p.relative_to(ROOT).as_posix() for p in sources if quoted in p.read_text()] == ["agentmem/__init__.py"]


def test_metadata_and_openapi_say_the_same(memory: Memory) -> None:
    assert metadata.version("agentmem") == agentmem.__version__, "reinstall: pip install -e ."
    with TestClient(create_app(load(env={}), mem=memory), base_url="http://127.0.0.1") as c:
        assert c.get("/docs/openapi.json").json()["info"]["version"] == agentmem.__version__
