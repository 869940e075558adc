"""The `agentmem mcp` subcommand, kept apart from the MCP server so that other commands start without it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentmem.errors import ValidationError

if TYPE_CHECKING:
    from api.settings import Settings


def add_mcp(sub: Any) -> dict[str, Callable[[argparse.Namespace], int]]:
    """The `mcp` subcommand for agentmem's CLI."""
    p = sub.add_parser("mcp", help="run the MCP server (stdio, or streamable HTTP with --transport http)")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP transport: address (loopback only)")
    p.add_argument("--port", type=int, default=8421, help="HTTP transport: port (default 8421, path /mcp)")
    p.add_argument("--project", help="the project tools act on (env AGENTMEM_PROJECT; default 'default')")
    p.add_argument("--allow-project", action="append", default=[], dest="allow",
                   help="another project a tool call may name (repeat; env AGENTMEM_MCP_PROJECTS)")  # fmt: skip
    p.add_argument("--agent", help="agent name recorded on what it writes (env AGENTMEM_AGENT)")
    p.add_argument("--session", help="session id for observations (env AGENTMEM_SESSION; default: a new one)")

    def run(args: argparse.Namespace) -> int:
        from api.mcp_backend import load_settings
        from api.mcp_server import build_server
        from api.server import is_loopback
        from api.settings import load

        settings = load_settings(project=args.project, allow=args.allow, agent=args.agent, session=args.session,
                                 url=args.url, token=args.token, data_dir=args.data_dir)  # fmt: skip
        http = None
        if args.transport == "http":
            if not is_loopback(args.host):
                raise ValidationError(f"refusing to serve MCP over HTTP on {args.host}: it has no authentication "
                                      "of its own; bind to 127.0.0.1")  # fmt: skip
            http = load()  # allowed_hosts, allowed_origins and the header timeout, as `serve` reads them
        server, scoped = build_server(settings)
        scoped.preload()
        try:
            if http is None:
                server.run("stdio")
            else:
                serve_http(server, args.host, args.port, http)
        finally:
            scoped.close()
        return 0

    return {"mcp": run}


def serve_http(server: Any, host: str, port: int, settings: Settings) -> None:
    """The MCP server's streamable HTTP app behind api.guard, as the service is: no tokens here, so
    every check is on, whatever address it binds (the SDK guards 127.0.0.1, localhost and ::1 only)."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from api.deadline import with_timeouts
    from api.guard import Guard

    guard = Guard.of(tokens=False, hosts=settings.allowed_hosts, origins=settings.allowed_origins)
    # the SDK's own Host/Origin check off: this guard is the one check, with the service's settings
    app = server.streamable_http_app(
        host=host, transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    uvicorn.run(guard.wrap(app), host=host, port=port, log_level="warning",
                http=with_timeouts(settings.header_timeout_seconds, settings.body_timeout_seconds))  # fmt: skip
