"""The request guard of the API, the viewer and the MCP server: what a web page may not do to them.

Any page the user visits can send requests to a server on 127.0.0.1, and a page whose name it
rebinds to 127.0.0.1 (DNS rebinding) can read the replies too. Without tokens every caller is an
admin, so the guard refuses:
- a Host header that is neither a loopback name (localhost, 127.x.x.x, [::1]) nor in
  `allowed_hosts`: 421 (UnknownHostError); a rebound name arrives as its own Host;
- a request from another site: an Origin that is not this server's own nor in `allowed_origins`
  (an opaque `null` included), or a Sec-Fetch-Site other than same-origin or none: 403. A link
  followed from another site (a GET that navigates a tab) passes: the linking page cannot read it;
- a state-changing request whose body is not JSON (`application/json`, or `application/x-ndjson`
  for an import): 400. Those are the types a page cannot send without a CORS preflight, which this
  server never grants. The viewer's HTML forms (under /ui/) are the exception; they carry a CSRF token.

With tokens every request that reads or writes needs one, and a browser never adds it by itself:
the Origin and body checks are off (the viewer's forms keep their own, see api.viewer.session),
and the Host check applies only when `allowed_hosts` names the hosts to serve.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import msgspec

from agentmem.errors import AccessDeniedError, AgentMemError, UnknownHostError, ValidationError

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
JSON_TYPES = ("application/json", "application/x-ndjson")
FORMS = "/ui/"  # the viewer: its forms post application/x-www-form-urlencoded, with a CSRF token


def loopback_name(name: str) -> bool:
    """Whether a Host's name is loopback by itself; a DNS name is not looked up (rebinding resolves it so)."""
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Guard(msgspec.Struct, frozen=True, kw_only=True):
    """The checks above; `open` is a server without tokens (every check on)."""

    open: bool = True
    hosts: frozenset[str] = frozenset()  # allowed Host values, `name` (any port) or `name:port`, lower case
    origins: frozenset[str] = frozenset()  # allowed Origin values, `scheme://host[:port]`, lower case

    @classmethod
    def of(cls, *, tokens: bool, hosts: list[str], origins: list[str]) -> Guard:
        return cls(
            open=not tokens,
            hosts=frozenset(h.lower() for h in hosts),
            origins=frozenset(o.lower().rstrip("/") for o in origins),
        )

    def check(self, method: str, path: str, headers: Mapping[str, str]) -> None:
        """Raise the refusal of this request, if it gets one."""
        host = headers.get("host", "")
        if (self.open or self.hosts) and not self._known(host):
            raise UnknownHostError(
                f"this server does not answer to Host {host!r}: use 127.0.0.1 or localhost, or add the name "
                "to allowed_hosts (AGENTMEM_ALLOWED_HOSTS) if a proxy serves it"
            )
        if not self.open:
            return
        why = self.foreign(method, headers)
        if why:
            raise AccessDeniedError(
                f"refused: the request comes from another site ({why}); a server without tokens answers only its "
                "own pages and programs (add the page's origin to allowed_origins to trust it)"
            )
        sent = headers.get("content-length", "0") not in ("", "0") or "transfer-encoding" in headers
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        if method not in SAFE_METHODS and sent and media not in JSON_TYPES and not path.startswith(FORMS):
            raise ValidationError(
                f"send the body as Content-Type: application/json, not {media or 'no type'!r}: a server without "
                "tokens takes no other type (any web page can send those)"
            )

    def foreign(self, method: str, headers: Mapping[str, str]) -> str | None:
        """What says the request comes from another site (Origin or Sec-Fetch-Site), or None."""
        origin = headers.get("origin")
        if origin is not None:
            if origin.lower().rstrip("/") in self.origins:
                return None
            try:
                netloc = urlsplit(origin).netloc.lower()  # "null" has none
            except ValueError:  # a malformed [IPv6]
                return f"Origin {origin}"
            if netloc != headers.get("host", "").lower():
                return f"Origin {origin}"
        site = headers.get("sec-fetch-site", "none")
        if site in ("same-origin", "none"):
            return None
        if method in ("GET", "HEAD") and headers.get("sec-fetch-mode") == "navigate":
            return None  # a link followed into a tab: the page that linked cannot read it
        return f"Sec-Fetch-Site {site}"

    def _known(self, host: str) -> bool:
        host = host.strip().lower()
        try:
            name = urlsplit(f"//{host}").hostname or ""
        except ValueError:  # a malformed [IPv6]
            return False
        return host in self.hosts or name in self.hosts or f"[{name}]" in self.hosts or loopback_name(name)

    def wrap(self, app: Any) -> Any:
        """`app` (ASGI) behind this guard; a refusal is answered as the API's JSON errors are."""

        async def guarded(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
                try:
                    self.check(scope["method"], scope["path"], headers)
                except AgentMemError as exc:
                    body = msgspec.json.encode({"error": {"code": exc.code, "message": str(exc), "details": None}})
                    head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                    await send({"type": "http.response.start", "status": exc.status, "headers": head})
                    await send({"type": "http.response.body", "body": body})
                    return
            await app(scope, receive, send)

        return guarded
