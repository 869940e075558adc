"""Running the service: `agentmem serve`, with the loopback rule for an open (tokenless) server."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import socket
from typing import Any

from agentmem.errors import ValidationError
from api.guard import loopback_name
from api.settings import Settings, load


def is_loopback(host: str) -> bool:
    """Whether binding to `host` serves this machine only: a loopback name, or a name every address of
    which is loopback (unlike the request guard, a bind address is resolved)."""
    if loopback_name(host):
        return True
    try:
        return all(ipaddress.ip_address(info[4][0]).is_loopback for info in socket.getaddrinfo(host, None))
    except OSError:
        return False


def check_bind(settings: Settings) -> None:
    """Without tokens the server is open to anyone who can reach it: allow loopback only."""
    if not settings.tokens and not is_loopback(settings.host):
        raise ValidationError(
            f"refusing to listen on {settings.host} with no tokens configured: anyone on the network could read "
            "and write every project. Configure tokens (AGENTMEM_TOKENS or a config file) or bind to 127.0.0.1."
        )


def run(settings: Settings, **uvicorn_options: Any) -> None:
    """Serve until stopped. The data directory is opened (and held) before the port is bound, so a
    second server on it stops at once with StoreLockedError; the model loads once the port listens."""
    import uvicorn

    from agentmem import Memory
    from api.app import create_app
    from api.deadline import with_timeouts
    from indexes.onnx_embed import default_embedder

    check_bind(settings)
    mem = Memory(
        settings.data_dir,
        embedder=default_embedder(),
        config=settings.config(),
        database_url=settings.database_url or None,
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    uvicorn.run(  # the app's shutdown closes `mem`
        create_app(settings, mem=mem, owns=True),
        host=settings.host,
        port=settings.port,
        log_level="info",
        timeout_graceful_shutdown=10,
        http=with_timeouts(settings.header_timeout_seconds, settings.body_timeout_seconds),
        **uvicorn_options,
    )


def add_serve(sub: Any) -> dict[str, Any]:
    """The `serve` subcommand for agentmem's CLI."""
    p = sub.add_parser("serve", help="run the HTTP service")
    p.add_argument("--host", help="address to bind (env AGENTMEM_HOST; default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (env AGENTMEM_PORT; default 8420)")
    p.add_argument("--config", help="TOML settings file (env AGENTMEM_CONFIG)")
    p.add_argument(
        "--database-url",
        dest="serve_database_url",
        help="a PostgreSQL database (with pgvector) every node shares, instead of the data directory's DuckDB file "
        "(env AGENTMEM_DATABASE_URL)",
    )

    def serve(args: argparse.Namespace) -> int:
        import msgspec

        settings = load(args.config)
        overrides = {
            "host": args.host,
            "port": args.port,
            "data_dir": str(args.data_dir) if args.data_dir else None,
            "database_url": args.serve_database_url or getattr(args, "database_url", None),
        }
        settings = msgspec.structs.replace(settings, **{k: v for k, v in overrides.items() if v is not None})
        run(settings)
        return 0

    return {"serve": serve}


def add_commands(sub: Any) -> dict[str, Any]:
    """`serve` and `mcp` for agentmem's CLI."""
    from api.mcp_cli import add_mcp

    return {**add_serve(sub), **add_mcp(sub)}


def entry() -> None:
    import sys

    from agentmem.cli import main

    sys.exit(main(extra=add_commands))
