"""Conversations: reading a session's messages and proposing candidates from its user (and assistant) turns.

A conversation file is JSON or JSON Lines:

    [{"role": "user", "content": "...", "time": "2026-01-02T10:00:00Z", "id": "m1"}, ...]
    {"session": "s-7", "messages": [ ...the same... ]}
    one message object a line (a line may also be {"session": "s-7"} to name the session)

`role` and `content` are required; `time` (ISO 8601 or Unix seconds), `id` (else the message's
position) and `name` (the speaker, else the role) are optional. `content` may also be a list of
parts ({"type": "text", "text": ...}). Tool, function and system messages, session actions
(`type` other than "message", or a user's slash command) and assistant turns (unless asked for)
are skipped with a counted reason; so are messages that are not objects or lack role or content.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from agentmem.admission.extract import Candidate, judge, propose
from agentmem.errors import ProviderError, ValidationError
from agentmem.provider import Provider
from agentmem.records import Message

MAX_FILE_BYTES = 64 * 1024 * 1024
SKIPPED_ROLES = {"tool": "tool_message", "function": "tool_message", "ipython": "tool_message",
                 "system": "system_message", "developer": "system_message"}  # fmt: skip


class Conversation(msgspec.Struct, frozen=True, kw_only=True):
    """A session's messages, and the count of raw messages that could not be read (by reason)."""

    session: str | None
    messages: list[Message]
    skipped: dict[str, int] = {}


def _time(value: Any) -> datetime | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            t = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        if t.tzinfo is None:
            return t.replace(tzinfo=UTC)
        try:
            return t.astimezone(UTC)
        except OverflowError:  # before year 1 in UTC: kept as given, so remember refuses it as invalid
            return t
    return None


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type", "text") == "text"]
        texts = [p for p in parts if isinstance(p, str)]
        return "\n".join(texts) if texts else None
    return None


def message(raw: Any, position: int) -> Message | str:
    """A Message from a decoded JSON value, or the reason it cannot be one."""
    if not isinstance(raw, dict):
        return "malformed_message"
    role, content = raw.get("role"), _text(raw.get("content"))
    if not isinstance(role, str) or not role.strip() or content is None:
        return "malformed_message"
    mid = raw.get("id", raw.get("message_id"))
    name = raw.get("name")
    kind = raw.get("type")
    return Message(
        role=role.strip().lower(),
        content=content,
        time=_time(raw.get("time", raw.get("timestamp", raw.get("created_at")))),
        id=str(mid)[:80] if isinstance(mid, str | int) and not isinstance(mid, bool) else f"msg-{position}",
        name=name.strip()[:80] if isinstance(name, str) and name.strip() else None,
        type=kind if isinstance(kind, str) else None,
    )


def parse(data: bytes, *, name: str = "conversation") -> Conversation:
    """A conversation from the bytes of a JSON or JSON Lines file; ValidationError when it is neither."""
    if b"\x00" in data[:8192]:
        raise ValidationError(f"{name}: a binary file, not a JSON or JSON Lines conversation")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValidationError(f"{name}: not UTF-8 text") from None
    raws: list[Any]
    session: str | None = None
    skipped: Counter[str] = Counter()
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
        raws = []
        lines = [line for line in text.splitlines() if line.strip()]
        bad = 0
        for line in lines:
            try:
                value = json.loads(line)
            except ValueError:
                bad += 1
                skipped["malformed_message"] += 1
                continue
            if isinstance(value, dict) and "session" in value and "role" not in value:
                session = str(value["session"]) if value["session"] is not None else session
                continue
            raws.append(value)
        if not lines or bad == len(lines):
            raise ValidationError(f"{name}: neither JSON nor JSON Lines") from None
    else:
        if isinstance(doc, list):
            raws = doc
        elif isinstance(doc, dict) and isinstance(doc.get("messages"), list):
            raws = doc["messages"]
            session = str(doc["session"]) if doc.get("session") is not None else None
        elif isinstance(doc, dict) and "role" in doc:
            raws = [doc]
        else:
            raise ValidationError(f'{name}: expected a list of messages or {{"session": ..., "messages": [...]}}')
    messages = []
    for n, raw in enumerate(raws):
        m = message(raw, n)
        if isinstance(m, str):
            skipped[m] += 1
        else:
            messages.append(m)
    return Conversation(session=session, messages=messages, skipped=dict(skipped))


def load(path: str | Path) -> Conversation:
    """Read and parse a conversation file; ValidationError for a missing, unreadable, huge or malformed one."""
    p = Path(path).expanduser()
    try:
        if not p.is_file():
            raise ValidationError(f"no such conversation file: {p}")
        if p.stat().st_size > MAX_FILE_BYTES:
            raise ValidationError(f"{p}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
        data = p.read_bytes()
    except OSError as exc:
        raise ValidationError(f"cannot read {p}: {exc.strerror or exc}") from None
    conv = parse(data, name=p.name)
    return conv if conv.session is not None else msgspec.structs.replace(conv, session=p.stem[:120])


def skip_reason(m: Message, include_assistant: bool) -> str | None:
    """Why a message gives no candidates: a tool or system message, a session action, an assistant turn."""
    if m.role in SKIPPED_ROLES:
        return SKIPPED_ROLES[m.role]
    if m.type not in (None, "message", "text"):
        return "session_action"
    if m.role == "user" and m.content.lstrip().startswith("/"):
        return "session_action"
    if m.role == "assistant":
        return None if include_assistant else "assistant_message"
    if m.role not in ("user", "human"):
        return "other_role"
    if not m.content.strip():
        return "empty_message"
    return None


def turns(
    messages: Iterable[Message],
    session: str,
    *,
    include_assistant: bool,
    skipped: Counter[str],
    provider: Provider | None = None,
) -> Iterator[tuple[Message, str, list[Candidate]]]:
    """Every eligible message (a turn), with its reference ("SESSION#ID") and its candidates.

    With a `provider`, the claims it finds in a message are proposed too, and judged by the same
    policy (a claim it invents that the rules would refuse is refused); a failed reply is counted
    in `skipped` as `provider_failed` and the rules' candidates still go ahead.
    """
    for m in messages:
        why = skip_reason(m, include_assistant)
        if why is not None:
            skipped[why] += 1
            continue
        ref = f"{session}#{m.id}"[:200]
        speaker = m.name or m.role
        found = propose(m.content, speaker=speaker, ref=ref)
        if provider is not None:
            try:
                proposed = provider.claims(m.content)
            except ProviderError:
                skipped["provider_failed"] += 1
                proposed = []
            seen = {c.text for c in found}
            for text in proposed:
                if text in seen:
                    continue
                seen.add(text)
                verdict = judge(text, speaker=speaker, ref=ref)
                found.append(verdict if verdict is not None else Candidate(text=text, ref=ref, reason="no_claim"))
        yield m, ref, found
