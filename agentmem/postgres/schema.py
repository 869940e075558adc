"""The PostgreSQL schema: the tables of the DuckDB store, each carrying `project` in its primary key.

Ready for Citus: `project` is the distribution column of every table that holds memories
(memories, embeddings, links, audit); `agentmem_meta` and `provider_cache` hold no project's
data and would be reference tables. Search runs in the database: a generated `tsvector` over
each current version's search document (title, content and the words it carried from the
versions it replaced) with a GIN index, and pgvector's HNSW index over the current versions'
embeddings; both are partial indexes restricted to current versions.
"""

from __future__ import annotations

from typing import Any

from agentmem.errors import SchemaTooNewError, StoreError

SCHEMA_VERSION = 6
# how full PostgreSQL packs a page of `memories`: the room left lets a version's counters (accesses,
# reinforcements) change in place, a heap-only update, instead of a new entry in every index (HNSW too)
MEMORY_FILL = 80
CURRENT = "is_latest AND status = 'active'"
M_CURRENT = "m.is_latest AND m.status = 'active'"  # the same, on the alias m
PROJECTS_OF = "SELECT id, project FROM memory_projects WHERE id = ANY(?::bigint[])"  # each id's project
# pgvector's HNSW index over the current versions' vectors (`PgStore.loading` builds it after a load)
VECTOR_INDEX = f"CREATE INDEX memories_embedding ON memories USING hnsw (embedding vector_cosine_ops) WHERE {CURRENT}"
# how many current versions the vector index holds, counted up to a limit (of every project: the
# question of an import that may build the index again)
CURRENT_UP_TO = f"SELECT count(*) FROM (SELECT 1 FROM memories WHERE {CURRENT} LIMIT ?) AS held"
# A search document's words, as Tantivy's en_stem reads them: the Snowball English stemmer, every
# word kept (PostgreSQL's `english` drops its stopwords, so both backends ranked differently). A
# query is scored by all its words, but finds the documents holding one that is not a stopword
# (`MATCH_CONFIG`): a match on "was" or "the" alone would score most of a project.
TEXT_CONFIG = "agentmem_english"
MATCH_CONFIG = "english"  # the same stems, stopwords left out
TEXT_SEARCH = """DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = 'agentmem_stem') THEN
        CREATE TEXT SEARCH DICTIONARY agentmem_stem (TEMPLATE = snowball, Language = english);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'agentmem_english') THEN
        CREATE TEXT SEARCH CONFIGURATION agentmem_english (COPY = english);
        ALTER TEXT SEARCH CONFIGURATION agentmem_english
            ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH agentmem_stem;
    END IF;
END $$"""
SEARCH_COLUMN = f"search tsvector GENERATED ALWAYS AS (to_tsvector('{TEXT_CONFIG}', coalesce(doc, ''))) STORED"
SEARCH_INDEX = f"CREATE INDEX memories_search ON memories USING gin (search) WHERE {CURRENT}"

# tables added by schema version 3: the BM25 statistics (`agentmem.postgres.bm25`), and where each
# memory id lives (a read by id alone finds its project there first: one shard, then another)
BM25_TABLES = [
    """CREATE TABLE IF NOT EXISTS bm25_projects (
        project text PRIMARY KEY,
        docs bigint NOT NULL,
        tokens bigint NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS bm25_terms (
        project text NOT NULL,
        term text NOT NULL,
        docs bigint NOT NULL,
        PRIMARY KEY (project, term)
    )""",
]
ID_TABLES = [
    """CREATE TABLE IF NOT EXISTS memory_projects (
        id bigint PRIMARY KEY,
        project text NOT NULL
    )""",
]

# every project's BM25 statistics counted afresh from the search documents (whatever an earlier attempt left)
RECOUNT = [
    "DELETE FROM bm25_terms",
    "DELETE FROM bm25_projects",
    "INSERT INTO bm25_terms (project, term, docs) SELECT m.project, t, count(*) FROM memories m, "
    "unnest(tsvector_to_array(m.search)) AS t WHERE m.doc IS NOT NULL GROUP BY 1, 2",
    "INSERT INTO bm25_projects (project, docs, tokens) SELECT m.project, count(*), sum(m.doc_len) "
    "FROM memories m WHERE m.doc IS NOT NULL GROUP BY 1",
]
# what a database of an older schema version is brought up to date with, by the version it goes to
UPGRADES: dict[int, list[str]] = {
    2: [  # the slot column holds the slot's sha256 (a long subject fits the btree index); only
        # current versions keep a search document (older ones held words a delete may erase)
        "UPDATE memories SET slot = encode(sha256(convert_to(slot, 'UTF8')), 'hex') WHERE slot IS NOT NULL",
        f"UPDATE memories SET doc = NULL WHERE doc IS NOT NULL AND NOT ({CURRENT})",
    ],
    3: [  # BM25 statistics counted from the search documents there are, and every id's project
        *BM25_TABLES,
        *ID_TABLES,
        "ALTER TABLE memories ADD COLUMN IF NOT EXISTS doc_len integer",
        r"UPDATE memories SET doc_len = (SELECT count(*) FROM regexp_matches(doc, '\w+', 'g')) WHERE doc IS NOT NULL",
        *RECOUNT,
        "DELETE FROM memory_projects",
        "INSERT INTO memory_projects (id, project) SELECT id, project FROM memories",
    ],
    4: [  # search documents keep their stopwords, as Tantivy's do: the column is made again, and counted
        TEXT_SEARCH,
        "ALTER TABLE memories DROP COLUMN search",  # its index goes with it
        f"ALTER TABLE memories ADD COLUMN {SEARCH_COLUMN}",
        SEARCH_INDEX,
        *RECOUNT,
    ],
    5: [  # each version's text analysis (`agentmem.currentness.analysis`), made when written
        "ALTER TABLE memories ADD COLUMN IF NOT EXISTS analysis bytea",
    ],
    6: [  # room on each page for counters updated in place; pages written from now on get it
        f"ALTER TABLE memories SET (fillfactor = {MEMORY_FILL})",
    ],
}

META = "CREATE TABLE IF NOT EXISTS agentmem_meta (name text PRIMARY KEY, value text NOT NULL)"


def statements(dim: int) -> list[str]:
    """The DDL of a fresh database for embeddings of `dim` dimensions."""
    return [
        "CREATE EXTENSION IF NOT EXISTS vector",
        TEXT_SEARCH,
        "CREATE SEQUENCE IF NOT EXISTS memory_ids MAXVALUE 9007199254740992",
        "CREATE SEQUENCE IF NOT EXISTS audit_ids",
        f"""CREATE TABLE memories (
            project text NOT NULL,
            id bigint NOT NULL,
            lineage_id bigint NOT NULL,
            version integer NOT NULL,
            parent_id bigint,
            is_latest boolean NOT NULL,
            status text NOT NULL,
            content text NOT NULL,
            title text,
            subject text,
            predicate text,
            object text,
            key text,
            tier text NOT NULL,
            kind text NOT NULL,
            agent text,
            session text,
            source text NOT NULL,
            source_ref text,
            source_ids bigint[],
            salience double precision NOT NULL,
            confidence double precision NOT NULL,
            reinforcements integer NOT NULL,
            accesses integer NOT NULL,
            pinned boolean NOT NULL,
            created_at timestamptz NOT NULL,
            valid_from timestamptz NOT NULL,
            valid_to timestamptz,
            expires_at timestamptz,
            last_reinforced_at timestamptz NOT NULL,
            last_accessed_at timestamptz,
            superseded_by bigint,
            superseded_at timestamptz,
            supersede_reason text,
            supersede_similarity double precision,
            content_hash text NOT NULL,
            archived_at timestamptz,
            deleted_at timestamptz,
            status_reason text,
            norm_hash text NOT NULL,
            slot text,
            doc text,
            doc_len integer,
            {SEARCH_COLUMN},
            embedding vector({int(dim)}),
            analysis bytea,
            PRIMARY KEY (project, id)
        ) WITH (fillfactor = {MEMORY_FILL})""",
        "CREATE INDEX memories_by_id ON memories (id)",
        "CREATE INDEX memories_by_lineage ON memories (project, lineage_id, version)",
        f"CREATE INDEX memories_by_key ON memories (project, key) WHERE {CURRENT} AND key IS NOT NULL",
        f"CREATE INDEX memories_by_slot ON memories (project, slot) WHERE {CURRENT} AND slot IS NOT NULL",
        f"CREATE INDEX memories_by_norm ON memories (project, norm_hash) WHERE {CURRENT}",
        f"CREATE INDEX memories_current ON memories (project, id) WHERE {CURRENT}",
        SEARCH_INDEX,
        VECTOR_INDEX,
        """CREATE TABLE embeddings (
            project text NOT NULL,
            content_hash text NOT NULL,
            model text NOT NULL,
            vector real[] NOT NULL,
            PRIMARY KEY (project, content_hash, model)
        )""",
        "CREATE INDEX embeddings_by_hash ON embeddings (content_hash, model)",
        """CREATE TABLE links (
            project text NOT NULL,
            src_id bigint NOT NULL,
            dst_id bigint NOT NULL,
            kind text NOT NULL,
            created_at timestamptz NOT NULL
        )""",
        "CREATE INDEX links_by_src ON links (project, src_id)",
        "CREATE INDEX links_by_dst ON links (project, dst_id)",
        """CREATE TABLE audit (
            project text NOT NULL,
            id bigint NOT NULL,
            created_at timestamptz NOT NULL,
            action text NOT NULL,
            actor text NOT NULL,
            memory_id bigint,
            lineage_id bigint,
            affected integer NOT NULL,
            reason text,
            details text,
            PRIMARY KEY (project, id)
        )""",
        "CREATE INDEX audit_by_id ON audit (id)",
        *BM25_TABLES,
        *ID_TABLES,
        """CREATE TABLE provider_cache (
            prompt_hash text PRIMARY KEY,
            model text NOT NULL,
            reply text NOT NULL,
            created_at timestamptz NOT NULL
        )""",
    ]


def migrate(conn: Any, dim: int, model: str) -> int:
    """Create the schema in an empty database, or check the one there; returns its version.

    Runs under an advisory lock, so nodes starting together create it once. The embedding
    dimension is fixed at creation (pgvector's HNSW index needs it): a database made for
    another model is refused, not changed."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(4242001)")
        conn.execute(META)
        rows = dict(conn.execute("SELECT name, value FROM agentmem_meta").fetchall())
        if not rows:
            for sql in statements(dim):
                conn.execute(sql)
            conn.execute(
                "INSERT INTO agentmem_meta VALUES ('schema_version', %s), ('model', %s), ('dim', %s)",
                [str(SCHEMA_VERSION), model, str(dim)],
            )
            return SCHEMA_VERSION
        have = int(rows["schema_version"])
        if have < SCHEMA_VERSION and int(rows["dim"]) == dim and rows["model"] == model:
            for version in range(have + 1, SCHEMA_VERSION + 1):
                for sql in UPGRADES[version]:
                    conn.execute(sql)
            conn.execute("UPDATE agentmem_meta SET value = %s WHERE name = 'schema_version'", [str(SCHEMA_VERSION)])
            have = SCHEMA_VERSION
    if have > SCHEMA_VERSION:
        raise SchemaTooNewError(
            f"this database has agentmem schema version {have}, but this agentmem knows only up to "
            f"{SCHEMA_VERSION}: upgrade agentmem to use it (nothing was changed)"
        )
    if int(rows["dim"]) != dim or rows["model"] != model:
        raise StoreError(
            f"this database holds {rows['dim']}-dimensional embeddings of {rows['model']!r}, and this node "
            f"embeds with {model!r} ({dim} dimensions): start it with the database's model"
        )
    return have
