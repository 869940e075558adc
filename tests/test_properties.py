"""Property-based tests (Hypothesis) on the core's inputs: any input is stored, or refused with
ValidationError and nothing written; the store and both indexes stay consistent throughout."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmem import Memory, NewMemory, ValidationError
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
    m = Memory(Path(tmp_path_factory.mktemp("prop")) / "d", embedder=FakeEmbedder())
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
    reinforced each other under one key; they are different contents and one replaces the other."""
    first = mem.remember("🙂", project="sym", key="mood")
    second = mem.remember("\x08", project="sym", key="mood")
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


@SETTINGS
@given(
    ids=st.lists(st.one_of(st.integers(-(2**64), 2**64), st.booleans(), st.text(max_size=5)), max_size=3),
    reason=st.one_of(st.none(), edgy_text),
    project=st.one_of(st.none(), edgy_text),
)
def test_delete_refuses_bad_requests_without_writing(mem: Memory, ids: list[object], reason: object,
                                                    project: str | None) -> None:  # fmt: skip
    before = mem.stats()
    try:
        report = mem.delete(ids=ids, reason=reason, project=project, dry_run=True)  # type: ignore[arg-type]
    except (ValidationError, LookupError):
        assert mem.stats() == before
        return
    assert report.dry_run and mem.stats() == before


@SETTINGS
@given(items=st.lists(st.tuples(edgy_text, st.sampled_from(["observation", "event", "fact"])), min_size=1, max_size=5))
def test_observe_is_all_or_nothing(mem: Memory, items: list[tuple[str, str]]) -> None:
    before = mem.stats()
    batch = [NewMemory(content=c, project="p", kind=k, tier="working") for c, k in items]
    try:
        created = mem.observe(batch)
    except ValidationError:
        assert mem.stats() == before
        return
    assert len(created) == len(items) and mem.stats().versions == before.versions + len(items)
