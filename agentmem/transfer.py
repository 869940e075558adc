"""Export and import as JSON Lines: every version, its embedding, every link and the audit log; nothing lost."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from datetime import datetime

import msgspec
import numpy as np
from tqdm import tqdm

from agentmem import validate
from agentmem.audit import AuditEntry
from agentmem.config import Config
from agentmem.errors import ConflictError, ValidationError
from agentmem.filters import Filter
from agentmem.operations import ScopeRequest
from agentmem.ports import Port
from agentmem.records import Link, MemoryVersion
from agentmem.serving import gated
from agentmem.supersede import NEVER_SUPERSEDED
from agentmem.text import sha256, slot_of
from agentmem.validate import MAX_ID

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


class AuditLine(msgspec.Struct, frozen=True, tag="audit", tag_field="type"):
    entry: AuditEntry


Line = Header | VersionLine | LinkLine | AuditLine
_encoder = msgspec.json.Encoder()


# What an import reads: the same lines, decoded strictly, and a field this agentmem does not know
# is refused rather than dropped (a file from a newer agentmem, or a hand-made one).
class _VersionIn(MemoryVersion, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class _LinkIn(Link, frozen=True, forbid_unknown_fields=True):
    pass


class _AuditIn(AuditEntry, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class _AuditLine(AuditLine, frozen=True, forbid_unknown_fields=True):
    entry: _AuditIn


class _HeaderLine(Header, frozen=True, forbid_unknown_fields=True):
    pass


class _VersionLine(VersionLine, frozen=True, forbid_unknown_fields=True):
    memory: _VersionIn


class _LinkLine(LinkLine, frozen=True, forbid_unknown_fields=True):
    link: _LinkIn


_decoder = msgspec.json.Decoder(_HeaderLine | _VersionLine | _LinkLine | _AuditLine)
MAX_IMPORT_ID = MAX_ID // 2  # an import may not use up the id space: the upper half stays for new memories


def export_lines(port: Port, request: ScopeRequest) -> Iterator[bytes]:
    """JSON Lines for the store (or its `projects`): a header, then versions by id, then their links,
    then the audit log, oldest entry first (with `projects`, their entries only)."""
    store, model, projects = port.store, port.serving.model, request.projects
    yield (
        _encoder.encode(
            Header(FORMAT, FORMAT_VERSION, store.schema_version, model, port.serving.embedder.dim, port.clock())
        )
        + b"\n"
    )
    scope = Filter(projects=None if projects is None else tuple(projects))
    for v, vector in store.versions_with_vectors(scope, model):
        yield _encoder.encode(VersionLine(v, vector)) + b"\n"
    for link in store.links_from(scope):
        yield _encoder.encode(LinkLine(link)) + b"\n"
    entries: list[AuditEntry] = []
    cursor: int | None = None
    while True:  # pages come newest first
        page, cursor = store.audit_page(projects=projects, before_id=cursor, limit=1000)
        entries.extend(page)
        if cursor is None:
            break
    for entry in reversed(entries):
        yield _encoder.encode(AuditLine(entry)) + b"\n"


def _plain(v: MemoryVersion) -> MemoryVersion:
    return MemoryVersion(**msgspec.structs.asdict(v))


def parse_lines(
    lines: Iterable[bytes | str], config: Config, audit: list[AuditEntry] | None = None
) -> tuple[Header | None, list[VersionLine], list[LinkLine]]:
    """The lines of an export, each version checked as `remember` checks a new memory
    (`agentmem.validate.version`); ValidationError naming the line. Audit entries go to `audit`."""
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
            try:
                checked = validate.version(_plain(line.memory), config)
            except ValidationError as exc:
                raise ValidationError(f"line {n}: memory {line.memory.id}: {exc}") from None
            versions.append(VersionLine(checked, line.embedding))
        elif isinstance(line, AuditLine):
            if audit is not None:
                audit.append(AuditEntry(**msgspec.structs.asdict(line.entry)))
        else:
            links.append(LinkLine(Link(*msgspec.structs.astuple(line.link))))  # its kind was checked by the decoder
    return header, versions, links


def _check_graph(versions: list[VersionLine], links: list[LinkLine], now: datetime) -> None:
    """Ids in range and unique; every reference (lineage, parent, successor, source, link) inside
    the file and inside one project, so an import can never graft itself onto memories already
    stored; each lineage whole (versions 1..n, each replacing the one before, exactly one latest);
    and at most one current memory per key and per triple slot."""
    by_id = {v.memory.id: v.memory for v in versions}
    if len(by_id) != len(versions):
        raise ValidationError("the file repeats a memory id")
    for m in by_id.values():
        if m.id > MAX_IMPORT_ID:
            raise ValidationError(f"memory {m.id}: an import's ids go up to 2**52, so that new ids stay in range")
        refs = [(f, getattr(m, f)) for f in ("lineage_id", "parent_id", "superseded_by")]
        for field, ref in refs + [("source_ids", i) for i in m.source_ids]:
            if ref is not None and (ref not in by_id or by_id[ref].project != m.project):
                raise ValidationError(f"memory {m.id}: {field} {ref} is not a version of the same project in the file")
    for ln in links:
        src, dst = by_id.get(ln.link.src_id), by_id.get(ln.link.dst_id)
        if src is None or dst is None or src.project != dst.project:
            raise ValidationError(
                f"link {ln.link.src_id} -> {ln.link.dst_id}: not two versions of one project in the file"
            )
    lineages: dict[int, list[MemoryVersion]] = {}
    for m in by_id.values():
        lineages.setdefault(m.lineage_id, []).append(m)
    for lineage_id, chain in lineages.items():
        _check_lineage(lineage_id, sorted(chain, key=lambda m: m.version))
    held: dict[tuple[str, str, str], int] = {}
    for m in by_id.values():
        if not m.is_latest or m.status != "active" or m.kind in NEVER_SUPERSEDED:
            continue
        if m.expires_at is not None and m.expires_at <= now:
            continue  # an expired memory holds nothing
        slots = [("key", m.key)] if m.key is not None else []
        if m.triple is not None:
            slots.append(("triple slot", slot_of(m.triple.subject, m.triple.predicate)))
        for what, value in slots:
            other = held.setdefault((m.project, what, value), m.id)
            if other != m.id:
                raise ValidationError(f"memories {other} and {m.id} are both current for the {what} {value!r}")


def _check_lineage(lineage_id: int, chain: list[MemoryVersion]) -> None:
    """Versions 1..n, each replacing the one before it; only the last is latest, and each older one
    names its successor."""
    where = f"lineage {lineage_id}"
    if [m.version for m in chain] != list(range(1, len(chain) + 1)):
        raise ValidationError(f"{where}: versions {[m.version for m in chain]} are not 1, 2, ... without gaps")
    if chain[0].id != lineage_id:
        raise ValidationError(f"{where}: its first version is memory {chain[0].id}, not {lineage_id}")
    for before, m in zip([None, *chain], chain, strict=False):
        if m.parent_id != (before.id if before else None):
            raise ValidationError(f"{where}: memory {m.id} (version {m.version}) has parent_id {m.parent_id}")
    *older, last = chain
    if not last.is_latest or any(m.is_latest for m in older):
        raise ValidationError(f"{where}: exactly one version, the last, must be latest")
    for m, after in zip(older, chain[1:], strict=True):
        if m.status == "active" or m.superseded_by != after.id:
            raise ValidationError(
                f"{where}: memory {m.id} was replaced by {after.id}, so it is not active and names it as superseded_by"
            )


@gated
def import_lines(port: Port, lines: Iterable[bytes | str], *, trusted: bool = True, importer: str | None = None) -> int:
    """Load an export into the store in one transaction; ids must not be in use. Returns versions read.

    Content hashes are always recomputed. Only a `trusted` import (the store's owner, or an admin
    token of every project) keeps the file's vectors and its audit entries of no single project;
    any other has its content embedded here, so nobody can plant the vector a text is searched by.
    With `importer` (the token's name), each audit entry of the file is written as that importer's,
    marked as imported, its own actor kept in `details` (see `_check_audit`).
    """
    audit: list[AuditEntry] = []
    header, versions, links = parse_lines(lines, port.config, audit)
    _check_graph(versions, links, port.clock())
    entries = _check_audit(audit, versions, port.config, trusted=trusted, importer=importer)
    ids = [v.memory.id for v in versions]
    store, embedder = port.store, port.serving.embedder
    use_file = trusted and header is not None and header.model == embedder.name and header.dim == embedder.dim
    inserted = [  # a tombstone keeps no hash (as a governance delete leaves it)
        msgspec.structs.replace(v.memory, content_hash=sha256(v.memory.content) if v.memory.status != "deleted" else "")
        for v in versions
    ]
    vectors: dict[str, np.ndarray] = {}
    if use_file:
        for v, line in zip(inserted, versions, strict=True):
            if line.embedding is not None:
                vectors.setdefault(v.content_hash, _vector(v.id, line.embedding, embedder.dim))
    for project in sorted({v.project for v in inserted}):  # each project's own stored vectors only
        held = port.serving.held_vectors(project, [v.content_hash for v in inserted if v.project == project])
        vectors.update((h, vec) for h, vec in held.items() if h not in vectors)
    missing = {v.content_hash: v.content for v in inserted if v.status != "deleted" and v.content_hash not in vectors}
    todo = list(missing.items())
    bar = tqdm(total=len(todo), desc="embed", unit="memory", disable=not sys.stderr.isatty(), leave=False)
    try:
        for start in range(0, len(todo), 256):
            chunk = todo[start : start + 256]
            vectors.update(zip([h for h, _ in chunk], port.serving.embed([c for _, c in chunk]), strict=True))
            bar.update(len(chunk))
    finally:
        bar.close()
    with port.write() as w:
        if ids:
            taken = store.claim_ids(w.session, ids)  # in the import's transaction on a shared store
            if taken:
                raise ConflictError(
                    f"{taken} of the file's memory ids are already in this store: import into an empty data directory"
                )
            store.loading(w.session, sum(v.is_latest and v.status == "active" for v in inserted))
        w.load(inserted, [ln.link for ln in links], vectors)
        w.audit(entries)
        store.reserve_ids_through(max(ids, default=0))
    store.loaded()
    return len(versions)


def _vector(memory_id: int, values: list[float], dim: int) -> np.ndarray:
    """A file's embedding as stored: `dim` float32 numbers, each finite (1e300 is not)."""
    with np.errstate(over="ignore"):
        vec = np.asarray(values, dtype=np.float32)
    if vec.shape != (dim,):
        raise ValidationError(f"memory {memory_id}: its embedding is not {dim}-dimensional")
    if not np.isfinite(vec).all():
        raise ValidationError(f"memory {memory_id}: its embedding holds a number that is not finite in float32")
    return vec


def _check_audit(
    entries: list[AuditEntry], versions: list[VersionLine], config: Config, *, trusted: bool, importer: str | None
) -> list[AuditEntry]:
    """The file's audit entries as they are written: each of a project of the file (one that
    spans projects only in a trusted import), its memory and lineage ids among the file's. They
    get new ids of this store, in the file's order. With `importer`, each is the importer's:
    `actor` is the importer, and `details` say it was imported and who the file named."""
    projects = {v.memory.project for v in versions}
    ids = {v.memory.id for v in versions}
    out = []
    for e in entries:
        where = f"audit entry {e.id}"
        if e.project is None and not trusted:
            raise ValidationError(f"{where}: an entry of no single project is imported by an admin only")
        if e.project is not None and e.project not in projects:
            raise ValidationError(f"{where}: project {e.project!r} has no memory in the file")
        for field, ref in (("memory_id", e.memory_id), ("lineage_id", e.lineage_id)):
            if ref is not None and ref not in ids:
                raise ValidationError(f"{where}: {field} {ref} is not a memory in the file")
        validate.name(e.action, "action", config, required=True)
        validate.name(e.actor, "actor", config, required=True)
        validate.utc(e.created_at, "created_at")
        if isinstance(e.affected, bool) or not 0 <= e.affected <= validate.MAX_COUNT:
            raise ValidationError(f"{where}: affected {e.affected!r} is out of range")
        if importer is not None:
            e = msgspec.structs.replace(
                e, actor=importer, details={**e.details, "imported": True, "imported_actor": e.actor}
            )
        out.append(e)
    return [msgspec.structs.replace(e, id=0) for e in sorted(out, key=lambda e: e.id)]
