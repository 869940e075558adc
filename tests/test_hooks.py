"""examples/hooks/claude_code_hook.py, fed Claude Code's hook JSON, against a real running service."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentmem import NewMemory
from agentmem.client import Client
from servers import TOKEN, Server, free_port

HOOK = Path(__file__).parent.parent / "examples" / "hooks" / "claude_code_hook.py"
SESSION = "3f1c-claude-session"


def hook(event: dict[str, Any], **env: str) -> subprocess.CompletedProcess[str]:
    event = {"session_id": SESSION, "transcript_path": "/tmp/t.jsonl", "cwd": "/src/shop", **event}
    return subprocess.run(
        [sys.executable, str(HOOK)], input=json.dumps(event), env={**os.environ, **env},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.model
@pytest.mark.slow
def test_claude_code_hooks_against_a_running_service(server: Server) -> None:
    server.start()
    env = {"AGENTMEM_URL": server.url, "AGENTMEM_TOKEN": TOKEN, "AGENTMEM_PROJECT": "shop"}
    with Client(server.url, token=TOKEN) as c:
        c.remember(NewMemory(content="We deploy the shop with Kubernetes on GKE", project="shop", kind="decision"))

        start = hook({"hook_event_name": "SessionStart", "source": "startup"}, **env)
        assert start.returncode == 0 and start.stderr == ""
        out = json.loads(start.stdout)["hookSpecificOutput"]
        assert out["hookEventName"] == "SessionStart" and "Kubernetes" in out["additionalContext"]

        prompt = hook({"hook_event_name": "UserPromptSubmit", "prompt": "How do we deploy the shop?"}, **env)
        assert prompt.returncode == 0 and prompt.stderr == ""
        assert "Kubernetes" in json.loads(prompt.stdout)["hookSpecificOutput"]["additionalContext"]

        tool = {"tool_name": "Bash", "tool_input": {"command": "kubectl rollout status deploy/shop"},
                "tool_response": {"stdout": "deployment successfully rolled out"}}  # fmt: skip
        used = hook({"hook_event_name": "PostToolUse", **tool}, **env)
        assert used.returncode == 0 and used.stdout == "" and used.stderr == ""
        observed, _ = c.list_versions(projects=["shop"], kinds=["observation"])
        assert {o.session for o in observed} == {SESSION} and {o.agent for o in observed} == {"claude-code"}
        assert any("kubectl rollout status" in o.content and o.title == "Bash" for o in observed)

        end = hook({"hook_event_name": "SessionEnd", "reason": "exit"}, **env)
        assert end.returncode == 0 and end.stderr == ""
        episodes, _ = c.list_versions(projects=["shop"], tiers=["episodic"])
        assert len(episodes) == 1 and episodes[0].session == SESSION and set(episodes[0].source_ids) == {
            o.id for o in observed
        }

    quiet = hook({"hook_event_name": "SessionEnd", "session_id": "nothing-logged"}, **env)
    assert quiet.returncode == 0 and quiet.stderr == ""  # no observations: nothing to end, and no noise


def test_hook_never_breaks_the_agent_when_the_service_is_down() -> None:
    started = time.monotonic()
    down = hook({"hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": {"file_path": "a.py"}},
                AGENTMEM_URL=f"http://127.0.0.1:{free_port()}", AGENTMEM_HOOK_TIMEOUT="2")  # fmt: skip
    assert down.returncode == 0 and down.stdout == "" and "agentmem hook:" in down.stderr
    assert time.monotonic() - started < 10
    garbage = subprocess.run([sys.executable, str(HOOK)], input="not json", capture_output=True, text=True, timeout=60)
    assert garbage.returncode == 0 and "agentmem hook:" in garbage.stderr
