"""The TypeScript client (clients/typescript): its types are the server's OpenAPI schema, a renamed
server field fails its check, and its node tests pass against a real server.

Needs node and the package's dev dependencies (`npm ci --prefix clients/typescript`, which the
README's test command runs). Without node the tests fail, unless AGENTMEM_ALLOW_NO_NODE=1 is set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from agentmem import Memory
from api.app import create_app
from api.settings import load
from servers import Server

PACKAGE = Path(__file__).parent.parent / "clients" / "typescript"
BIN = PACKAGE / "node_modules" / ".bin"
TOKEN = "typescript-client-secret-0001"


@pytest.fixture(autouse=True)
def node() -> None:
    needs = {
        "node": shutil.which("node"),
        "npm": shutil.which("npm"),
        "npm ci --prefix clients/typescript": (BIN / "tsc").exists(),
    }
    missing = [what for what, ok in needs.items() if not ok]
    if missing:
        if os.environ.get("AGENTMEM_ALLOW_NO_NODE") == "1":
            pytest.skip("missing: " + ", ".join(missing))
        pytest.fail("the TypeScript client's tests need: " + ", ".join(missing))


def live_schema(memory: Memory) -> dict[str, Any]:
    with TestClient(create_app(load(env={}), mem=memory), base_url="http://127.0.0.1") as c:
        return c.get("/docs/openapi.json").json()  # type: ignore[no-any-return]


def generate(schema: dict[str, Any], into: Path) -> str:
    """src/schema.ts as `npm run schema` makes it, from this OpenAPI document."""
    spec = into / "openapi.json"
    spec.write_text(json.dumps(schema))
    out = into / "schema.ts"
    cmd = [str(BIN / "openapi-typescript"), str(spec), "--default-non-nullable", "false", "--output", str(out)]
    done = subprocess.run(cmd, cwd=PACKAGE, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return out.read_text()


def compile_with(schema_ts: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """tsc over a copy of the package's client and tests, with this schema in place of src/schema.ts."""
    copy = tmp_path / "pkg"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("node_modules", "dist"))
    (copy / "node_modules").symlink_to(PACKAGE / "node_modules")
    (copy / "src" / "schema.ts").write_text(schema_ts)
    return subprocess.run(
        [str(BIN / "tsc"), "-p", "tsconfig.json", "--noEmit"], cwd=copy, capture_output=True, text=True
    )


def test_the_committed_types_are_the_servers_schema(memory: Memory, tmp_path: Path) -> None:
    generated = generate(live_schema(memory), tmp_path)
    assert generated == (PACKAGE / "src" / "schema.ts").read_text(), (
        "the server's OpenAPI schema changed: regenerate with "
        "`AGENTMEM_OPENAPI=http://127.0.0.1:8420/docs/openapi.json npm run schema` in clients/typescript"
    )


@pytest.mark.parametrize(
    ("schema", "old", "new"), [("MemoryVersion", "content", "text"), ("Hit", "has_history", "history")]
)
def test_a_renamed_server_field_fails_the_check(
    memory: Memory, tmp_path: Path, schema: str, old: str, new: str
) -> None:
    spec = live_schema(memory)
    shape = spec["components"]["schemas"][schema]
    shape["properties"][new] = shape["properties"].pop(old)
    shape["required"] = [new if f == old else f for f in shape.get("required", [])]
    renamed = generate(spec, tmp_path)
    assert renamed != (PACKAGE / "src" / "schema.ts").read_text()  # the drift check above fails
    compiled = compile_with(renamed, tmp_path)  # and so does the client's own type check
    assert compiled.returncode != 0 and f"'{old}'" in compiled.stdout, compiled.stdout


def test_the_unchanged_schema_compiles(memory: Memory, tmp_path: Path) -> None:
    compiled = compile_with(generate(live_schema(memory), tmp_path), tmp_path)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr


@pytest.mark.model
@pytest.mark.slow
def test_the_node_tests_pass_against_a_real_server(tmp_path: Path) -> None:
    server = Server(tmp_path / "data", tokens=f"ts:{TOKEN}:admin:ts")
    server.start()
    try:
        env = {**os.environ, "AGENTMEM_URL": server.url, "AGENTMEM_TOKEN": TOKEN, "AGENTMEM_PROJECT": "ts"}
        done = subprocess.run(["npm", "test"], cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=600)
    finally:
        server.close()
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "# fail 0" in done.stdout and "# pass 6" in done.stdout, done.stdout[-3000:]
