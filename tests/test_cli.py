"""The CLI through its real entry point: exit codes and what a user reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from litestar.testing import TestClient

from agentmem import Memory, NewMemory
from agentmem.cli import main
from api.app import create_app
from api.settings import load
from fakes import FakeEmbedder
from servers import TOKEN, app_client


@pytest.fixture
def run(data_dir: Path, capsys):  # type: ignore[no-untyped-def]
    def _run(*argv: str) -> tuple[int, str, str]:
        code = main(["--data-dir", str(data_dir), *argv], open_memory=lambda p: Memory(p, embedder=FakeEmbedder()))
        out = capsys.readouterr()
        return code, out.out, out.err

    return _run


def test_remember_supersede_recall_history(run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run("remember", "The API listens on port 8080", "--project", "shop", "--key", "api.port")
    assert code == 0 and out.startswith("created: #1 v1")
    code, out, _ = run("remember", "We're on 4000 now", "--project", "shop", "--key", "api.port")
    assert code == 0 and "superseded" in out and "replaced #1 by key" in out
    code, out, _ = run("--json", "recall", "port", "--project", "shop")
    hits = json.loads(out)
    assert code == 0 and [h["memory"]["content"] for h in hits] == ["We're on 4000 now"]
    code, out, _ = run("history", "2")
    assert code == 0 and "#1 v1 [superseded]" in out and "superseded by #2" in out and "#2 v2 [current]" in out
    code, out, _ = run("--json", "get", "1")
    assert json.loads(out)["superseded_by"] == 2
    code, out, _ = run("stats")
    assert code == 0 and "versions: 2" in out and "latest_active: 1" in out
    code, out, _ = run("check")
    assert code == 0 and out.strip().endswith("consistent")
    code, out, _ = run("rebuild", "--only", "bm25")
    assert code == 0 and "consistent" in out


def test_export_import_round_trip(run, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    run("remember", "The API listens on port 8080", "--project", "shop", "--key", "api.port")
    run("remember", "The API listens on port 4000", "--project", "shop", "--key", "api.port")
    dump = tmp_path / "dump.jsonl"
    code, _, err = run("export", str(dump))
    assert code == 0 and "exported 3 lines" in err  # two versions and the audit entry of the supersede
    other = tmp_path / "other"
    code = main(
        ["--data-dir", str(other), "import", str(dump)], open_memory=lambda p: Memory(p, embedder=FakeEmbedder())
    )
    assert code == 0 and "imported 2 versions" in capsys.readouterr().out
    code = main(
        ["--data-dir", str(other), "export", str(tmp_path / "again.jsonl")],
        open_memory=lambda p: Memory(p, embedder=FakeEmbedder()),
    )
    assert dump.read_text().splitlines()[1:] == (tmp_path / "again.jsonl").read_text().splitlines()[1:]


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["remember", "   "], 2, "content may not be empty"),
        (["remember", "x", "--kind", "gossip"], 2, "unknown kind 'gossip'"),
        (["remember", "x", "--valid-from", "someday"], 2, "ISO 8601"),
        (["recall", "x", "-k", "0"], 2, "k: expected"),
        (["get", "77"], 3, "no memory with id 77"),
        (["history", "77"], 3, "no memory with id 77"),
        (["import", "/nonexistent/file.jsonl"], 2, "no such file"),
        (["import", "/"], 2, "is a directory"),
        (["export", "/nonexistent/dir/dump.jsonl"], 2, "no such file"),
    ],
)
def test_bad_input_exits_non_zero_with_a_message(run, argv, code, message) -> None:  # type: ignore[no-untyped-def]
    got, out, err = run(*argv)
    assert got == code and message in err and out == ""


def test_lifecycle_commands(run, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    run("remember", "Saw the build go red", "--project", "p", "--kind", "observation")
    run("remember", "The team wiki lives on Confluence", "--project", "p")
    code, out, _ = run("pin", "2")
    assert code == 0 and out.startswith("pinned #2")
    code, out, _ = run("retention", "1")
    assert code == 0 and out.startswith("#1 ") and "retention" in out
    code, out, _ = run("sweep", "--dry-run", "--threshold", "1")
    assert code == 0 and out.startswith("would archive 1 faded") and "#1 archive" in out
    code, out, _ = run("--json", "sweep", "--threshold", "1")
    assert code == 0 and json.loads(out)["archived"] == 1
    code, out, _ = run("archived")
    assert code == 0 and "#1 v1 [archived]" in out and "#2" not in out
    code, out, _ = run("restore", "1")
    assert code == 0 and out.startswith("restored #1")
    code, _, err = run("restore", "1")
    assert code == 1 and "not archived" in err
    code, _, err = run("delete", "--reason", "cleanup")
    assert code == 2 and "name what to delete" in err
    code, out, _ = run("delete", "--id", "1", "--reason", "cleanup", "--dry-run")
    assert code == 0 and out.startswith("would delete 1 versions")
    code, out, _ = run("delete", "--project", "p", "--kind", "observation", "--reason", "cleanup")
    assert code == 0 and out.startswith("deleted 1 versions")
    code, out, _ = run("audit", "--project", "p")
    actions = [line.split()[2] for line in out.splitlines()]
    assert code == 0 and actions == ["delete", "restore", "archive", "pin"]
    code, _, err = run("audit", "--action", "nap")
    assert code == 2 and "nap" in err
    code, out, _ = run("compact")
    assert code == 0 and out.startswith("compacted:")
    with pytest.raises(SystemExit):
        run("delete", "--id", "1")  # --reason is required


def test_compact_finds_the_database_where_memory_puts_it(run, data_dir: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import agentmem.embedded

    monkeypatch.setattr(agentmem.embedded, "DB_FILE", "renamed.duckdb")  # the CLI knows no file name of its own
    run("remember", "The wiki moved to Notion", "--project", "p")
    code, out, err = run("compact")
    assert code == 0 and out.startswith("compacted:"), err
    assert (data_dir / "renamed.duckdb").exists() and not (data_dir / "agentmem.duckdb").exists()


def test_consolidation_commands(run, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
    with Memory(data_dir, embedder=FakeEmbedder()) as mem:
        for session in ("s1", "s2"):
            mem.observe([NewMemory(content="The upload test is flaky on CI", project="p", kind="observation",
                                   tier="working", session=session)])  # fmt: skip
    code, out, _ = run("end-session", "s1", "--project", "p")
    assert code == 0 and out.startswith("created: #4")  # after two turns and the claim they both make
    code, _, err = run("end-session", "zzz", "--project", "p")
    assert code == 3 and "zzz" in err
    code, out, _ = run("consolidate", "--pass", "semantic")
    assert code == 0 and "p semantic: 1 created" in out
    with Memory(data_dir, embedder=FakeEmbedder()) as mem:
        (semantic,) = mem.list_versions(projects=["p"], kinds=["fact"])[0]
    code, out, _ = run("provenance", str(semantic.id))
    assert code == 0 and "sessions s1, s2" in out and out.count("<-") == 2


def test_the_commands_through_a_service(data_dir: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The CLI over a Client (what --url opens) runs the same commands with the same filters."""
    env = {"AGENTMEM_TOKENS": f"a:{TOKEN}:admin:*", "AGENTMEM_SWEEP_EVERY_MINUTES": "0",
           "AGENTMEM_CONSOLIDATE_EVERY_MINUTES": "0"}  # fmt: skip
    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"role": "user", "content": "My favorite editor is vim.", "id": "a"}\n')
    with Memory(data_dir, embedder=FakeEmbedder()) as mem, TestClient(create_app(load(env=env), mem=mem)) as app:

        def run(*argv: str) -> tuple[int, str]:
            code = main(list(argv), open_memory=lambda _path: app_client(app, TOKEN))
            return code, capsys.readouterr().out

        assert run("remember", "The lab listens on port 9000", "--project", "lab")[0] == 0
        assert run("remember", "The shop listens on port 8080", "--project", "shop")[0] == 0
        code, out = run("sweep", "--threshold", "1", "--project", "lab", "--project", "shop")
        assert code == 0 and out.startswith("archived 2 faded")
        code, out = run("archived", "--project", "lab")
        assert code == 0 and "lab listens" in out and "shop" not in out
        code, out = run("rebuild", "--only", "bm25")
        assert code == 0 and out.strip().endswith("consistent")
        assert mem.audit(actions=["rebuild"])[0][0].details["indexes"] == ["bm25"]
        code, out = run("ingest", "conversation", str(chat), "--project", "shop", "--session", "s-1")
        assert code == 0 and "admitted 1 of 1" in out and "s-1#a" in out


@pytest.mark.model
def test_the_issue_example_from_the_shell(tmp_path: Path) -> None:
    """`agentmem remember` twice and `agentmem recall` on a fresh data directory, real model, no key:
    the move stated as news supersedes, and the old value is reachable with --include-superseded."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    base = [sys.executable, "-m", "agentmem", "--data-dir", str(tmp_path / "data")]

    def agentmem(*argv: str) -> str:
        done = subprocess.run([*base, *argv], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert agentmem("remember", "We deploy the shop API on Fly.io", "--project", "shop").startswith("created: #1 v1")
    out = agentmem("remember", "We're on Render now for the shop API", "--project", "shop")
    assert out.startswith("superseded: #2 v2 [current]") and "replaced #1 by moved" in out
    out = agentmem("recall", "where is the shop API deployed?", "--project", "shop", "-k", "3")
    assert out.splitlines()[0].endswith("We're on Render now for the shop API") and "Fly.io" not in out
    out = agentmem("recall", "where is the shop API deployed?", "--project", "shop", "--include-superseded")
    lines = out.splitlines()
    assert "Render" in lines[0] and "Fly.io" in lines[1] and "(superseded by #2)" in lines[1]
