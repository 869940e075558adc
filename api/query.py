"""A GET route's query parameters made from an operation's request Struct (agentmem.operations).

Litestar reads a handler's parameters from its signature and has no "query parameters from a
model"; `from_query` writes that signature from the Struct's fields: one query parameter per field,
under its query name (`operations.query_names`), with its type, default, description and bounds,
so the OpenAPI schema lists them. The handler itself takes the built request as `request`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar, get_type_hints

import msgspec
from litestar.params import QueryParameter

from agentmem.errors import ValidationError
from agentmem.operations import Request, default, description, plain, query_names

F = TypeVar("F", bound=Callable[..., Any])
_BOUNDS = ("ge", "le", "gt", "lt", "min_length", "max_length")


def _parameter(annotation: Any, name: str, value: Any) -> inspect.Parameter:
    """One keyword parameter of the handler: the field's type, its Litestar `Parameter`, its default."""
    base, metas = plain(annotation)
    bounds = {b: v for m in metas if isinstance(m, msgspec.Meta) for b in _BOUNDS if (v := getattr(m, b)) is not None}
    kwargs = {**bounds, "description": description(annotation) or None}
    if isinstance(value, list):  # Litestar takes no list as a default: left out, the Struct's applies
        base, value = base | None, None
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=value,
                             annotation=Annotated[base, QueryParameter(name=name, **kwargs)])  # fmt: skip


def from_query(request_type: type[Request]) -> Callable[[F], F]:
    """Make `handler(..., request)` a route that takes `request_type`'s fields as query parameters."""
    hints = get_type_hints(request_type, include_extras=True)
    fields = msgspec.structs.fields(request_type)
    names = dict(zip((f.name for f in fields), query_names(request_type), strict=True))
    query = [_parameter(hints[f.name], names[f.name], default(f)) for f in fields]

    def make(handler: F) -> F:
        own = inspect.signature(handler)
        kept = [p for p in own.parameters.values() if p.name != "request"]
        own_hints = get_type_hints(handler, include_extras=True)

        def built(kwargs: dict[str, Any]) -> Request:
            given = {f: v for f, q in names.items() if (v := kwargs.pop(q, None)) is not None}
            try:
                return msgspec.convert(given, request_type)
            except msgspec.ValidationError as exc:  # named by its query parameter, as Litestar names them
                what, _, where = str(exc).partition(" - at `$.")
                raise ValidationError(f"{names.get(where.rstrip('`'), where.rstrip('`'))}: {what}") from None

        if inspect.iscoroutinefunction(handler):

            @functools.wraps(handler)
            async def route(*args: Any, **kwargs: Any) -> Any:
                return await handler(*args, request=built(kwargs), **kwargs)
        else:

            @functools.wraps(handler)
            def route(*args: Any, **kwargs: Any) -> Any:
                return handler(*args, request=built(kwargs), **kwargs)

        route.__signature__ = own.replace(parameters=[*kept, *query])  # type: ignore[attr-defined]
        route.__annotations__ = {p.name: own_hints[p.name] for p in kept} | {p.name: p.annotation for p in query}
        route.__annotations__["return"] = own_hints["return"]
        del route.__wrapped__  # type: ignore[attr-defined]  # Litestar must read the new signature
        return route  # type: ignore[return-value]

    return make
