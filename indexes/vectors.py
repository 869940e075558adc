"""An hnswlib vector index (inner product on normalised vectors) persisted with its applied seq."""

from __future__ import annotations

import mmap
import os
import shutil
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import hnswlib
import numpy as np

from indexes.docs import Doc, IndexCorrupt, IndexFailure
from indexes.meta import read_meta, write_meta

SCHEMA_VERSION = 1
M = 16
EF_CONSTRUCTION = 100
EF_SEARCH = 64


class VectorIndex:
    """Nearest neighbours by cosine similarity; labels are the documents' integer ids.

    Writes land in memory at once (so recall sees them) and reach disk on `flush()`; the
    outbox replays whatever a crash lost since the last flush. The live vectors are also kept as
    rows of one array (`vectors_of`): hnswlib hands a stored vector back at 10-30 µs an id, and
    recall reads some twenty per query; the copy costs the vectors' size again in memory.
    """

    def __init__(self, path: Path, dim: int, model: str, *, capacity: int = 1024, _fresh: bool = False) -> None:
        self.path = path
        self.dim = dim
        self.model = model
        self._meta_path = path / "vectors.meta.json"
        self._lock = threading.RLock()
        self._hnsw = hnswlib.Index(space="ip", dim=dim)
        self._live: set[int] = set()
        self._group_of: dict[int, int] = {}
        self._groups: list[str] = []
        self._group_code: dict[str, int] = {}
        self._group_size: dict[int, int] = {}
        self._row: dict[int, int] = {}  # live label -> its row of `_rows`
        self._rows = np.zeros((0, dim), dtype=np.float32)
        self._free: list[int] = []  # rows no live label holds
        self.unsaved = 0
        self._erased: dict[int, tuple[bytes, bytes]] = {}  # label -> (its bytes in the saved graph, noise)
        self._file_lock = threading.Lock()  # one writer of the saved graph file at a time
        if _fresh:
            self._hnsw.init_index(max_elements=capacity, ef_construction=EF_CONSTRUCTION, M=M)
            self.applied_seq = 0
            self.saved_seq = 0
            self._file = ""
        else:
            self._load()
        self._hnsw.set_ef(EF_SEARCH)

    @classmethod
    def create(cls, path: Path, dim: int, model: str, capacity: int = 1024) -> VectorIndex:
        """An empty index at `path`, replacing whatever was there."""
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        ix = cls(path, dim, model, capacity=max(capacity, 16), _fresh=True)
        ix.flush(force=True)
        return ix

    def _load(self) -> None:
        meta = read_meta(self._meta_path)
        if meta is None or meta.get("schema_version") != SCHEMA_VERSION:
            raise IndexCorrupt(f"vector index at {self.path} is missing or from another schema")
        if meta.get("model") != self.model or meta.get("dim") != self.dim:
            raise IndexCorrupt(
                f"vector index at {self.path} was built with {meta.get('model')} ({meta.get('dim')} dims), "
                f"not {self.model} ({self.dim} dims)"
            )
        graph = self.path / meta["file"]
        labels_file = self.path / (meta["file"] + ".labels.npz")
        try:
            if graph.stat().st_size != meta["size"]:
                raise IndexCorrupt(f"vector index file {graph} has the wrong size")
            self._hnsw.load_index(str(graph), max_elements=max(int(meta["capacity"]), 16))
            with np.load(labels_file) as z:
                labels, codes = z["labels"], z["codes"]
        except IndexCorrupt:
            raise
        except Exception as exc:  # hnswlib raises RuntimeError, numpy OSError/ValueError
            raise IndexCorrupt(f"vector index at {self.path} cannot be read: {exc}") from exc
        try:
            self._hold_saved(graph, labels)
        except IndexFailure as exc:
            raise IndexCorrupt(f"vector index at {self.path} cannot be read: {exc}") from exc
        self._groups = list(meta["groups"])
        self._group_code = {g: i for i, g in enumerate(self._groups)}
        for label, code in zip(labels.tolist(), codes.tolist(), strict=True):
            self._live.add(label)
            self._group_of[label] = code
            self._group_size[code] = self._group_size.get(code, 0) + 1
        if len(self._live) != meta["count"]:
            raise IndexCorrupt(
                f"vector index at {self.path} lists {len(self._live)} ids, its meta says {meta['count']}"
            )
        self.applied_seq = self.saved_seq = int(meta["applied_seq"])
        self._file = meta["file"]

    def _code(self, group: str) -> int:
        code = self._group_code.get(group)
        if code is None:
            code = self._group_code[group] = len(self._groups)
            self._groups.append(group)
        return code

    def _forget(self, label: int) -> None:
        code = self._group_of.pop(label)
        self._group_size[code] -= 1
        self._live.discard(label)
        row = self._row.pop(label)
        self._rows[row] = 0.0  # an erased text's vector leaves memory with it
        self._free.append(row)

    def _hold(self, labels: Sequence[int], vectors: np.ndarray) -> None:
        """Keep the vectors of these newly live labels in `_rows`, growing it by doubling."""
        short = len(labels) - len(self._free)
        if short > 0:
            have = len(self._rows)
            grown = np.zeros((max(have + short, 2 * have, 16), self.dim), dtype=np.float32)
            grown[:have] = self._rows
            self._rows = grown
            self._free.extend(range(len(grown) - 1, have - 1, -1))
        rows = [self._free.pop() for _ in labels]
        self._rows[rows] = vectors
        self._row.update(zip(labels, rows, strict=True))

    def _hold_saved(self, graph: Path, labels: np.ndarray) -> None:
        """Fill `_rows` with the live `labels`' vectors, read from the saved graph file `graph`
        (asking hnswlib for them one by one costs seconds at 100k)."""
        with open(graph, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            saved, vectors = self._elements(mm)
            at = {label: i for i, label in enumerate(saved.tolist())}
            picked = [at.get(label, -1) for label in labels.tolist()]
            held = vectors[picked].view(np.float32).reshape(len(picked), self.dim)  # a copy: mm can close
            del saved, vectors
        if -1 in picked:
            raise IndexFailure("a label listed live is not in the saved graph")
        self._hold(labels.tolist(), held)

    def apply(self, upserts: Sequence[Doc], deletes: Iterable[int], seq: int, *, scrub: Iterable[int] = ()) -> None:
        """Add or replace `upserts`, hide `deletes` from every later search, and note `seq`.

        Labels in `scrub` (erased content) also have their stored vector overwritten with noise,
        live or long deleted, so that neither memory nor the next saved file still holds it.
        """
        deletes = list(deletes)
        with self._lock:
            try:
                scrub = list(scrub)
                if scrub:
                    held = set(self._hnsw.get_ids_list())  # deleted labels included
                    for label in scrub:
                        if label in held:
                            self._scrub(label)
                for label in deletes:
                    if label in self._live:
                        self._hnsw.mark_deleted(label)
                        self._forget(label)
                docs = [d for d in upserts if d.vector is not None]
                if docs:
                    needed = self._hnsw.element_count + len(docs)
                    if needed > self._hnsw.get_max_elements():
                        self._hnsw.resize_index(max(needed, 2 * self._hnsw.get_max_elements()))
                    vectors = np.stack([np.asarray(d.vector, dtype=np.float32) for d in docs])
                    if vectors.shape[1] != self.dim:
                        raise IndexFailure(f"vector of {vectors.shape[1]} dims given to a {self.dim}-dim index")
                    # add_items on a deleted label replaces its vector and makes it visible again
                    self._hnsw.add_items(vectors, np.array([d.id for d in docs], dtype=np.uint64))
                    for d in docs:
                        if d.id in self._live:
                            self._forget(d.id)
                    self._hold([d.id for d in docs], vectors)
                    for d in docs:
                        code = self._code(d.project)
                        self._live.add(d.id)
                        self._group_of[d.id] = code
                        self._group_size[code] = self._group_size.get(code, 0) + 1
            except IndexFailure:
                raise
            except Exception as exc:
                raise IndexFailure(f"vector write failed: {exc}") from exc
            self.applied_seq = max(self.applied_seq, seq)
            self.unsaved += len(upserts) + len(deletes)

    def vectors_of(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The stored vectors of those `ids` that are in the index."""
        with self._lock:
            held = [i for i in ids if i in self._row]
            return dict(zip(held, self._rows[[self._row[i] for i in held]], strict=True)) if held else {}

    def _scrub(self, label: int) -> None:
        noise = np.random.default_rng(label).standard_normal(self.dim).astype(np.float32)
        noise /= np.linalg.norm(noise)
        if self._file:  # the saved graph still holds the vector: `erase_from_file` overwrites it there
            deleted = label not in self._live
            if deleted:
                self._hnsw.unmark_deleted(label)
            old = np.asarray(self._hnsw.get_items([label])[0], dtype=np.float32)
            if deleted:
                self._hnsw.mark_deleted(label)
            tail = np.array([label], dtype="<u8").tobytes()  # hnswlib keeps each label right after its vector
            self._erased[label] = (old.tobytes() + tail, noise.tobytes() + tail)
        # add_items on a held label overwrites its vector (and unmarks it); it is deleted again below
        self._hnsw.add_items(noise.reshape(1, -1), np.array([label], dtype=np.uint64))
        self._hnsw.mark_deleted(label)
        if label in self._live:
            self._forget(label)
        self.unsaved += 1

    def search(self, vector: np.ndarray, k: int, *, project: str | None = None) -> list[tuple[int, float]]:
        """Top `k` (id, cosine similarity), within one project when `project` is given."""
        with self._lock:
            if project is None:
                available, filt = len(self._live), None
            else:
                code = self._group_code.get(project)
                if code is None:
                    return []
                available = self._group_size.get(code, 0)
                group_of = self._group_of
                filt = None if available == len(self._live) else (lambda label: group_of.get(label) == code)
            k = min(k, available)
            if k <= 0:
                return []
            self._hnsw.set_ef(max(EF_SEARCH, 2 * k))
            q = np.asarray(vector, dtype=np.float32).reshape(1, -1)
            while k > 0:
                try:
                    labels, dists = self._hnsw.knn_query(q, k=k, filter=filt)
                    break
                except RuntimeError:  # a selective filter can leave fewer than k reachable
                    k //= 2
            else:
                return []
        return [(int(lbl), 1.0 - float(d)) for lbl, d in zip(labels[0], dists[0], strict=True)]

    def count(self) -> int:
        return len(self._live)

    def ids(self) -> set[int]:
        with self._lock:
            return set(self._live)

    def flush(self, *, force: bool = False) -> None:
        """Persist the graph, the live labels and the applied seq; the meta file is the commit point."""
        with self._lock:
            if not force and self.unsaved == 0:
                return
            try:
                self._save()
            except (OSError, RuntimeError) as exc:  # hnswlib reports write failures as RuntimeError
                raise IndexFailure(f"cannot save the vector index: {exc}") from exc

    def erase_from_file(self) -> int:
        """Overwrite scrubbed vectors in the saved graph file in place, without saving the whole
        graph (seconds at 100k) and without holding up writes meanwhile; returns how many were
        overwritten. A vector added after the last save is not in the file: nothing to do."""
        with self._lock:
            name, erased = self._file, dict(self._erased)
        if not erased or not name:
            return 0
        done = 0
        with self._file_lock:
            graph = self.path / name
            if graph.exists():
                with open(graph, "r+b") as f, mmap.mmap(f.fileno(), 0) as mm:
                    done = self._overwrite(mm, erased)
                    mm.flush()
                    os.fsync(f.fileno())
        with self._lock:
            if self._file == name:
                for label in erased:
                    self._erased.pop(label, None)
        return done

    def _overwrite(self, mm: mmap.mmap, erased: dict[int, tuple[bytes, bytes]]) -> int:
        """Find each label's element in hnswlib's saved layout (a 96-byte header, then one
        fixed-size element per vector: links, vector, label) and overwrite its vector, after
        checking that the bytes there are the ones to erase."""
        labels, _ = self._elements(mm)
        size, data_at = self._layout(mm)
        width = self.dim * 4
        done = 0
        for i in np.nonzero(np.isin(labels, np.array(list(erased), dtype="<u8")))[0]:
            old, noise = erased[int(labels[i])]
            start = 96 + i * size + data_at
            if mm[start : start + width + 8] == old:
                mm[start : start + width + 8] = noise
                done += 1
        return done

    def _layout(self, mm: mmap.mmap) -> tuple[int, int]:
        """The size of one element in a saved graph, and where its vector starts in it; raises
        IndexFailure unless the file is in the layout this code knows."""
        offset0, _capacity, count, size, label_at, data_at = (int(x) for x in np.frombuffer(mm, dtype="<u8", count=6))
        if offset0 != 0 or data_at + self.dim * 4 != label_at or label_at + 8 > size or 96 + count * size > len(mm):
            raise IndexFailure("the saved vector graph is not in the layout this agentmem knows")
        return size, data_at

    def _elements(self, mm: mmap.mmap) -> tuple[np.ndarray, np.ndarray]:
        """Every element of a saved graph: its labels, and its vectors' bytes (elements x dim*4)."""
        size, data_at = self._layout(mm)
        count = int(np.frombuffer(mm, dtype="<u8", count=3)[2])
        elements = np.frombuffer(mm, dtype=np.uint8, count=count * size, offset=96).reshape(count, size)
        labels = elements[:, data_at + self.dim * 4 : data_at + self.dim * 4 + 8].copy().view("<u8").ravel()
        return labels, elements[:, data_at : data_at + self.dim * 4]

    def _save(self) -> None:
        with self._lock, self._file_lock:
            name = f"vectors.{self.applied_seq}.{os.getpid()}.{self.unsaved}.bin"
            graph = self.path / name
            self._hnsw.save_index(str(graph))
            labels = np.fromiter(self._live, dtype=np.int64, count=len(self._live))
            codes = np.array([self._group_of[int(x)] for x in labels], dtype=np.int32)
            with open(self.path / (name + ".labels.npz"), "wb") as f:
                np.savez(f, labels=labels, codes=codes)
                f.flush()
                os.fsync(f.fileno())
            with open(graph, "rb+") as f:
                os.fsync(f.fileno())
            write_meta(
                self._meta_path,
                {
                    "schema_version": SCHEMA_VERSION,
                    "model": self.model,
                    "dim": self.dim,
                    "file": name,
                    "size": graph.stat().st_size,
                    "capacity": self._hnsw.get_max_elements(),
                    "count": len(self._live),
                    "groups": self._groups,
                    "applied_seq": self.applied_seq,
                },
            )
            for old in self.path.glob("vectors.*.bin*"):
                if not old.name.startswith(name):
                    old.unlink(missing_ok=True)
            self._file = name
            self._erased.clear()  # the new file was written from memory, where they are noise already
            self.saved_seq = self.applied_seq
            self.unsaved = 0
