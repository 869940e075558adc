"""examples/openai_agents/memory_agent.py, run by the Agents SDK's own Runner with its ScriptedModel
(no network, no key): a fact in one conversation, its replacement in a second, recall in a third."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("agents")

from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402

from agentmem import Memory  # noqa: E402

EXAMPLE = Path(__file__).parent.parent / "examples" / "openai_agents" / "memory_agent.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("memory_agent", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["memory_agent"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")


def tool_outputs(call: ModelCall) -> list[str]:
    """What the tools returned to the model, as the model sees it in its next call's input."""
    return [
        str(item["output"])
        for item in call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]


def answer_from_memory(call: ModelCall) -> ModelStep:
    """A model that answers with the first fact `recall` gave it."""
    facts = [line[2:] for out in tool_outputs(call) for line in out.splitlines() if line.startswith("- ")]
    return ModelStep(output=[assistant_message(f"From memory: {facts[0]}" if facts else "I don't know.")])


def conversation(example: ModuleType, memory: Memory, text: str, steps: list[Any]) -> tuple[str, ScriptedModel]:
    model = ScriptedModel(steps)
    reply = example.ask(example.build_agent(memory, project="shop", model=model), text)
    model.assert_complete()
    return reply, model


def test_a_fact_then_its_replacement_then_recall_in_a_new_conversation(example: ModuleType, memory: Memory) -> None:
    old, new = "The dev server runs on port 3000.", "The dev server is on port 4000 now."
    reply, first = conversation(
        example, memory, "FYI the dev server runs on port 3000",
        [[function_call("remember", {"fact": old}, call_id="c1")], [assistant_message("Noted.")]],
    )  # fmt: skip
    assert reply == "Noted." and tool_outputs(first.calls[-1]) == ["created"]

    reply, second = conversation(
        example, memory, "We moved the dev server to 4000",
        [[function_call("remember", {"fact": new}, call_id="c2")], [assistant_message("Updated.")]],
    )  # fmt: skip
    assert tool_outputs(second.calls[-1]) == [f"superseded: {old!r} is no longer current"]

    reply, third = conversation(
        example, memory, "Which port is the dev server on?",
        [[function_call("recall", {"query": "dev server port"}, call_id="c3")], ModelStep.respond(answer_from_memory)],
    )  # fmt: skip
    assert reply == f"From memory: {new}"
    assert "3000" not in tool_outputs(third.calls[-1])[0]  # the replaced fact never reaches the model
    (hit,) = memory.recall("dev server port", project="shop")
    assert [v.content for v in memory.history(hit.memory.id)] == [old, new]  # agentmem kept both versions
    assert hit.memory.agent == "assistant" and hit.memory.source == "conversation"


def test_the_agent_sees_both_tools_with_their_schemas(example: ModuleType, memory: Memory) -> None:
    _, model = conversation(example, memory, "hello", [[assistant_message("Hi.")]])
    (call,) = model.calls
    schemas = {t.name: t.params_json_schema for t in call.tools}  # type: ignore[attr-defined]
    assert set(schemas) == {"remember", "recall"}
    assert schemas["remember"]["required"] == ["fact"] and schemas["recall"]["required"] == ["query"]
    assert "recall" in (call.system_instructions or "")
