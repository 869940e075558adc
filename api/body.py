"""JSON request bodies decoded strictly, straight into the handler's `data` type.

Litestar decodes a body to plain Python first and then converts it with msgspec's lax rules, so
`{"ids": ["1"]}` became `[1]` and `"valid_from": 12345` a time; and its untyped decode lets a
body nested 1,000 levels deep end in a RecursionError (a 500). `StrictRequest` decodes the body
once, with msgspec's strict rules, into the type the handler declares; a wrong type, an unknown
field or a body too deeply nested is a ValidationError (400) that names the field. Query strings
and path parameters still go through Litestar's lax conversion: they are text, and `?limit=5`
means a number (but not `?limit=1e3`: see `api.deps.digits_only`). A viewer form must be valid
UTF-8 (`strict_form`), as a JSON body must: Litestar would read bad bytes as U+FFFD.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any
from urllib.parse import parse_qsl

import msgspec
from litestar import Request
from litestar.handlers import BaseRouteHandler

from agentmem.errors import ValidationError

_UNDECODED = object()
_AT = re.compile(r"^(?P<what>.*?) - at `\$\.?(?P<path>[^`]*)`$")


@cache
def _decoder(handler: BaseRouteHandler) -> msgspec.json.Decoder[Any]:
    data = handler.parsed_fn_signature.parameters.get("data")
    return msgspec.json.Decoder(Any if data is None else data.annotation, strict=True)


def decode(decoder: msgspec.json.Decoder[Any], body: bytes) -> Any:
    """`body` as the decoder's type, or ValidationError naming the field ("ids[0]: Expected `int`, got `str`")."""
    try:
        return decoder.decode(body or b"null")
    except RecursionError:
        raise ValidationError("the JSON body is nested too deeply") from None
    except msgspec.DecodeError as exc:
        m = _AT.match(str(exc))
        raise ValidationError(f"{m['path'] or 'body'}: {m['what']}" if m else f"body: {exc}") from None


class StrictRequest(Request):  # type: ignore[type-arg]
    """A Request whose `json()` is the body decoded strictly into the handler's `data` type."""

    _strict: Any = _UNDECODED

    async def json(self) -> Any:
        if self._strict is _UNDECODED:
            self._strict = decode(_decoder(self.route_handler), await self.body())
        return self._strict


async def strict_form(request: Request) -> None:  # type: ignore[type-arg]
    """ValidationError unless the form body is valid UTF-8, its percent-escapes included."""
    body = await request.body()
    try:
        text = body.decode()
        if request.content_type[0] == "application/x-www-form-urlencoded":
            parse_qsl(text, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise ValidationError("the form is not valid UTF-8") from None
