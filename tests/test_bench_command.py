"""`agentmem bench`: against a real server over a socket, in process on a data directory, and its
refusals; the scratch project goes afterwards and no other project is touched."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from agentmem import Memory
from agentmem.cli import main
from agentmem.client import Client
from agentmem.recall.timing import STAGES, parse_server_timing, server_timing
from api.app import create_app
from api.settings import load
from fakes import FakeEmbedder
from servers import ROOT_TOKEN, TOKEN, Server

SHOP = ["We deploy the shop API on Render", "The shop database is PostgreSQL 16", "Payments go through Stripe"]


def _snapshot(mem: Any, project: str) -> list[tuple[int, str, str]]:
    versions, _ = mem.list_versions(projects=[project], status=None, latest_only=False, limit=1000)
    return sorted((v.id, v.status, v.content) for v in versions)


def _gone(mem: Any, project: str) -> None:
    """Nothing of the project is left to read: no current memory, nothing recalled, no content."""
    assert mem.list_versions(projects=[project], limit=10)[0] == []
    assert mem.stats(projects=[project]).latest_active == 0
    assert mem.recall("the billing service", project=project) == []
    for v in mem.list_versions(projects=[project], status=None, latest_only=False, limit=1000)[0]:
        assert v.status == "deleted" and not v.content  # governance delete leaves tombstones only


def _sane(report: dict[str, Any], ops: set[str]) -> None:
    assert {f["name"] for f in report["operations"]} == ops
    for f in report["operations"]:
        assert f["requests"] > 0 and f["errors"] == 0 and f["per_second"] > 0
        assert 0 < f["p50_ms"] <= f["p95_ms"] <= f["p99_ms"]
    stages = {s["name"]: s for s in report["stages"]}
    assert "candidates" in stages and stages["candidates"]["p50_ms"] > 0
    recalls = [f["requests"] for f in report["operations"] if f["name"] == "recall"]
    assert [stages["candidates"]["recalls"]] == recalls  # every recall reported its stages
    assert set(stages) <= set(STAGES)
    assert report["seconds"] > 0


def test_server_timing_round_trip() -> None:
    ms = {"parse": 0.1234, "time fit": 0.5, "roll-up": 2.0}
    assert parse_server_timing(server_timing(ms)) == {"parse": 0.123, "time fit": 0.5, "roll-up": 2.0}
    assert parse_server_timing('cache;desc="hit", db;dur=x, app;dur=4') == {"app": 4.0}


def test_recall_reply_carries_server_timing(data_dir: Path) -> None:
    env = {"AGENTMEM_TOKENS": f"a:{TOKEN}:admin:*"}
    with Memory(data_dir, embedder=FakeEmbedder()) as mem, TestClient(create_app(load(env=env), mem=mem)) as app:
        mem.remember("The shop API listens on port 8080", project="shop")
        r = app.post("/v1/recall", json={"query": "shop port", "project": "shop"},
                     headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
        assert r.status_code == 200 and r.json()["hits"]
        timing = parse_server_timing(r.headers["server-timing"])
        assert set(timing) == set(STAGES) and all(v >= 0 for v in timing.values())


def test_in_process_on_a_data_directory(data_dir: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    with Memory(data_dir, embedder=FakeEmbedder()) as mem:
        for text in SHOP:
            mem.remember(text, project="shop")
        before = _snapshot(mem, "shop")
    out = tmp_path / "bench.json"
    code = main(["--data-dir", str(data_dir), "bench", "--project", "shop", "--requests", "40", "--clients", "2",
                 "--json", str(out)], open_memory=lambda p: Memory(p, embedder=FakeEmbedder()))  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "recall" in printed and "p99 ms" in printed and "candidates" in printed
    report = json.loads(out.read_text())
    _sane(report, {"recall", "remember"})
    assert report["project"] == "shop" and report["scratch_project"].startswith("bench-")
    assert report["target"] == str(data_dir)
    assert sum(f["requests"] for f in report["operations"]) == 40
    with Memory(data_dir, embedder=FakeEmbedder()) as mem:
        assert _snapshot(mem, "shop") == before
        _gone(mem, report["scratch_project"])


def test_scratch_project_goes_when_the_run_fails(data_dir: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """An error after the scratch project was seeded still removes it."""
    opened: list[Memory] = []

    class Broken(Memory):
        def list_versions(self, **kw: Any) -> Any:
            raise RuntimeError("boom")

    def open_memory(p: Path) -> Memory:
        opened.append(Broken(p, embedder=FakeEmbedder()))
        return opened[0]

    with pytest.raises(RuntimeError, match="boom"):
        main(["--data-dir", str(data_dir), "bench", "--requests", "5"], open_memory=open_memory)
    with Memory(data_dir, embedder=FakeEmbedder()) as mem:
        assert mem.stats().latest_active == 0 and mem.stats().versions > 0  # seeded, then deleted


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--clients", "0"], "must be above 0"),
        (["--requests", "-3"], "must be above 0"),
        (["--mix", "90/20"], "adding up to 100"),
        (["--mix", "lots"], "adding up to 100"),
        (["--requests", "5", "--duration", "1"], "not allowed with"),
        (["--queries", "/nonexistent/queries.txt"], "cannot read --queries"),
    ],
)
def test_bad_arguments_exit_2(data_dir: Path, capsys, argv: list[str], message: str) -> None:  # type: ignore[no-untyped-def]
    try:
        code = main(["--data-dir", str(data_dir), "bench", *argv],
                    open_memory=lambda p: Memory(p, embedder=FakeEmbedder()))  # fmt: skip
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code  # type: ignore[assignment]
    assert code == 2 and message in capsys.readouterr().err


def test_png_without_matplotlib_is_a_clear_error(data_dir: Path, tmp_path: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code = main(["--data-dir", str(data_dir), "bench", "--png", str(tmp_path / "x.png")],
                open_memory=lambda p: Memory(p, embedder=FakeEmbedder()))  # fmt: skip
    assert code == 2 and "pip install 'agentmem[bench]'" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


@pytest.mark.model
@pytest.mark.slow
def test_against_a_real_server_over_a_socket(server: Server, tmp_path: Path) -> None:
    """The real `agentmem serve` (default model) and `agentmem bench` as a subprocess: sane figures,
    the scratch project gone, the shop untouched; a token that may not delete is refused up front."""
    server.start()
    with Client(server.url, token=ROOT_TOKEN) as root:
        for text in SHOP:
            root.remember(text, project="shop")
        before, projects = _snapshot(root, "shop"), root.stats().projects
    base = [sys.executable, "-m", "agentmem", "--url", server.url]
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    done = subprocess.run([*base, "--token", ROOT_TOKEN, "bench", "--requests", "30", "--clients", "2",
                           "--json", str(out), "--png", str(png)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "remember" in done.stdout and "\r" not in done.stdout  # no progress bar when not a terminal
    report = json.loads(out.read_text())
    _sane(report, {"recall", "remember"})
    assert report["project"] == report["scratch_project"] and png.stat().st_size > 10_000
    # the shop's admin token may not delete a scratch project: refused before anything is written
    refused = subprocess.run([*base, "--token", TOKEN, "bench", "--requests", "5"],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert refused.returncode == 1 and "admin token of all projects" in refused.stderr
    readonly = subprocess.run([*base, "--token", TOKEN, "--json", "bench", "--project", "shop", "--mix", "100/0",
                               "--requests", "10"], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert readonly.returncode == 0, readonly.stderr
    _sane(json.loads(readonly.stdout), {"recall"})  # `agentmem --json bench` prints the report as JSON
    # Ctrl-C in the middle of a run: exit 130, and the scratch project goes all the same. The child
    # gets SIGINT's default action: a shell that runs the suite in the background ignores it, and
    # Python then never turns it into KeyboardInterrupt. The run lasts longer than the wait, so a
    # lost signal fails as a timeout rather than as a clean exit.
    running = subprocess.Popen([*base, "--token", ROOT_TOKEN, "bench", "--duration", "300"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    with Client(server.url, token=ROOT_TOKEN) as root:
        started = time.monotonic()
        while root.stats().projects < projects + 2 and time.monotonic() - started < 60:  # its scratch project
            time.sleep(0.2)
    time.sleep(2)
    running.send_signal(signal.SIGINT)
    try:
        _, err = running.communicate(timeout=60)
    finally:
        running.kill()
    assert running.returncode == 130 and "interrupted" in err
    with Client(server.url, token=ROOT_TOKEN) as root:
        assert _snapshot(root, "shop") == before
        deletes = [e.project for e in root.audit(actions=["delete"])[0]]
        assert len(deletes) == 2 and report["scratch_project"] in deletes
        for scratch in deletes:
            _gone(root, scratch)
        assert root.stats().projects == projects + 2  # the scratch projects' tombstones, nothing current
        assert root.stats().latest_active == len(SHOP)
