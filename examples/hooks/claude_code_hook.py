#!/usr/bin/env python3
"""A Claude Code hook for agentmem: one script for every event, standard library only.

Claude Code runs it with the event's JSON on stdin (see docs/guides/claude-code.md):

- SessionStart: prints what agentmem knows about the project, as additional context for the session.
- UserPromptSubmit: logs the prompt as an observation and adds the memories relevant to it.
- PostToolUse: logs the tool call (name, a short form of its input) as an observation.
- SessionEnd (or Stop): ends the session, so its observations become one episodic memory.

Configuration comes from the environment, never from the hook input: AGENTMEM_URL (default
http://127.0.0.1:8420), AGENTMEM_TOKEN, AGENTMEM_PROJECT (default: "default"), AGENTMEM_AGENT (default:
"claude-code"), AGENTMEM_HOOK_TIMEOUT (seconds, default 5), AGENTMEM_CONTEXT_QUERY (what to load at
session start). A hook must never break the agent: on any failure it writes one line to stderr and
exits 0.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

DEFAULT_QUERY = "project decisions, conventions, preferences, configuration and current state"


def call(path: str, body: dict[str, Any]) -> dict[str, Any]:
    url = os.environ.get("AGENTMEM_URL", "http://127.0.0.1:8420").rstrip("/") + path
    headers = {"Content-Type": "application/json"}
    if token := os.environ.get("AGENTMEM_TOKEN"):
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    timeout = float(os.environ.get("AGENTMEM_HOOK_TIMEOUT", "5"))
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return json.loads(reply.read() or b"{}")  # type: ignore[no-any-return]


def short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def observation(event: dict[str, Any], content: str, tool: str | None = None) -> dict[str, Any]:
    o = {
        "content": content,
        "project": os.environ.get("AGENTMEM_PROJECT", "default"),
        "agent": os.environ.get("AGENTMEM_AGENT", "claude-code"),
        "session": event.get("session_id") or "claude-code",
        "tool": tool,
    }
    return {k: v for k, v in o.items() if v is not None}


def context(query: str) -> str:
    body = {"query": query, "project": os.environ.get("AGENTMEM_PROJECT", "default"), "max_memories": 15}
    return str(call("/v1/context", {**body, "token_budget": 1500}).get("text") or "")


def add_context(event_name: str, text: str) -> None:
    """Claude Code adds `additionalContext` to what the model sees (SessionStart, UserPromptSubmit)."""
    if text:
        out = {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}
        sys.stdout.write(json.dumps(out) + "\n")


def handle(event: dict[str, Any]) -> None:
    name = event.get("hook_event_name")
    if name == "SessionStart":
        add_context(name, context(os.environ.get("AGENTMEM_CONTEXT_QUERY", DEFAULT_QUERY)))
    elif name == "UserPromptSubmit":
        prompt = str(event.get("prompt") or "").strip()
        if prompt:
            call("/v1/observations", {"observations": [observation(event, "User asked: " + short(prompt, 1000))]})
            add_context(name, context(short(prompt, 1000)))
    elif name == "PostToolUse":
        tool = str(event.get("tool_name") or "tool")
        content = f"Used {tool}: {short(event.get('tool_input') or {})}"
        call("/v1/observations", {"observations": [observation(event, content, tool=tool)]})
    elif name in ("SessionEnd", "Stop"):
        session = event.get("session_id") or "claude-code"
        project = os.environ.get("AGENTMEM_PROJECT", "default")
        try:
            call(f"/v1/sessions/{urllib.parse.quote(session, safe='')}/end", {"project": project})
        except urllib.error.HTTPError as exc:
            if exc.code != 404:  # 404: the session logged nothing, so there is nothing to consolidate
                raise


def main() -> int:
    try:
        handle(json.load(sys.stdin))
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace")[:300]
        print(f"agentmem hook: {exc.code} {detail}", file=sys.stderr)
    except Exception as exc:  # the agent keeps working without memory
        print(f"agentmem hook: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
