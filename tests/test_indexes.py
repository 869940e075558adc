"""The index layer on its own: every delete path really removes, capacity grows, damage is detected."""

from __future__ import annotations

import numpy as np
import pytest

from fakes import FakeEmbedder
from indexes.bm25 import BM25Index
from indexes.docs import Doc, IndexCorrupt
from indexes.vectors import VectorIndex

E = FakeEmbedder()


def _doc(i: int, text: str, project: str = "p") -> Doc:
    return Doc(id=i, text=text, vector=E.embed([text])[0], project=project, kind="fact", tier="semantic")


def test_bm25_delete_really_removes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ix = BM25Index.create(tmp_path / "bm25")
    ix.apply([_doc(i, f"alpha beta {i}") for i in range(1, 11)], [], seq=1)
    assert ix.count() == 10 and len(ix.search("alpha", 50)) == 10
    ix.apply([], [3, 4], seq=2)
    assert ix.count() == 8 and ix.ids() == set(range(1, 11)) - {3, 4}
    assert {i for i, _ in ix.search("alpha", 50)} == set(range(1, 11)) - {3, 4}
    ix.apply([_doc(5, "gamma only")], [], seq=3)  # an upsert replaces, never duplicates
    assert ix.count() == 8 and [i for i, _ in ix.search("gamma", 5)] == [5]
    assert 5 not in {i for i, _ in ix.search("alpha", 50)}
    ix.close()
    again = BM25Index(tmp_path / "bm25")
    assert again.applied_seq == 3 and again.ids() == set(range(1, 11)) - {3, 4}


def test_bm25_filters(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ix = BM25Index.create(tmp_path / "bm25")
    ix.apply([_doc(1, "shared words", "a"), _doc(2, "shared words", "b")], [], seq=1)
    assert [i for i, _ in ix.search("shared", 5, project="a")] == [1]
    assert ix.search("shared", 5, project="c") == []
    assert ix.search("shared", 5, kinds=["lesson"]) == []


def test_bm25_project_filter_follows_every_commit(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The project clause is left out while one project holds every document; each commit that
    adds, deletes or stages another project's document is seen by the next search, and the filters
    never change the text's scores."""
    ix = BM25Index.create(tmp_path / "bm25")
    ix.apply([_doc(i, f"deploy the api {i}", "a") for i in range(1, 6)], [], seq=1)
    alone = ix.search("deploy api", 10)
    assert {i for i, _ in ix.search("deploy api", 10, project="a")} == set(range(1, 6))
    assert ix.search("deploy api", 10, project="a") == alone  # same scores with or without the clause
    assert ix.search("deploy api", 10, project="b") == []
    ix.apply([_doc(6, "deploy the api elsewhere", "b")], [], seq=2, commit=False)
    assert 6 not in {i for i, _ in ix.search("deploy api", 10, project="a")}  # staged: not searchable yet
    ix.commit()
    assert 6 not in {i for i, _ in ix.search("deploy api", 10, project="a")}
    assert [i for i, _ in ix.search("deploy api", 10, project="b")] == [6]
    scores_a = dict(ix.search("deploy api", 10, project="a"))
    assert all(abs(scores_a[i] - s) < 1e-4 for i, s in ix.search("deploy api", 10) if i in scores_a)
    ix.apply([], [6], seq=3)  # b gone again: a holds every document
    assert {i for i, _ in ix.search("deploy api", 10, project="a")} == set(range(1, 6))
    assert ix.search("deploy api", 10, project="b") == []
    ix.apply([_doc(2, "deploy the api moved", "b")], [], seq=4)  # an upsert moves a document to b
    assert {i for i, _ in ix.search("deploy api", 10, project="a")} == {1, 3, 4, 5}
    assert [i for i, _ in ix.search("deploy api", 10, project="b")] == [2]
    ix.close()


def test_vectors_delete_resize_and_reload(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ix = VectorIndex.create(tmp_path / "v", E.dim, E.name, capacity=16)
    docs = [_doc(i, f"document number {i} on topic {i % 7}") for i in range(1, 101)]
    ix.apply(docs, [], seq=1)  # grows well past the initial capacity of 16
    assert ix.count() == 100
    probe = docs[41].vector
    assert ix.search(probe, 1)[0][0] == 42
    ix.apply([], [42], seq=2)
    assert 42 not in {i for i, _ in ix.search(probe, 100)}
    assert ix.count() == 99 and 42 not in ix.ids()
    ix.apply([docs[41]], [], seq=3)  # restoring a deleted label brings it back
    assert ix.search(probe, 1)[0][0] == 42
    ix.apply([], [42], seq=4)
    ix.flush()
    again = VectorIndex(tmp_path / "v", E.dim, E.name)
    assert again.applied_seq == 4 and again.ids() == set(range(1, 101)) - {42}
    assert 42 not in {i for i, _ in again.search(probe, 100)}


def test_vectors_of_gives_the_live_vectors_before_and_after_reload(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ix = VectorIndex.create(tmp_path / "v", E.dim, E.name, capacity=16)
    docs = {i: _doc(i, f"note {i} about topic {i % 5}") for i in range(1, 41)}
    ix.apply(list(docs.values()), [], seq=1)
    docs[7] = _doc(7, "note seven, rewritten")  # an upsert replaces the vector it reads
    ix.apply([docs[7]], [3, 9], seq=2)

    def same(index: VectorIndex) -> None:
        got = index.vectors_of([1, 3, 7, 9, 40, 999])
        assert set(got) == {1, 7, 40}
        for i, v in got.items():
            assert np.array_equal(v, np.asarray(docs[i].vector, dtype=np.float32))

    same(ix)
    ix.flush()
    same(VectorIndex(tmp_path / "v", E.dim, E.name))  # read from the saved graph file


def test_vectors_project_filter_with_few_matches(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ix = VectorIndex.create(tmp_path / "v", E.dim, E.name)
    ix.apply([_doc(i, f"common text {i}", "big") for i in range(1, 301)] + [_doc(999, "rare text", "small")], [], seq=1)
    got = ix.search(E.embed(["common text"])[0], 10, project="small")
    assert [i for i, _ in got] == [999]
    assert ix.search(E.embed(["x"])[0], 10, project="none") == []


def test_vectors_refuse_another_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    VectorIndex.create(tmp_path / "v", E.dim, E.name).flush(force=True)
    with pytest.raises(IndexCorrupt, match="built with"):
        VectorIndex(tmp_path / "v", 32, "other")


def test_vector_similarity_is_cosine(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ix = VectorIndex.create(tmp_path / "v", E.dim, E.name)
    d = _doc(1, "hello world")
    ix.apply([d], [], seq=1)
    q = E.embed(["hello there world"])[0]
    assert ix.search(q, 1)[0][1] == pytest.approx(float(np.dot(q, d.vector)), abs=1e-5)


@pytest.mark.parametrize("already_deleted", [False, True])
def test_erased_vectors_are_overwritten_in_the_saved_file(tmp_path, already_deleted: bool) -> None:  # type: ignore[no-untyped-def]
    """A purge overwrites the vector in the saved graph in place (no full save); the file still loads."""
    path = tmp_path / "vectors"
    ix = VectorIndex.create(path, E.dim, E.name)
    docs = [_doc(i, f"alpha beta note {i} about topic {i * 7}") for i in range(1, 41)]
    ix.apply(docs, [], seq=1)
    if already_deleted:
        ix.apply([], [7], seq=2)  # superseded long ago: hidden, its vector still stored
    ix.flush(force=True)
    secret = np.asarray(docs[6].vector, dtype=np.float32).tobytes()
    files = list(path.glob("vectors.*.bin"))
    assert len(files) == 1 and secret in files[0].read_bytes()
    ix.apply([], [7], seq=3, scrub=[7])
    assert ix.erase_from_file() == 1 and secret not in files[0].read_bytes()
    assert ix.erase_from_file() == 0  # nothing left to do
    again = VectorIndex(path, E.dim, E.name)  # as after a crash: the patched file is what loads
    # its labels are those of the last save (the outbox replays the purge), but not its vector
    assert (7 in again.ids()) != already_deleted
    assert all(v.tobytes() != secret for v in again.vectors_of([7]).values())
    assert again.search(docs[11].vector, 1)[0][0] == 12  # the other vectors are intact
