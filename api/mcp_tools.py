"""MCP tools made from an operation's request Struct (agentmem.operations, or `NewMemory`).

A tool's arguments are the request's fields (less those `_about` marks `mcp=False`), with the
Struct's types, defaults and descriptions as its JSON schema; a call's arguments are converted to
the request by msgspec, so a wrong type is a clear tool error naming the argument. A `project`
argument is always the server's to check (`Scoped.project`): its description says so.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeVar

import msgspec
from pydantic import Field, WithJsonSchema

from agentmem.errors import ValidationError
from agentmem.operations import default, shown

R = TypeVar("R", bound=msgspec.Struct)
PROJECT = "Leave empty: the configured project is used. Only projects this server allows are accepted."
_AT = re.compile(r"^(?P<what>.*?) - at `\$\.?(?P<path>[^`]*)`$")


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """The schema with each `$ref` into `defs` replaced by what it names (a tool's schema stands alone)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            return _inline(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
        return {k: _inline(v, defs) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_inline(v, defs) for v in schema]
    return schema


def fields(request: type[msgspec.Struct]) -> list[msgspec.structs.FieldInfo]:
    """The request's fields a tool takes."""
    return [f for f in msgspec.structs.fields(request) if shown(f.type).get("mcp", True)]


def parameters(request: type[msgspec.Struct]) -> list[inspect.Parameter]:
    """One keyword parameter per tool argument, its JSON schema the Struct's (for the SDK's tool schema)."""
    whole = msgspec.json.schema(request)
    defs = whole["$defs"]
    properties = defs[request.__name__]["properties"]
    out = []
    for f in fields(request):
        schema = _inline(properties[f.name], defs)
        if f.name == "project":
            schema = {**schema, "description": PROJECT}
        value = inspect.Parameter.empty if f.required else default(f)
        annotation = Annotated[Any, WithJsonSchema(schema), Field(description=schema.get("description"))]
        out.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=value, annotation=annotation))
    return out


def parse(request: type[R], given: dict[str, Any]) -> R:
    """The tool's arguments as the request, or ValidationError naming the argument."""
    try:
        return msgspec.convert(given, request, strict=False)
    except msgspec.ValidationError as exc:
        m = _AT.match(str(exc))
        raise ValidationError(f"{m['path']}: {m['what']}" if m else str(exc)) from None


def add_tool(
    server: Any,
    request: type[R],
    run: Callable[..., dict[str, Any]],
    *,
    name: str,
    description: str,
    annotations: Any,
    own: Sequence[inspect.Parameter] = (),
) -> None:
    """Register tool `name`: `run(request, **own)`, where `own` are arguments of the tool alone
    (such as the session end_session ends, which HTTP carries in the path)."""
    mine = [p.name for p in own]

    def tool(**given: Any) -> dict[str, Any]:
        from mcp.server.mcpserver.exceptions import ToolError

        extra = {k: given.pop(k) for k in mine}
        try:
            parsed = parse(request, given)
        except ValidationError as exc:
            raise ToolError(f"{exc.label}: {exc}") from None
        return run(parsed, **extra)

    tool.__signature__ = inspect.Signature([*own, *parameters(request)], return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    tool.__name__ = name
    server.add_tool(tool, name=name, description=description, annotations=annotations)
