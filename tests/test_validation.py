"""Bad input: one error tree, a clear message, and nothing written."""

from __future__ import annotations

from typing import Any

import pytest

from agentmem import AgentMemError, Memory, NotFoundError, SchemaTooNewError, StoreLockedError, ValidationError

BAD: list[tuple[str, dict[str, Any], str]] = [
    ("empty content", {"content": "   "}, "content may not be empty"),
    ("NUL in content", {"content": "a\x00b"}, "NUL"),
    ("oversize content", {"content": "x" * 40_000}, "at most 32000"),
    ("unknown kind", {"kind": "gossip"}, "unknown kind 'gossip'"),
    ("unknown tier", {"tier": "lukewarm"}, "unknown tier"),
    ("no project", {"project": ""}, "project is required"),
    ("key with no project", {"project": None, "key": "db"}, "project is required"),
    ("bad timestamp", {"valid_from": "last tuesday"}, "not an ISO 8601 timestamp"),
    ("expiry in the past", {"expires_at": "2001-01-01T00:00:00Z"}, "in the past"),
    ("negative ttl", {"ttl_days": -3}, "ttl_days"),
    ("absurd ttl", {"ttl_days": 1e9}, "ttl_days"),
    ("ttl and expiry", {"ttl_days": 3, "expires_at": "2030-01-01T00:00:00Z"}, "either"),
    ("salience out of range", {"salience": 1.5}, "salience"),
    ("control chars in key", {"key": "a\nb"}, "control characters"),
    ("unknown field", {"colour": "red"}, "colour"),
    ("empty triple part", {"triple": {"subject": "a", "predicate": " ", "object": "c"}}, "triple.predicate"),
]


@pytest.mark.parametrize(("fields", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_remember_writes_nothing(memory: Memory, fields: dict[str, Any], message: str) -> None:
    from agentmem import Triple

    args: dict[str, Any] = {"content": "We use Postgres", "project": "p", **fields}
    if isinstance(args.get("triple"), dict):
        args["triple"] = Triple(**args["triple"])
    before = memory.stats()
    with pytest.raises(ValidationError, match=message) as info:
        memory.remember(**args)
    assert isinstance(info.value, AgentMemError)
    assert memory.stats() == before
    assert memory.store.scalar("SELECT count(*) FROM outbox") == 0


def test_second_process_is_refused_clearly(data_dir, embedder) -> None:  # type: ignore[no-untyped-def]
    import subprocess
    import sys
    from pathlib import Path

    with Memory(data_dir, embedder=embedder):
        tests = Path(__file__).parent
        code = (
            f"import sys; sys.path[:0] = [{str(tests)!r}, {str(tests.parent)!r}]\n"
            "from agentmem import Memory, StoreLockedError\nfrom fakes import FakeEmbedder\n"
            f"try:\n    Memory({str(data_dir)!r}, embedder=FakeEmbedder())\n"
            "except StoreLockedError as e:\n    print('LOCKED', e)\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.stdout.startswith("LOCKED") and "another process" in out.stdout, out.stderr
    assert StoreLockedError.code == "store_locked"


def test_newer_schema_is_refused_untouched(data_dir, embedder) -> None:  # type: ignore[no-untyped-def]
    import duckdb

    with Memory(data_dir, embedder=embedder) as mem:
        mem.remember("We use Postgres", project="p")
    db = data_dir / "agentmem.duckdb"
    with duckdb.connect(str(db)) as conn:
        conn.execute("INSERT INTO schema_migrations (version, name) VALUES (99, 'm099_from_the_future')")
    before = db.read_bytes()
    with pytest.raises(SchemaTooNewError, match="schema version 99"):
        Memory(data_dir, embedder=embedder)
    assert db.read_bytes() == before


@pytest.mark.parametrize("bad", ["abc", 2.5, None, True])
def test_get_with_a_non_id_is_bad_input(memory: Memory, bad: object) -> None:
    with pytest.raises(ValidationError, match="memory id"):
        memory.get(bad)  # type: ignore[arg-type]


def test_ids_beyond_the_one_bound_are_unknown(memory: Memory) -> None:
    from agentmem.validate import MAX_ID

    with pytest.raises(NotFoundError):
        memory.get(MAX_ID + 1)
    with pytest.raises(ValidationError, match="1 to 2"):
        memory.delete(ids=[MAX_ID + 1], reason="x")


@pytest.mark.parametrize("limit", [2.5, "10", 0, True])
def test_list_versions_with_a_bad_limit_is_bad_input(memory: Memory, limit: object) -> None:
    with pytest.raises(ValidationError, match="limit"):
        memory.list_versions(limit=limit)  # type: ignore[arg-type]
