"""The PostgreSQL backend: many stateless agentmem nodes on one database (PostgreSQL with pgvector).

`agentmem serve --database-url postgresql://...` (or `AGENTMEM_DATABASE_URL`, or the config
file's `database_url`) selects it; without one, a data directory's DuckDB file and its Tantivy
and hnswlib indexes are used, as before. Needs the `postgres` extra (psycopg 3, psycopg_pool,
pgvector's Python package) and pgvector 0.8 or later in the database (iterative index scans).
"""

from __future__ import annotations

from agentmem.postgres.live import LiveView
from agentmem.postgres.search import PgIndexes
from agentmem.postgres.store import PgStore


def is_database_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(("postgresql://", "postgres://"))


__all__ = ["LiveView", "PgIndexes", "PgStore", "is_database_url"]
