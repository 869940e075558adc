"""agentmem as the long-term memory of an OpenAI Agents SDK agent.

The agent gets two tools, `remember` and `recall`, over any `agentmem.MemoryAPI`: `agentmem.Memory`
in process or `agentmem.client.Client` for a running service. What it remembers outlives the run
and the conversation; a newer fact supersedes the one it updates ("the dev server is on port 4000
now" retires "... runs on port 3000"), so recall in a later conversation answers with what is true
now, and the older version stays in agentmem's history.

Why tools and not the SDK's `Session`: a Session is one conversation's item list (get_items,
add_items, pop_item, clear_session), replayed into the next turn of the same conversation. Long-term
memory is what crosses conversations, chosen by relevance, so the model asks for it.

    pip install 'agentmem[openai-agents]'
    OPENAI_API_KEY=... python examples/openai_agents/memory_agent.py "We moved the dev server to port 4000"
    OPENAI_API_KEY=... python examples/openai_agents/memory_agent.py "Which port is the dev server on?"

tests/test_example_openai_agents.py runs it with the SDK's ScriptedModel: no network, no key.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from agents import Agent, Model, RunConfig, Runner, Tool, function_tool

from agentmem import MemoryAPI

INSTRUCTIONS = """You are a helpful engineering assistant with a long-term memory.
Before you answer a question about the user's project, call `recall` with a short query.
When the user tells you a durable fact (a setting, a decision, a preference, a change),
call `remember` with it as one plain sentence. Answer from what `recall` returns."""


def memory_tools(mem: MemoryAPI, *, project: str, agent: str | None = None) -> list[Tool]:
    """`remember` and `recall` tools that keep the agent's facts in agentmem, in one project."""

    @function_tool
    def remember(fact: str) -> str:
        """Keep a durable fact for later conversations; a newer fact replaces the old one it updates.

        Args:
            fact: One plain sentence, e.g. "The dev server is on port 4000 now."
        """
        result = mem.remember(content=fact, project=project, agent=agent, source="conversation")
        if result.outcome == "superseded" and result.superseded_id is not None:
            return f"superseded: {mem.get(result.superseded_id).content!r} is no longer current"
        return result.outcome

    @function_tool
    def recall(query: str) -> str:
        """The remembered facts that best answer a query, current ones only, best first.

        Args:
            query: What to look for, e.g. "dev server port".
        """
        hits = mem.recall(query, project=project, k=5)
        return "\n".join(f"- {h.memory.content}" for h in hits) or "nothing remembered about that"

    return [remember, recall]


def build_agent(mem: MemoryAPI, *, project: str, model: str | Model | None = None) -> Agent:
    """An agent whose long-term memory is agentmem; `model` is any Agents SDK model (a name or a Model)."""
    return Agent(
        name="assistant",
        instructions=INSTRUCTIONS,
        tools=memory_tools(mem, project=project, agent="assistant"),
        model=model,
    )


def ask(agent: Agent, text: str) -> str:
    """One conversation turn; tracing stays off, so nothing leaves the machine but the model's calls."""
    result = Runner.run_sync(agent, text, run_config=RunConfig(tracing_disabled=True))
    return str(result.final_output)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("message")
    p.add_argument("--project", default="demo")
    p.add_argument("--data-dir", type=Path, default=Path("agent-memory"))
    p.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
    args = p.parse_args()
    if url := os.environ.get("AGENTMEM_URL"):
        from agentmem.client import Client

        mem: MemoryAPI = Client(url, token=os.environ.get("AGENTMEM_TOKEN"))
    else:
        from agentmem import Memory
        from indexes.embed import SentenceTransformerEmbedder

        mem = Memory(args.data_dir, embedder=SentenceTransformerEmbedder())
    try:
        print(ask(build_agent(mem, project=args.project, model=args.model), args.message))
    finally:
        mem.close()


if __name__ == "__main__":
    main()
