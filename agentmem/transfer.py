"""Export and import as JSON Lines: every version, its embedding and every link; nothing lost."""

from __future__ import annotations

import sys
from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import datetime

import msgspec
import numpy as np
from tqdm import tqdm

from agentmem import validate
from agentmem.engine import Engine
from agentmem.errors import ConflictError, ValidationError
from agentmem.filters import Filter
from agentmem.kinds import KINDS, STATUSES, TIERS
from agentmem.records import Link, MemoryVersion
from agentmem.text import sha256

FORMAT = "agentmem-export"
FORMAT_VERSION = 1


class Header(msgspec.Struct, frozen=True, tag="header", tag_field="type"):
    format: str
    format_version: int
    schema_version: int
    model: str
    dim: int
    exported_at: datetime


class VersionLine(msgspec.Struct, frozen=True, tag="memory", tag_field="type"):
    memory: MemoryVersion
    embedding: list[float] | None = None


class LinkLine(msgspec.Struct, frozen=True, tag="link", tag_field="type"):
    link: Link


Line = Header | VersionLine | LinkLine
_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Line)


def export_lines(engine: Engine, projects: Sequence[str] | None = None) -> Iterator[bytes]:
    """JSON Lines for the store (or `projects`): a header, then versions by id, then their links."""
    store, model = engine.store, engine.model
    yield (
        _encoder.encode(
            Header(FORMAT, FORMAT_VERSION, store.schema_version, model, engine.embedder.dim, engine.clock())
        )
        + b"\n"
    )
    scope = Filter(projects=None if projects is None else tuple(projects))
    for v, vector in store.versions_with_vectors(scope, model):
        yield _encoder.encode(VersionLine(v, vector)) + b"\n"
    for link in store.links_from(scope):
        yield _encoder.encode(LinkLine(link)) + b"\n"


def _check(v: MemoryVersion, where: str, kinds: Collection[str]) -> None:
    if v.kind not in kinds or v.tier not in TIERS or v.status not in STATUSES:
        raise ValidationError(f"{where}: unknown kind, tier or status ({v.kind}, {v.tier}, {v.status})")
    if not v.content.strip() and v.status != "deleted":
        raise ValidationError(f"{where}: empty content")


def parse_lines(
    lines: Iterable[bytes | str], kinds: Collection[str] = KINDS
) -> tuple[Header | None, list[VersionLine], list[LinkLine]]:
    header: Header | None = None
    versions: list[VersionLine] = []
    links: list[LinkLine] = []
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            line = _decoder.decode(raw)
        except msgspec.DecodeError as exc:
            raise ValidationError(f"line {n}: {exc}") from None
        except RecursionError:
            raise ValidationError(f"line {n}: nested too deeply") from None
        if isinstance(line, Header):
            if line.format != FORMAT or line.format_version > FORMAT_VERSION:
                raise ValidationError(f"line {n}: not an {FORMAT} file of version <= {FORMAT_VERSION}")
            header = line
        elif isinstance(line, VersionLine):
            _check(line.memory, f"line {n}", kinds)
            versions.append(line)
        else:
            links.append(line)  # its kind was checked by the decoder
    return header, versions, links


def _check_graph(versions: list[VersionLine], links: list[LinkLine]) -> None:
    """Ids in range, unique, and every reference (lineage, parent, successor, link) inside the file
    and inside one project, so an import can never graft itself onto memories already stored."""
    by_id = {v.memory.id: v.memory for v in versions}
    if len(by_id) != len(versions):
        raise ValidationError("the file repeats a memory id")
    for m in by_id.values():
        for field in ("id", "lineage_id", "parent_id", "superseded_by"):
            ref = getattr(m, field)
            if ref is None:
                continue
            validate.memory_id(ref, f"memory {m.id}: {field}")
            if field != "id" and (ref not in by_id or by_id[ref].project != m.project):
                raise ValidationError(f"memory {m.id}: {field} {ref} is not a version of the same project in the file")
        for ref in m.source_ids:
            validate.memory_id(ref, f"memory {m.id}: source_ids")
    for ln in links:
        for ref in (ln.link.src_id, ln.link.dst_id):
            validate.memory_id(ref, "link")
        if ln.link.src_id not in by_id:
            raise ValidationError(f"link {ln.link.src_id} -> {ln.link.dst_id}: its source is not in the file")


def import_lines(engine: Engine, lines: Iterable[bytes | str], *, trust_embeddings: bool = True) -> int:
    """Load an export into the store in one transaction; ids must not be in use. Returns versions read.

    Content hashes are always recomputed. With `trust_embeddings=False` (imports from tokens that
    are not admins) the file's vectors are ignored and the content is embedded here, so nobody can
    plant a vector that another project's identical text would later reuse.
    """
    header, versions, links = parse_lines(lines, engine.config.kinds)
    _check_graph(versions, links)
    ids = [v.memory.id for v in versions]
    store, embedder = engine.store, engine.embedder
    use_file = trust_embeddings and header is not None and header.model == embedder.name and header.dim == embedder.dim
    inserted = [msgspec.structs.replace(v.memory, content_hash=sha256(v.memory.content)) for v in versions]
    vectors: dict[str, np.ndarray] = {}
    if use_file:
        for v, line in zip(inserted, versions, strict=True):
            if line.embedding is not None:
                vectors.setdefault(v.content_hash, np.asarray(line.embedding, dtype=np.float32))
    if any(vec.shape != (embedder.dim,) for vec in vectors.values()):
        raise ValidationError(f"embeddings in the file are not all {embedder.dim}-dimensional")
    stored = store.embedded(list({v.content_hash for v in inserted}), embedder.name)
    missing = {
        v.content_hash: v.content
        for v in inserted
        if v.status != "deleted" and v.content_hash not in vectors and v.content_hash not in stored
    }
    todo = list(missing.items())
    bar = tqdm(total=len(todo), desc="embed", unit="memory", disable=not sys.stderr.isatty(), leave=False)
    try:
        for start in range(0, len(todo), 256):
            chunk = todo[start : start + 256]
            vectors.update(zip([h for h, _ in chunk], engine.embed([c for _, c in chunk]), strict=True))
            bar.update(len(chunk))
    finally:
        bar.close()
    with engine.write() as w:
        if ids:
            taken = store.count(Filter(ids=tuple(ids)))
            if taken:
                raise ConflictError(
                    f"{taken} of the file's memory ids are already in this store: import into an empty data directory"
                )
        w.load(inserted, [ln.link for ln in links], vectors)
        store.reserve_ids_through(max(ids, default=0))
    return len(versions)
