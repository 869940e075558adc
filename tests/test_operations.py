"""Each operation declared once (agentmem.operations): every surface takes its request's fields.

A field added to, renamed in or dropped from a request fails here until the keyword method agrees;
the CLI's flags and the MCP tool's arguments are made from the Struct (checked here too), the HTTP
route and the TypeScript client take the Struct itself, and docs/reference/operations.md is
checked by tests/test_docs.py.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from agentmem.client import Client
from agentmem.contract import MemoryAPI
from agentmem.errors import ValidationError
from agentmem.flags import arguments
from agentmem.memory import Memory
from agentmem.operations import (
    REQUESTS,
    ConsolidateRequest,
    DeleteRequest,
    EndSessionRequest,
    IngestConversationRequest,
    IngestPathRequest,
    Observation,
    PinRequest,
    RebuildRequest,
    RecallRequest,
    Request,
    RestoreRequest,
    ScopeRequest,
    SweepRequest,
    observation,
    observed,
    query_names,
    shown,
)
from agentmem.records import NewMemory
from api import mcp_tools
from api.mcp_backend import McpSettings
from api.mcp_server import build_server

NOT_FIELDS = {"self", "actor", "progress"}  # the caller's name, a bar (in process)
# the id an operation's path carries: no field holds it (audit's memory_id is a filter, a field)
PATH = {"end_session": "session", "restore": "memory_id", "pin": "memory_id", "revise": "memory_id"}
# recall returns the hits alone, so the older versions `include_history` adds would be dropped
LEFT_OUT = {"recall": {"include_history"}}
CLI = {
    "recall": RecallRequest,
    "sweep": SweepRequest,
    "restore": RestoreRequest,
    "pin": PinRequest,
    "delete": DeleteRequest,
    "consolidate": ConsolidateRequest,
    "end-session": EndSessionRequest,
    "rebuild": RebuildRequest,
    "ingest conversation": IngestConversationRequest,
    "ingest notes": IngestPathRequest,
    "stats": ScopeRequest,
    "ingest code": IngestPathRequest,
}  # CLI commands generated from a request (agentmem.flags)
MCP = {"recall": "search", "context": "context", "forget": "delete", "end_session": "end_session"}  # tool -> op
MCP_ITEMS = {"observe": Observation, "remember": NewMemory}  # a tool that takes one item of its operation
MCP_OWN = {"end_session": {"session"}}  # a tool's own argument (over HTTP, in the path)


def fields(request: type[msgspec.Struct]) -> dict[str, Any]:
    out = {}
    for f in msgspec.structs.fields(request):
        if f.default_factory is not msgspec.NODEFAULT:
            out[f.name] = f.default_factory()
        else:
            out[f.name] = f.default if f.default is not msgspec.NODEFAULT else inspect.Parameter.empty
    return out


def keywords(fn: Any, op: str = "") -> dict[str, Any]:
    params = inspect.signature(fn).parameters.values()
    return {p.name: list(p.default) if isinstance(p.default, tuple) else p.default for p in params
            if p.name not in NOT_FIELDS and p.name != PATH.get(op)}  # fmt: skip


@pytest.mark.parametrize("op", sorted(REQUESTS))
def test_the_keyword_method_takes_the_requests_fields(op: str) -> None:
    expected = {k: v for k, v in fields(REQUESTS[op]).items() if k not in LEFT_OUT.get(op, set())}
    given = keywords(getattr(MemoryAPI, op), op)
    if op == "observe":  # its items are the observations, each a NewMemory in process (see below)
        given = {"observations" if k == "items" else k: v for k, v in given.items()}
    assert given == expected


def test_an_observation_is_a_new_memory_under_other_names() -> None:
    """The observe operation takes NewMemory items in process and Observation items over HTTP."""
    carried = {shown(f.type).get("as", f.name) for f in msgspec.structs.fields(Observation)}
    assert carried <= set(NewMemory.__struct_fields__), carried - set(NewMemory.__struct_fields__)
    seen = Observation(content="ran pytest", project="p", session="s", tool="Bash", at=datetime(2026, 1, 2, tzinfo=UTC))
    item = observed(seen)
    assert (item.title, item.valid_from, item.tier, item.salience) == ("Bash", seen.at, "working", 0.3)
    assert observation(0, item) == seen
    with pytest.raises(ValidationError, match="observation 3: key cannot be sent"):
        observation(3, NewMemory(content="x", key="k"))


@pytest.mark.parametrize("op", sorted(REQUESTS))
@pytest.mark.parametrize("impl", [Memory, Client], ids=["Memory", "Client"])
def test_memory_and_client_inherit_the_one_keyword_method(impl: type, op: str) -> None:
    assert getattr(impl, op) is getattr(MemoryAPI, op)


def cli_parser() -> argparse.ArgumentParser:
    from agentmem.cli import _parser

    return _parser()[0]


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]  # type: ignore[no-any-return]


@pytest.mark.parametrize("command", sorted(CLI))
def test_the_cli_command_has_a_flag_per_field(command: str) -> None:
    request = CLI[command]
    parser = cli_parser()
    for name in command.split():  # "ingest notes": a subcommand of a subcommand
        parser = _subcommand(parser, name)
    path = "session" if command == "end-session" else "id"  # the id the HTTP path carries
    dests = {a.dest: a.default for a in parser._actions if a.dest not in ("help", path, "show_rejected")}
    own = {f.name for f in msgspec.structs.fields(request) if shown(f.type).get("own")}
    project = os.environ.get("AGENTMEM_PROJECT", "default")  # the caller's own project, on the command line
    expected = {k: project if k in own else v for k, v in fields(request).items()}
    assert dests == {k: None if v is inspect.Parameter.empty else v for k, v in expected.items()}


def test_the_cli_parses_into_a_valid_request() -> None:
    args = cli_parser().parse_args(["recall", "port", "-k", "3", "--tier", "semantic", "--include-history"])

    request = msgspec.convert(arguments(args, RecallRequest), RecallRequest)
    assert request == RecallRequest(query="port", k=3, tiers=["semantic"], include_history=True)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["delete", "--reason", "gdpr", "--id", "3", "--id", "4", "--from", "2026-01-01T00:00:00Z"],
         {"reason": "gdpr", "ids": [3, 4], "created_from": "2026-01-01T00:00:00Z"}),
        (["consolidate", "--pass", "semantic"], {"passes": ["semantic"]}),  # replaces the default, never adds to it
        (["consolidate"], {}),
        (["pin", "7", "--off"], {"pinned": False}),
        (["pin", "7"], {}),
        (["rebuild", "--only", "bm25"], {"which": ["bm25"]}),
        (["rebuild"], {}),
        (["ingest", "notes", "/srv/notes", "--dry-run", "--project", "shop"],
         {"path": "/srv/notes", "dry_run": True, "project": "shop"}),
        (["ingest", "conversation", "chat.jsonl", "--assistant", "--session", "s-1", "--project", "shop"],
         {"messages": "chat.jsonl", "include_assistant": True, "session": "s-1", "project": "shop"}),
    ],
)  # fmt: skip
def test_the_cli_flags_keep_their_names(argv: list[str], expected: dict[str, Any]) -> None:
    args = cli_parser().parse_args(argv)
    request = CLI[" ".join(argv[:2]) if argv[0] == "ingest" else argv[0]]
    assert request(**arguments(args, request)) == request(**expected)  # as the keyword method builds it


@pytest.mark.parametrize("tool", sorted(MCP | MCP_ITEMS))
def test_each_mcp_tool_argument_is_a_field_of_its_request(tool: str) -> None:
    settings = McpSettings(project="p", projects=("p",), session="s", data_dir="/nonexistent")
    server, _ = build_server(settings, opener=lambda: None)  # type: ignore[arg-type,return-value]
    listed = {t.name: t for t in asyncio.run(server.list_tools())}
    params = set(listed[tool].input_schema["properties"]) - MCP_OWN.get(tool, set())
    request = MCP_ITEMS[tool] if tool in MCP_ITEMS else REQUESTS[MCP[tool]]
    assert params == {f.name for f in mcp_tools.fields(request)}
    assert params <= set(fields(request)), params - set(fields(request))


def test_an_mcp_tool_argument_has_its_fields_description_and_default() -> None:
    settings = McpSettings(project="p", projects=("p",), session="s", data_dir="/nonexistent")
    server, _ = build_server(settings, opener=lambda: None)  # type: ignore[arg-type,return-value]
    recall = {t.name: t for t in asyncio.run(server.list_tools())}["recall"].input_schema
    assert recall["required"] == ["query"]
    assert recall["properties"]["k"]["default"] == 10 and "max_k" in recall["properties"]["k"]["description"]
    assert "configured project" in recall["properties"]["project"]["description"]
    assert "$ref" not in str(recall)  # the time range's shape is written out


def test_remember_is_new_memory_on_every_surface() -> None:
    """The keyword method takes NewMemory's fields as keywords; the MCP tool those the host does not fill in."""
    assert Memory.remember is MemoryAPI.remember and Client.remember is MemoryAPI.remember
    settings = McpSettings(project="p", projects=("p",), session="s", data_dir="/nonexistent")
    server, _ = build_server(settings, opener=lambda: None)  # type: ignore[arg-type,return-value]
    tool = {t.name: t for t in asyncio.run(server.list_tools())}["remember"]
    host = {"agent", "session", "source", "source_ref", "source_ids"}
    assert set(tool.input_schema["properties"]) == set(NewMemory.__struct_fields__) - host
    assert mcp_tools.fields(NewMemory) == [f for f in msgspec.structs.fields(NewMemory) if f.name not in host]


@pytest.mark.parametrize(("route", "request_type"), [("/v1/stats", ScopeRequest), ("/v1/export", ScopeRequest)])
def test_a_get_route_takes_its_requests_fields_in_the_query(route: str, request_type: type[Request]) -> None:
    """The Client sends them so (agentmem.operations.query): the route must read the same names."""
    from api.app import create_app
    from api.settings import load

    schema = create_app(load(env={}), mem=None).openapi_schema.to_schema()  # type: ignore[arg-type]
    params = schema["paths"][route]["get"].get("parameters", [])
    assert {p["name"] for p in params if p["in"] == "query"} == set(query_names(request_type))


def test_include_history_is_on_every_recall_surface() -> None:
    """It was once only over HTTP (issue 37)."""
    settings = McpSettings(project="p", projects=("p",), session="s", data_dir="/nonexistent")
    server, _ = build_server(settings, opener=lambda: None)  # type: ignore[arg-type,return-value]
    tools = {t.name: t for t in asyncio.run(server.list_tools())}
    assert "include_history" in tools["recall"].input_schema["properties"]
    assert "include_history" in inspect.signature(MemoryAPI.search).parameters
    assert "include_history" in {a.dest for a in _subcommand(cli_parser(), "recall")._actions}


def test_a_request_leaves_its_defaults_off_the_wire() -> None:
    assert msgspec.json.encode(PinRequest()) == b"{}"
    assert msgspec.json.decode(b'{"query": "x", "include_history": true}', type=RecallRequest).include_history
