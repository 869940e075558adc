"""Property-based tests (Hypothesis) on the core's inputs: any input is stored, or refused with
ValidationError and nothing written; a delete erases exactly what it names; the store and both
indexes stay consistent throughout."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentmem import Config, Memory, MemoryVersion, NewMemory, ValidationError
from agentmem.config import ClaimRules
from agentmem.text import identity, jaccard, normalise, tokens
from fakes import FakeEmbedder

# Text that probes the edges: any code point (NUL, controls, surrogates excluded by Python str,
# combining marks, RTL, emoji), very long tokens, whitespace only.
edgy_text = st.one_of(
    st.text(max_size=200),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=80),
    st.builds(lambda c, n: c * n, st.sampled_from(["a", "é", "\x00", " ", "\u200b", "🙂", "ß"]), st.integers(1, 5000)),
    st.sampled_from(["", " ", "\n\t", "\x00", "a\x00b", "\ud7ff", "\ufeff", "ﷺ" * 50]),
)
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**70), 2**70), st.booleans(), st.none()
)
SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def mem(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memory]:
    # claims off: these properties count the versions each call writes (tests/test_claims.py has claims)
    m = Memory(Path(tmp_path_factory.mktemp("prop")) / "d", embedder=FakeEmbedder(),
               config=Config(claims=ClaimRules(enabled=False)))  # fmt: skip
    yield m
    m.close()


@SETTINGS
@given(content=edgy_text, key=st.one_of(st.none(), edgy_text), salience=numbers, ttl=numbers)
def test_remember_stores_or_refuses_cleanly(mem: Memory, content: str, key: str | None, salience: object,
                                            ttl: object) -> None:  # fmt: skip
    before = mem.stats()
    try:
        r = mem.remember(content, project="p", key=key, salience=salience, ttl_days=ttl)
    except ValidationError:
        assert mem.stats() == before  # refused: nothing written
        return
    if r.outcome == "reinforced":  # the same content, said with other spacing or case
        assert identity(r.memory.content) == identity(content)
    else:
        assert r.memory.content == content.strip()
    assert r.memory.project == "p"
    assert mem.get(r.memory.id).content == r.memory.content
    assert mem.check().ok


@SETTINGS
@given(query=edgy_text, k=st.one_of(st.integers(-5, 2000), st.booleans()), kinds=st.lists(edgy_text, max_size=2))
def test_recall_answers_or_refuses(mem: Memory, query: str, k: int, kinds: list[str]) -> None:
    try:
        hits = mem.recall(query, project="p", k=k, kinds=kinds)
    except ValidationError:
        return
    assert len(hits) <= k and all(h.memory.is_latest and h.memory.status == "active" for h in hits)


def test_symbols_only_contents_are_not_the_same_memory(mem: Memory) -> None:
    """Found by Hypothesis: two texts with no word tokens ("\x08", "🙂") normalised alike and
    reinforced each other under one key; they are different contents and one replaces the other.
    ("\x08" alone is refused now, as blank: it shows nothing; "✓" has no word token either.)"""
    first = mem.remember("🙂", project="sym", key="mood")
    second = mem.remember("✓", project="sym", key="mood")
    assert second.outcome == "superseded" and second.superseded_id == first.memory.id
    again = mem.remember("  🙂  ", project="sym", key="other")
    assert again.outcome == "created"
    assert mem.remember("🙂", project="sym", key="other").outcome == "reinforced"


@SETTINGS
@given(a=edgy_text, b=edgy_text)
def test_text_helpers_are_total(a: str, b: str) -> None:
    ta, tb = set(tokens(a)), set(tokens(b))
    assert 0.0 <= jaccard(ta, tb) <= 1.0 and jaccard(ta, tb) == jaccard(tb, ta)
    assert normalise(normalise(a)) == normalise(a)


def made_up(n: int, part: str) -> str:
    """Five made-up words no other memory of the run shares, so nothing reinforces or supersedes by chance."""
    digest = hashlib.blake2b(f"{n}:{part}".encode(), digest_size=20).digest()
    return " ".join("".join(chr(97 + b % 26) for b in digest[i : i + 4]) for i in range(0, 20, 4))


@pytest.fixture(scope="module")
def erasable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Memory, Iterator[list[MemoryVersion]]]]:
    """A store of its own (the deletes are real), and unused pairs of memories from it, written 50
    pairs to a transaction: a write costs an index commit, the slow part of an example."""
    m = Memory(Path(tmp_path_factory.mktemp("erase")) / "d", embedder=FakeEmbedder(),
               config=Config(claims=ClaimRules(enabled=False)))  # fmt: skip  # the turns' claims: tests/test_claims.py

    def pairs() -> Iterator[list[MemoryVersion]]:
        for batch in itertools.count():
            made = m.observe([NewMemory(content=made_up(n, part), project="gone", kind="observation")
                              for n in range(batch * 50, batch * 50 + 50) for part in ("old", "kept")])  # fmt: skip
            yield from (made[i : i + 2] for i in range(0, len(made), 2))

    yield m, pairs()
    m.close()


# Requests that must be refused: ids out of range, ids no memory has (the store stays far below 2**40), non-ids.
bad_ids = st.one_of(st.integers(-(2**64), 0), st.integers(2**40, 2**64), st.booleans(), st.text(max_size=5))


@settings(SETTINGS, max_examples=30)
@example(how="ids", pick="new", noise=[], reason="the user asked", project=None, dry_run=False)
@example(how="ids", pick="old", noise=[], reason="the user asked", project=None, dry_run=False)
@example(how="lineages", pick="old", noise=[], reason="the user asked", project=None, dry_run=False)
@given(
    how=st.sampled_from(["ids", "lineages"]),
    pick=st.sampled_from(["old", "new"]),
    noise=st.lists(bad_ids, max_size=2),
    reason=st.one_of(st.just("the user asked"), st.none(), edgy_text),
    project=st.one_of(st.none(), st.just("  "), edgy_text),  # blank: no filter
    dry_run=st.booleans(),
)
def test_delete_erases_what_it_names_or_refuses_without_writing(erasable: tuple[Memory, Iterator[list[MemoryVersion]]],
                                                               how: str, pick: str, noise: list[object], reason: object,
                                                               project: str | None, dry_run: bool) -> None:  # fmt: skip
    mem, pairs = erasable
    first, kept = next(pairs)  # kept: an unrelated memory
    new = mem.revise(first.id, made_up(first.id, "new"))
    lineage = [mem.get(first.id), new.memory]  # the old version (superseded now) and the new one
    named = new.memory if pick == "new" else lineage[0]
    before = mem.stats()
    try:
        report = mem.delete(reason=reason, project=project, dry_run=dry_run, **{how: [named.id, *noise]})  # type: ignore[arg-type]
    except (ValidationError, LookupError):
        erased: set[int] = set()
        assert mem.stats() == before  # refused: nothing written
    else:
        erased = {v.id for v in lineage} if how == "lineages" else {named.id}
        assert report.dry_run == dry_run and report.ids == sorted(erased)
        if dry_run:
            erased = set()
            assert mem.stats() == before
    for v in [*lineage, kept]:
        got = mem.get(v.id)
        assert (got.status, got.content) == (("deleted", "") if v.id in erased else (v.status, v.content))
        hits = mem.recall(v.content, project="gone", k=10)
        assert not erased & {h.memory.id for h in hits}
        if v.id in erased:
            assert v.content not in {h.memory.content for h in hits}
    assert mem.recall(kept.content, project="gone", k=1)[0].memory.id == kept.id  # unrelated memories survive
    if new.memory.id not in erased:
        assert mem.recall(new.memory.content, project="gone", k=1)[0].memory.id == new.memory.id
    assert mem.check().ok  # both indexes hold exactly the latest active ids


@SETTINGS
@given(items=st.lists(st.tuples(edgy_text, st.sampled_from(["observation", "event", "fact"])), min_size=1, max_size=5))
def test_observe_is_all_or_nothing(mem: Memory, items: list[tuple[str, str]]) -> None:
    mem.engine.refresh()  # the BM25 count in the stats is of committed documents
    before = mem.stats()
    batch = [NewMemory(content=c, project="p", kind=k, tier="working") for c, k in items]
    try:
        created = mem.observe(batch)
    except ValidationError:
        mem.engine.refresh()
        assert mem.stats() == before
        return
    assert len(created) == len(items) and mem.stats().versions == before.versions + len(items)
