"""Admission: the extractor's verdicts, conversations, notes, source trees, bad input and the scan audit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentmem import Memory, ValidationError, writes
from agentmem.admission import REASONS, ingest_notes, propose
from agentmem.admission.extract import sentences
from agentmem.admission.notes import intent_view
from agentmem.cli import main
from agentmem.operations import IngestPathRequest
from fakes import FakeEmbedder

BACKENDS = ("duckdb", "postgres")  # tests taking `memory` run on both (see conftest.py)

ADMITTED = [
    ("My name is Ada Lovelace.", "identity", ("user", "name", "Ada Lovelace")),
    ("I live in Oslo.", "identity", ("user", "lives in", "Oslo")),
    ("I work at Acme as of this year.", "identity", ("user", "works at", "Acme as of this year")),
    ("I'm a software engineer.", "identity", None),
    ("My favorite editor is vim.", "preference", ("user", "favorite editor", "vim")),
    ("I prefer tabs for indentation.", "preference", ("user", "prefers for indentation", "tabs")),
    ("I really love hiking in the mountains.", "preference", None),
    ("We decided to use Postgres for the orders service.", "decision", None),
    ("We moved to MySQL in March.", "decision", None),
    ("Let's go with the blue logo.", "decision", None),
    ("The API runs on port 8080.", "config", ("API", "port", "8080")),
    ("The API port is 8080.", "config", ("API", "port", "8080")),
    ("The worker timeout is set to 30 seconds.", "config", ("worker timeout", "is set to", "30 seconds")),
    ("The billing service uses Stripe.", "fact", ("billing service", "uses", "Stripe")),
    ("We use ruff for linting.", "fact", None),
    ("I usually run the linter before committing.", "fact", None),
    ("We always squash merge pull requests.", "procedure", None),
    ("My dog is called Rex.", "fact", ("user", "dog", "called Rex")),
    ("Actually, my favorite editor is emacs now.", "preference", ("user", "favorite editor", "emacs")),
]

REJECTED = [
    ("/usr/local/bin/python3", "path"),
    ("See ~/projects/shop/config/settings.toml", "path"),
    ("git push origin main", "command"),
    ("$ ls -la /tmp", "command"),
    ("npm install && npm run build", "command"),
    ("def handler(event): return event", "code"),
    ("const total = items.reduce((a, b) => a + b, 0);", "code"),
    ("from os import path", "code"),
    ("Traceback (most recent call last):", "generated_output"),
    ("===== 5 passed in 0.31s =====", "generated_output"),
    ("2026-01-02 10:00:01 ERROR connection refused", "generated_output"),
    ("My api_key is sk-abcdefghijklmnopqrstuvwx", "secret"),
    ("Let me check the logs first.", "procedural"),
    ("I'll run the migration now.", "procedural"),
    ("Thanks, I appreciate it.", "procedural"),
    ("If we switch to Redis we should cache sessions.", "hypothetical"),
    ("Maybe we could try Kafka.", "hypothetical"),
    ("I ran the tests.", "event"),
    ("I fixed the login bug yesterday.", "event"),
    ("We're deploying the hotfix.", "event"),
    ("My 2 cents is that it works.", "malformed_predicate"),
    ("My favorite thing is it.", "malformed_predicate"),
    ("I'm so tired today.", "event"),
    ("I'm swamped with work.", "no_claim"),
]


@pytest.mark.parametrize(("text", "kind", "triple"), ADMITTED, ids=[t for t, _, _ in ADMITTED])
def test_admitted_statements(text: str, kind: str, triple: tuple[str, str, str] | None) -> None:
    [c] = propose(text, speaker="user", ref="s#1")
    assert c.reason is None and c.kind == kind, c
    got = (c.triple.subject, c.triple.predicate, c.triple.object) if c.triple else None
    assert got == triple


@pytest.mark.parametrize(("text", "reason"), REJECTED, ids=[t for t, _ in REJECTED])
def test_rejected_statements(text: str, reason: str) -> None:
    [c] = propose(text, speaker="user", ref="s#1")
    assert c.reason == reason, c
    assert c.reason in REASONS


def test_questions_and_chit_chat_are_not_candidates() -> None:
    assert propose("What do you think? That's awesome! Good to see you.", speaker="user", ref="s#1") == []


def test_a_message_gives_one_candidate_a_sentence() -> None:
    found = propose("Hi! My favorite editor is vim. I ran the tests.\n```\nrm -rf /\n```", speaker="u", ref="s#1")
    assert [(c.text, c.reason) for c in found] == [
        ("My favorite editor is vim.", None),
        ("I ran the tests.", "event"),
        ("```\nrm -rf /\n```", "code"),
    ]


def _conversation(path: Path, messages: list[dict[str, object]], session: str = "s-7") -> Path:
    path.write_text(json.dumps({"session": session, "messages": messages}))
    return path


def test_conversation_preference_change_supersedes_with_history(memory: Memory, tmp_path: Path) -> None:
    f = _conversation(
        tmp_path / "chat.json",
        [
            {"role": "user", "content": "My favorite editor is vim.", "id": "m1", "time": "2026-01-01T09:00:00Z"},
            {"role": "assistant", "content": "I prefer emacs myself.", "id": "m2"},
            {"role": "tool", "content": "My favorite editor is nano.", "id": "m3"},
            {"role": "user", "content": "/clear", "id": "m4"},
            {"role": "user", "content": "I ran the tests. My favorite editor is emacs now.", "id": "m5",
             "time": "2026-01-05T09:00:00Z"},
        ],
    )  # fmt: skip
    r = memory.ingest_conversation(f, project="shop")
    assert r.status == "completed" and r.units == 5
    assert r.skipped == {"assistant_message": 1, "session_action": 1, "tool_message": 1}
    assert (r.admitted, r.rejected, r.rejected_by_reason) == (2, 1, {"event": 1})
    assert r.outcomes == {"created": 1, "superseded": 1}
    first, second = r.admitted_items
    assert (first.ref, second.ref) == ("s-7#m1", "s-7#m5")
    history = memory.history(second.memory_id or 0)
    assert [v.content for v in history] == ["My favorite editor is vim.", "My favorite editor is emacs now."]
    old, new = history
    assert old.status == "superseded" and old.superseded_by == new.id and new.is_latest
    assert (new.source, new.session, new.source_ref, new.kind) == ("conversation", "s-7", "s-7#m5", "preference")
    assert new.triple is not None and new.triple.object == "emacs"
    assert new.valid_from.isoformat().startswith("2026-01-05") and old.valid_to == new.valid_from
    # each user message is kept whole as a turn, as observe() keeps it; the typed memories it
    # gave are derived from it, and its other sentences that state something are claims
    assert r.turns == {"created": 2} and r.claims == 1
    turns = memory.list_versions(projects=["shop"], kinds=["observation"], latest_only=False)[0]
    by_ref = {t.source_ref: t for t in turns}
    assert sorted(by_ref) == ["s-7#m1", "s-7#m5"]
    said = by_ref["s-7#m5"]
    assert (said.content, said.source, said.session, said.tier) == (
        "I ran the tests. My favorite editor is emacs now.", "conversation", "s-7", "working")  # fmt: skip
    assert said.valid_from == new.valid_from and new.source_ids == [said.id] and old.source_ids == [by_ref["s-7#m1"].id]
    [claim] = memory.list_versions(projects=["shop"], kinds=["claim"])[0]
    assert (claim.content, claim.source_ids, claim.source_ref) == ("I ran the tests.", [said.id], "s-7#m5")
    hits = memory.recall("favorite editor", project="shop")
    assert [h.memory.id for h in hits] == [new.id, said.id, by_ref["s-7#m1"].id]  # the vim turn last

    again = memory.ingest_conversation(f, project="shop")  # the same messages again: nothing replays
    assert again.outcomes == {"unchanged": 2} and memory.get(new.id).is_latest
    assert again.turns == {"unchanged": 2} and again.claims == 0
    assert len(memory.list_versions(projects=["shop"], status=None, latest_only=False)[0]) == 5
    later = memory.ingest_conversation(
        [{"role": "user", "content": "My favorite editor is emacs now.", "id": "m1"}], project="shop", session="s-8"
    )
    assert later.outcomes == {"reinforced": 1} and memory.get(new.id).reinforcements == 1
    assert later.turns == {"created": 1} and later.claims == 0  # its one sentence is the typed memory


def test_assistant_turns_when_asked(memory: Memory) -> None:
    msgs = [{"role": "assistant", "content": "We decided to use Postgres."}]
    assert memory.ingest_conversation(msgs, project="p").admitted == 0
    r = memory.ingest_conversation(msgs, project="p", include_assistant=True, session="s1")
    assert r.admitted == 1 and r.admitted_items[0].ref == "s1#msg-0"


def test_dry_run_lists_rejections_and_writes_nothing(memory: Memory) -> None:
    msgs = [
        {"role": "user", "content": "The API runs on port 8080. cd /srv/app && make deploy", "id": "a"},
        {"role": "user", "content": "Let me check. I restarted the server.", "id": "b"},
    ]
    r = memory.ingest_conversation(msgs, project="p", session="s", dry_run=True)
    assert r.dry_run and r.admitted == 1 and r.outcomes == {}
    assert [(i.ref, i.reason) for i in r.rejected_items] == [("s#a", "command"), ("s#b", "procedural"),
                                                             ("s#b", "event")]  # fmt: skip
    assert memory.stats().versions == 0
    [entry], _ = memory.audit(actions=["ingest"])
    assert entry.details["dry_run"] is True and entry.affected == 0


def test_jsonl_and_malformed_conversations(memory: Memory, tmp_path: Path) -> None:
    f = tmp_path / "chat.jsonl"
    f.write_text(
        '{"session": "s-9"}\n{"role": "user", "content": "I live in Oslo.", "id": 1, "time": 1767225600}\n'
        'not json\n[1, 2]\n{"role": "user"}\n'
        '{"role": "user", "content": [{"type": "text", "text": "My name is Ada."}]}\n'
    )
    r = memory.ingest_conversation(f, project="p")
    assert r.admitted == 2 and r.skipped == {"malformed_message": 3}
    assert [i.ref for i in r.admitted_items] == ["s-9#1", "s-9#msg-3"]

    for name, data in (("bin.json", b"\x00\x01\x02"), ("text.json", b"hello there"), ("obj.json", b'{"a": 1}')):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValidationError):
            memory.ingest_conversation(tmp_path / name, project="p")
    with pytest.raises(ValidationError, match="no such conversation file"):
        memory.ingest_conversation(tmp_path / "missing.json", project="p")
    failed, _ = memory.audit(actions=["ingest"])
    assert [e.details["status"] for e in failed][:4] == ["failed"] * 4
    assert all(e.details["error"] == "ValidationError" and "hello" not in json.dumps(e.details) for e in failed[:4])


def test_notes_intent_view_and_provenance(memory: Memory, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "team").mkdir(parents=True)
    (notes / "db.md").write_text(
        "---\ntitle: db\n---\n"  # lines 1-3
        "# Database\n"  # 4
        "\n"  # 5
        "We use Postgres 15 for orders.\n"  # 6
        "The API runs on port 8080.\n"  # 7
        "\n"  # 8
        "## Decisions\n"  # 9
        "\n"  # 10
        "- Migrations run with alembic.\n"  # 11
        "- Tabs are banned in Python files.\n"  # 12
        "\n"  # 13
        "```sh\npsql -c 'select 1'\n```\n"  # 14-16
        "<!-- a hidden comment that is long enough -->\n"  # 17
        "| a | table |\n"  # 18
        "## Log\n"  # 19
        "I ran the migration on Tuesday.\n"  # 20
        "Look at /var/log/pg.log\n"  # 21
    )
    (notes / "team" / "people.md").write_text("# About me\n\nMy name is Ada.\nI work at Acme.\n")
    (notes / "image.png").write_bytes(b"\x89PNG\x00")
    (notes / "big.md").write_text("x " * 1000)
    view = intent_view((notes / "db.md").read_text())
    assert [s.headings for s in view] == [["Database"], ["Database", "Decisions"], ["Database", "Log"]]
    decisions = [st.text for st in view[1].statements]
    assert decisions == ["Migrations run with alembic.", "Tabs are banned in Python files."]

    # the file size cap is the scan's own, not an argument of the operation
    r = ingest_notes(memory.engine, IngestPathRequest(path=str(notes), project="shop"), max_bytes=1500)
    assert r.status == "completed" and r.units == 2
    assert r.skipped == {"other_type": 1, "too_large": 1}
    got = {(i.ref, i.kind) for i in r.admitted_items}
    assert got == {
        ("db.md:6", "fact"),
        ("db.md:7", "config"),
        ("db.md:11", "decision"),
        ("db.md:12", "decision"),
        ("team/people.md:3", "identity"),
        ("team/people.md:4", "identity"),
    }
    assert {(i.ref, i.reason) for i in r.rejected_items} == {("db.md:20", "event"), ("db.md:21", "path")}
    m = memory.get(next(i.memory_id for i in r.admitted_items if i.ref == "db.md:11") or 0)
    assert (m.source, m.source_ref, m.title, m.kind) == ("note", "db.md:11", "Decisions", "decision")


def _tree(root: Path) -> Path:
    (root / "src" / "shop").mkdir(parents=True)
    (root / "src" / "shop" / "db.py").write_text(
        '"""Database access for the shop: one pooled Postgres connection per worker."""\n'  # 1
        "\n"
        "import os\n"
        "\n"
        "\n"
        "class Repo:\n"  # 6
        '    """Orders and customers, read and written in one transaction per request."""\n'
        "\n"
        "    def get(self, order_id: int) -> dict:\n"  # 9
        '        """Return one order by its id.\n\n        >>> Repo().get(1)\n        """\n'
        "        body_marker_do_not_keep = 1\n"
        "        return {}\n"
        "\n"
        "    def _undocumented(self):\n"
        "        return 2\n"
        "\n"
        "\n"
        "def clean() -> None:\n"  # 21
        '    """rm -rf build && make dist"""\n'
    )
    (root / "src" / "shop" / "server.ts").write_text(
        "/**\n * Starts the HTTP server on the configured port.\n * @param port the port\n */\n"  # 1-4
        "export async function startServer(port: number): Promise<void> {\n"  # 5
        "  const bodyMarker = 1;\n}\n"
        "\n"
        "export class Cart {\n"  # 9
        "  add(item: string) {\n    return 1;\n  }\n}\n"
    )
    (root / "src" / "broken.py").write_text("def (:\n")
    (root / "src" / "blob.py").write_bytes(b"abc\x00def")
    (root / "node_modules" / "left-pad").mkdir(parents=True)
    (root / "node_modules" / "left-pad" / "index.js").write_text("/** Pads. */\nfunction pad() {}\n")
    for d in (".git", "build", "__pycache__", ".venv"):
        (root / d).mkdir()
        (root / d / "x.py").write_text('"""Should never be read."""\n')
    (root / "package-lock.json").write_text("{}")
    (root / "poetry.lock").write_text("")
    (root / "src" / "loop").symlink_to(root / "src")
    (root / "src" / "self.py").symlink_to(root / "src" / "self.py")  # a link to itself: a loop
    return root


def test_source_tree_declarations_and_exclusions(memory: Memory, tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    r = memory.ingest_code(root, project="shop")
    assert r.status == "completed"
    assert r.skipped == {"binary": 1, "excluded_dir": 5, "lock_file": 2, "symlink": 1, "symlink_loop": 1,
                         "unparseable": 1}  # fmt: skip
    assert [(i.ref, i.text) for i in r.admitted_items] == [
        ("src/shop/db.py:1", "src/shop/db.py: Database access for the shop: one pooled Postgres connection "
                             "per worker."),
        ("src/shop/db.py:6", "Repo (class in src/shop/db.py): Orders and customers, read and written in one "
                             "transaction per request."),
        ("src/shop/db.py:9", "Repo.get (method in src/shop/db.py): Return one order by its id."),
        ("src/shop/server.ts:5", "startServer (function in src/shop/server.ts): Starts the HTTP server on the "
                                 "configured port."),
    ]  # fmt: skip
    assert [(i.ref, i.reason) for i in r.rejected_items] == [("src/shop/db.py:21", "command")]
    stored = [memory.get(i.memory_id or 0) for i in r.admitted_items]
    assert all(m.source == "code" and "marker" not in m.content for m in stored)
    assert stored[2].source_ref == "src/shop/db.py:9" and stored[2].title == "Repo.get"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_unreadable_files_are_counted(memory: Memory, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("We use Postgres for orders.\n")
    (tmp_path / "b.md").write_text("We use MySQL for analytics.\n")
    (tmp_path / "b.md").chmod(0)
    r = memory.ingest_notes(tmp_path, project="p")
    assert r.skipped == {"unreadable": 1} and r.admitted == 1


def test_scan_audit_completed_and_failed(memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "n.md").write_text("# Config\n\nThe API runs on port 8080.\nI ran the tests.\n")
    done = memory.ingest_notes(tmp_path, project="shop", actor="ci")
    with pytest.raises(ValidationError, match="no such directory"):
        memory.ingest_code(tmp_path / "nope", project="shop")

    def boom(*_: object, **__: object) -> object:
        raise RuntimeError("provider said: secret transcript text")

    (tmp_path / "m.md").write_text("# Config\n\nThe cache runs on port 6379.\n")
    monkeypatch.setattr(writes, "remember", boom)  # the remember path of every scan
    with pytest.raises(RuntimeError):
        memory.ingest_notes(tmp_path, project="shop")
    monkeypatch.undo()
    entries, _ = memory.audit(projects=["shop"], actions=["ingest"])
    crashed, missing, completed = entries
    assert completed.id == done.audit_id and completed.actor == "ci" and completed.reason == "completed"
    d = completed.details
    assert (d["source"], d["status"], d["admitted"], d["rejected"]) == ("note", "completed", 2, 0)
    assert d["started"] <= d["ended"] and d["outcomes"] == {"created": 2}
    assert (missing.reason, missing.details["error"], missing.details["admitted"]) == ("failed", "ValidationError", 0)
    assert crashed.reason == "failed" and crashed.details["error"] == "RuntimeError"
    assert "secret" not in json.dumps(crashed.details) and "API" not in json.dumps(crashed.details)


def test_cli_ingest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _conversation(tmp_path / "c.json", [{"role": "user", "content": "My name is Ada. I ran the tests."}])

    def opened(_: Path) -> Memory:  # each command opens the data directory and closes it
        return Memory(tmp_path / "data", embedder=FakeEmbedder())

    assert main(["ingest", "conversation", str(f), "--project", "p", "--dry-run"], open_memory=opened) == 0
    out = capsys.readouterr().out
    assert "would admit 1 of 2 candidates" in out and "(event) I ran the tests." in out
    assert "turns kept whole: created 1; claims from their sentences: 1" in out  # "I ran the tests."
    assert main(["--json", "ingest", "notes", str(tmp_path), "--project", "p"], open_memory=opened) == 0
    assert json.loads(capsys.readouterr().out)["source"] == "note"
    assert main(["ingest", "code", str(tmp_path / "nope"), "--project", "p"], open_memory=opened) == 2
    assert "no such directory" in capsys.readouterr().err


@pytest.mark.model
def test_conversation_through_the_real_model(real_embedder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    msgs = [
        {"role": "user", "content": "Hi! We decided to use Postgres for the orders service.", "id": "1"},
        {"role": "assistant", "content": "Noted. Let me check the schema.", "id": "2"},
        {"role": "user", "content": "The API runs on port 8080. git push origin main", "id": "3"},
        {"role": "user", "content": "I prefer tabs for indentation.", "id": "4"},
        {"role": "user", "content": "Actually, I prefer spaces for indentation.", "id": "5"},
        {"role": "user", "content": "We deploy the shop API on Fly.io. Can you write a Dockerfile?", "id": "6",
         "time": "2026-01-02T09:00:00Z"},
        {"role": "user", "content": "Quick update: we're on Render now for the shop API. Thanks!", "id": "7",
         "time": "2026-01-09T09:00:00Z"},
    ]  # fmt: skip
    with Memory(tmp_path / "data", embedder=real_embedder) as mem:
        r = mem.ingest_conversation(msgs, project="shop", session="s-1")
        assert r.admitted == 4 and r.rejected_by_reason == {"command": 1, "no_claim": 2}  # the deploy sentences
        assert r.outcomes == {"created": 3, "superseded": 1}
        assert r.turns == {"created": 6} and r.claims == 2  # the Fly.io and the Render sentences
        hits = mem.recall("which database do we use for orders?", project="shop", k=3)
        assert hits[0].memory.source_ref == "s-1#1" and hits[0].memory.source == "conversation"
        assert hits[0].memory.kind == "decision" and hits[0].memory.source_ids  # derived from its turn
        hits = mem.recall("indentation style", project="shop", k=3)
        assert [h.memory.content for h in hits if "indentation" in h.memory.content][0] == (
            "I prefer spaces for indentation."
        )
        # the claims of the turns: the later one replaced the earlier, and recall says where it was said
        [dead] = mem.list_versions(projects=["shop"], kinds=["claim"], status="superseded", latest_only=False)[0]
        assert (dead.content, dead.supersede_reason) == ("We deploy the shop API on Fly.io.", "moved")
        hits = mem.recall("where is the shop API deployed?", project="shop", k=12)
        top = hits[0]
        assert top.memory.content == "we're on Render now for the shop API."
        assert top.stated_in is not None and top.stated_in.source_ref == "s-1#7"
        assert top.stated_in.content == msgs[6]["content"]  # the turn, whole
        # the earlier turn is older news: marked, and ranked under the other hits
        assert [h.older_than for h in hits if h.memory.source_ref == "s-1#6"] == [top.memory.id]
        assert mem.check().ok


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dr. Patel moved the standup to 10:30. We use Postgres now!",
         ["Dr. Patel moved the standup to 10:30.", "We use Postgres now!"]),
        ("The API listens on 8080, e.g. for staging. Is it on 4000?",
         ["The API listens on 8080, e.g. for staging.", "Is it on 4000?"]),
        ("- we deploy on Fridays\n- my editor is Helix", ["we deploy on Fridays", "my editor is Helix"]),
        ("ok so the build runs on CI\nanyway my name is Ada", ["the build runs on CI", "my name is Ada"]),
    ],
)  # fmt: skip
def test_sentences_keep_abbreviations_and_split_lines(text: str, expected: list[str]) -> None:
    assert list(sentences(text)) == expected
