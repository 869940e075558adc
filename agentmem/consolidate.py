"""Consolidation: observations become episodes, recurring evidence becomes semantic memories,
recurring steps become procedures, each linked to the evidence it came from.

Without a provider the same input gives the same output. The three passes:
docs/concepts/consolidation.md; their rules in full: docs/design/modules.md#consolidate.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Sequence
from typing import Literal

import msgspec
import numpy as np

from agentmem import validate, writes
from agentmem.audit import AuditEntry
from agentmem.claims import CLAIM
from agentmem.errors import NotFoundError, ProviderError, ValidationError
from agentmem.filters import Filter
from agentmem.operations import ConsolidateRequest, EndSessionRequest
from agentmem.ports import Port
from agentmem.records import MemoryVersion, NewMemory, RememberResult
from agentmem.retention import reinforced, reinforcement
from agentmem.supersede import NEVER_SUPERSEDED
from agentmem.text import normalise

PASSES = ("episodic", "semantic", "procedural")
EPISODE_PREFIX = "session:"
PROCEDURE_PREFIX = "procedure:"
RAW = Filter(tiers=("working",), kinds=("observation", "event"), exclude_deleted=True)  # raw observations
_FILE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.(?:py|pyi|js|jsx|ts|tsx|go|rs|java|kt|rb|c|h|cc|cpp|hpp|cs|"
                   r"php|sh|sql|md|rst|txt|toml|yaml|yml|json|ini|cfg|html|css))(?![\w/])")  # fmt: skip
_STOP = frozenset(
    "about after again also been before being between both could does doing done during each from have having "
    "into just more most only other over same should some such than that their them then there these they this "
    "those through under until very were what when where which while will with would your".split()
)


class PassCounts(msgspec.Struct, kw_only=True):
    created: int = 0
    reinforced: int = 0  # semantic: reinforced; episodic and procedural: a new version
    unchanged: int = 0
    skipped: int = 0  # semantic: clusters with too few sessions
    failed: int = 0  # the provider gave no usable text
    children_archived: int = 0


class ConsolidationReport(msgspec.Struct, kw_only=True):
    """What one run did in one project; also recorded in the audit log."""

    project: str
    episodic: PassCounts
    semantic: PassCounts
    procedural: PassCounts
    memory_ids: list[int]  # memories created or renewed by this run
    took_ms: float = 0.0


class EpisodeResult(msgspec.Struct, frozen=True, kw_only=True):
    outcome: Literal["created", "updated", "unchanged", "failed"]
    memory: MemoryVersion | None


# -- the run ---------------------------------------------------------------------------


def run(port: Port, request: ConsolidateRequest, *, actor: str = "local") -> list[ConsolidationReport]:
    """Run the passes over each project (default: every project with current memories)."""
    projects, passes = request.projects, request.passes
    for p in passes:
        if p not in PASSES:
            raise ValidationError(f"unknown pass {p!r}: choose from {', '.join(PASSES)}")
    if projects is None:
        projects = sorted({m.project for m in port.live.values()})
    reports = []
    for project in projects:
        started = time.perf_counter()
        report = ConsolidationReport(
            project=project, episodic=PassCounts(), semantic=PassCounts(), procedural=PassCounts(), memory_ids=[]
        )
        if "episodic" in passes:
            for session in _open_sessions(port, project):
                result = episode(port, project, session, actor=actor)
                _count(report.episodic, result.outcome, report.memory_ids, result.memory)
        if "semantic" in passes:
            _semantic(port, project, report, actor)
        if "procedural" in passes:
            _procedural(port, project, report, actor)
        report.took_ms = round((time.perf_counter() - started) * 1000, 3)
        counts = {p: msgspec.to_builtins(getattr(report, p)) for p in passes}
        entry = AuditEntry(
            created_at=port.clock(),
            action="consolidate",
            actor=actor,
            project=project,
            affected=len(report.memory_ids),
            details={**counts, "memory_ids": report.memory_ids[:1000]},
        )
        port.record([entry])
        reports.append(report)
    return reports


def _count(counts: PassCounts, outcome: str, ids: list[int], m: MemoryVersion | None) -> None:
    if outcome == "created":
        counts.created += 1
    elif outcome in ("updated", "reinforced"):
        counts.reinforced += 1
    elif outcome == "failed":
        counts.failed += 1
    else:
        counts.unchanged += 1
    if m is not None and outcome in ("created", "updated", "reinforced"):
        ids.append(m.id)


# -- episodic --------------------------------------------------------------------------


def _open_sessions(port: Port, project: str) -> list[str]:
    """Sessions with raw observations no current episode covers yet."""
    return port.store.sessions_not_derived_into(RAW.narrow(projects=(project,)), "episodic")


def _current_episode(port: Port, project: str, session: str) -> MemoryVersion | None:
    episodes = Filter(projects=(project,), source_ref=EPISODE_PREFIX + session, tiers=("episodic",),
                      source="consolidation", current_only=True)  # fmt: skip
    found = port.store.versions(episodes, order="-id", limit=1)
    return found[0] if found else None


def end_session(port: Port, session: str, request: EndSessionRequest, *, actor: str = "local") -> EpisodeResult:
    """The end_session operation: the session's observations become its episodic memory."""
    session = validate.name(session, "session", port.config, required=True)  # type: ignore[assignment]
    project = validate.name(request.project, "project", port.config, required=True)
    return episode(port, project, session, actor=actor)  # type: ignore[arg-type]


def episode(port: Port, project: str, session: str, *, actor: str = "local") -> EpisodeResult:
    """Turn one session's observations into its episodic memory (or a new version of it)."""
    observed = port.store.versions(RAW.narrow(projects=(project,), session=session), order="valid_from")
    if not observed:
        raise NotFoundError(f"no observations for session {session!r} in project {project!r}")
    ids = [o.id for o in observed]
    existing = _current_episode(port, project, session)
    if existing is not None and sorted(existing.source_ids) == sorted(ids):
        return EpisodeResult(outcome="unchanged", memory=existing)
    try:
        text = _episode_text(port, session, observed)
    except ProviderError:
        return EpisodeResult(outcome="failed", memory=None)
    if existing is not None:
        result = writes.new_version(
            port, existing.id, text, reason="new observations", actor=actor, changes={"source_ids": ids}
        )
        return EpisodeResult(outcome="updated", memory=result.memory)
    result = _remember(
        port,
        NewMemory(
            content=text,
            project=project,
            kind="event",
            tier="episodic",
            title=f"Session {session}",
            session=session,
            source="consolidation",
            source_ref=EPISODE_PREFIX + session,
            source_ids=ids,
            salience=max(o.salience for o in observed),
            valid_from=observed[0].valid_from,
        ),
        actor=actor,
    )
    return EpisodeResult(outcome="created", memory=result.memory)


def _episode_text(port: Port, session: str, observed: list[MemoryVersion]) -> str:
    texts = [o.content for o in observed]
    if port.provider is not None:
        return port.provider.write("Summarise what happened in this work session, in order.", texts)
    start, end = observed[0].valid_from, observed[-1].valid_from
    same_day = start.date() == end.date()
    span = f"{start:%Y-%m-%d %H:%M} to {end:%H:%M}" if same_day else f"{start:%Y-%m-%d} to {end:%Y-%m-%d}"
    parts = [f"Session {session}, {span}, {len(observed)} observation{'s' if len(observed) != 1 else ''}."]
    concepts = _concepts(texts)
    if concepts:
        parts.append("Concepts: " + ", ".join(concepts) + ".")
    files = list(dict.fromkeys(f for t in texts for f in _FILE.findall(t)))[:8]
    if files:
        parts.append("Files: " + ", ".join(files) + ".")
    tools = list(dict.fromkeys(o.title for o in observed if o.title))[:8]
    if tools:
        parts.append("Tools: " + ", ".join(tools) + ".")
    central = _central(port, observed, 3)
    parts.append("Highlights: " + "; ".join(_clip(o.content) for o in central) + ".")
    return " ".join(parts)


def _concepts(texts: Sequence[str], n: int = 8) -> list[str]:
    """The words most sessions' observations share: by how many observations use them, then alphabetically."""
    df: Counter[str] = Counter()
    for t in texts:
        df.update({w for w in re.findall(r"[a-z][a-z0-9_+-]{3,}", t.lower()) if w not in _STOP})
    ranked = sorted(df.items(), key=lambda kv: (-kv[1], kv[0]))
    return [w for w, c in ranked if c > 1 or len(texts) == 1][:n]


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split()).rstrip(".")
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _central(port: Port, versions: list[MemoryVersion], n: int) -> list[MemoryVersion]:
    """The `n` versions closest on average to all the others, in their original order."""
    if len(versions) <= n:
        return versions
    matrix = _matrix(port, versions)
    score = (matrix @ matrix.T).mean(axis=1)
    best = sorted(range(len(versions)), key=lambda i: (-round(float(score[i]), 6), versions[i].id))[:n]
    return [versions[i] for i in sorted(best)]


def _matrix(port: Port, versions: Sequence[MemoryVersion]) -> np.ndarray:
    found: dict[str, np.ndarray] = {}
    for project in sorted({v.project for v in versions}):  # each project's own vectors (one shard each)
        mine = [v.content_hash for v in versions if v.project == project]
        found.update(port.store.vectors(mine, port.serving.model, project=project))
    missing = [v for v in versions if v.content_hash not in found]
    if missing:  # stored with every version; a gap means a model change not yet back-filled
        vectors = port.serving.embed([v.content for v in missing])
        found.update({v.content_hash: vec for v, vec in zip(missing, vectors, strict=True)})
    return np.stack([found[v.content_hash] for v in versions]).astype(np.float32)


# -- semantic --------------------------------------------------------------------------


def _is_abstraction(m: MemoryVersion) -> bool:
    return m.tier == "semantic" and m.source == "consolidation"


def _semantic(port: Port, project: str, report: ConsolidationReport, actor: str) -> None:
    cfg = port.config.consolidation
    pool = [
        m
        for m in port.live.values([project])
        if (_is_abstraction(m) or m.tier in ("working", "episodic") or m.kind == "observation")
    ]
    pool.sort(key=lambda m: m.id)
    pool = pool[-cfg.max_pool :]
    if len(pool) < 2:
        return
    matrix = _matrix(port, pool)
    for cluster in _clusters(pool, matrix, cfg.similarity):
        members = [pool[i] for i in cluster]
        abstractions = [m for m in members if _is_abstraction(m)]
        evidence = [m for m in members if not _is_abstraction(m)]
        if not evidence:
            continue
        target = min(abstractions, key=lambda m: m.id) if abstractions else None
        linked = port.store.derived_from(target.id) if target else []
        sessions = {m.session for m in evidence + linked if m.session}
        if len(sessions) < cfg.min_sessions:
            report.semantic.skipped += 1
            continue
        if target is not None:  # its evidence is still current and agrees: a confirmation
            target = _reinforce(port, target, evidence, actor)
            _count(report.semantic, "reinforced", report.memory_ids, target)
        else:
            sub = matrix[cluster]
            try:
                text = _semantic_text(port, evidence, sub)
            except ProviderError:
                report.semantic.failed += 1
                continue
            result = _remember(
                port,
                NewMemory(
                    content=text,
                    project=project,
                    kind=_kind_of(evidence),
                    tier="semantic",
                    source="consolidation",
                    source_ids=sorted(m.id for m in evidence),
                    salience=max(m.salience for m in evidence),
                ),
                actor=actor,
            )
            target = result.memory
            if result.outcome == "reinforced":  # the same words were already a memory: it gains the evidence
                target = _reinforce(port, target, evidence, actor, already=True)
            _count(report.semantic, "created" if result.outcome != "reinforced" else "reinforced",
                   report.memory_ids, target)  # fmt: skip
        if target.reinforcements >= cfg.archive_after:
            report.semantic.children_archived += _archive_children(port, target, actor)


def _clusters(pool: list[MemoryVersion], matrix: np.ndarray, similarity: float) -> list[list[int]]:
    """Single-link clusters of pool indexes joined at cosine >= similarity, kept apart when both
    have triples with different subjects; each sorted, in order of their first member."""
    parent = list(range(len(pool)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    subjects = [normalise(m.triple.subject) if m.triple else None for m in pool]
    block = 1024
    for start in range(0, len(pool), block):
        sims = matrix[start : start + block] @ matrix.T
        rows, cols = np.nonzero(sims >= similarity)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            i = start + r
            if c <= i:
                continue
            if subjects[i] and subjects[c] and subjects[i] != subjects[c]:
                continue
            a, b = find(i), find(c)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(len(pool)):
        groups.setdefault(find(i), []).append(i)
    return [g for _, g in sorted(groups.items()) if len(g) > 1]


def _semantic_text(port: Port, evidence: list[MemoryVersion], matrix: np.ndarray) -> str:
    """The provider's wording, or the medoid: the evidence closest on average to the rest (rows of `matrix`)."""
    if port.provider is not None:
        ordered = sorted(evidence, key=lambda m: (m.valid_from, m.content))
        return port.provider.write("State the one fact or pattern all of these pieces of evidence support.",
                                  [m.content for m in ordered])  # fmt: skip
    score = (matrix @ matrix.T).mean(axis=1)
    medoid = min(range(len(evidence)), key=lambda i: (-round(float(score[i]), 6), evidence[i].id))
    return evidence[medoid].content


def _kind_of(evidence: list[MemoryVersion]) -> str:
    kinds = Counter(m.kind for m in evidence if m.kind not in NEVER_SUPERSEDED)
    return min(kinds.items(), key=lambda kv: (-kv[1], kv[0]))[0] if kinds else "fact"


def _remember(port: Port, new: NewMemory, actor: str) -> RememberResult:
    return writes.remember(port, writes.prepared(port, new, {}), actor=actor)


def _reinforce(
    port: Port, target: MemoryVersion, evidence: list[MemoryVersion], actor: str, *, already: bool = False
) -> MemoryVersion:
    """Reinforce an abstraction with new evidence and link it (`already`: remember() reinforced it)."""
    with port.write() as w:
        current = w.get(target.id) or port.get(target.id)
        if not already:
            current = w.update(current, **reinforcement(current, w.now))
        have = {x.id for x in port.store.derived_from(current.id)}
        for m in evidence:
            if m.id not in have:
                w.link(current.id, m.id)
    return current


def _archive_children(port: Port, target: MemoryVersion, actor: str) -> int:
    with port.write() as w:
        children = [c for m in port.store.derived_from(target.id) if (c := w.get(m.id)) is not None and not c.pinned]
        if not children:
            return 0
        reason = f"consolidated into memory {target.id}"
        gone = {m.id for m in children}
        # the claims said only in these children go with them (agentmem.claims): the abstraction stands for them too
        said = [c for cs in port.store.built_on_each(sorted(gone)).values() for c in cs]
        claims = {c.id: c for x in said if (c := w.get(x.id)) is not None and c.kind == CLAIM and not c.pinned}
        claims = {i: c for i, c in claims.items() if all(e.id in gone or w.get(e.id) is None
                                                        for e in port.store.derived_from(i))}  # fmt: skip
        victims = children + list(claims.values())
        w.retire([(m, "archived", "consolidated") for m in victims])
        w.audit([AuditEntry.of(m, "archive", actor, w.now, reason, into=target.id) for m in victims])
    return len(children)


# -- procedural ------------------------------------------------------------------------


def _procedural(port: Port, project: str, report: ConsolidationReport, actor: str) -> None:
    cfg = port.config.consolidation
    runs: dict[str, list[tuple[str, int]]] = {}
    for m in port.store.versions(RAW.narrow(projects=(project,)), order="session"):
        if m.session is None or m.title is None:  # not a step of a session
            continue
        step = " ".join(m.title.lower().split())
        seq = runs.setdefault(m.session, [])
        if not seq or seq[-1][0] != step:  # a step repeated at once is one step
            seq.append((step, m.id))
    support: dict[tuple[str, ...], dict[str, list[int]]] = {}
    for session, seq in runs.items():
        steps = [s for s, _ in seq]
        for n in range(cfg.min_steps, min(cfg.max_steps, len(steps)) + 1):
            for i in range(len(steps) - n + 1):
                gram = tuple(steps[i : i + n])
                if len(set(gram)) < 2:
                    continue
                support.setdefault(gram, {}).setdefault(session, [mid for _, mid in seq[i : i + n]])
    frequent = {g: s for g, s in support.items() if len(s) >= cfg.min_sessions}
    maximal = [
        g
        for g in frequent
        if not any(len(h) > len(g) and _contains(h, g) and len(frequent[h]) == len(frequent[g]) for h in frequent)
    ]
    for gram in sorted(maximal):
        sessions = frequent[gram]
        key = PROCEDURE_PREFIX + " > ".join(gram)
        text = (
            f"Procedure, when {gram[0]}: "
            + "; ".join(f"{n}. {step}" for n, step in enumerate(gram, 1))
            + f" (seen in {len(sessions)} sessions)."
        )
        existing = port.live.by_key(project, key)
        if existing is not None and existing.content == text:
            report.procedural.unchanged += 1
            continue
        evidence = sorted({i for ids in sessions.values() for i in ids})[:200]
        confidence = None
        if existing is not None:
            confidence = reinforced(existing.confidence)
        result = _remember(
            port,
            NewMemory(
                content=text,
                project=project,
                kind="procedure",
                tier="procedural",
                title=f"when {gram[0]}",
                key=key,
                source="consolidation",
                source_ids=evidence,
                salience=0.6,
                confidence=confidence,
            ),
            actor=actor,
        )
        _count(report.procedural, "created" if existing is None else "reinforced", report.memory_ids, result.memory)


def _contains(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    n = len(shorter)
    return any(longer[i : i + n] == shorter for i in range(len(longer) - n + 1))


# -- provenance ------------------------------------------------------------------------


class Provenance(msgspec.Struct, frozen=True, kw_only=True):
    """Where a memory came from (its evidence and their sessions) and what was built on it."""

    memory_id: int
    evidence: list[MemoryVersion]
    sessions: list[str]
    derived: list[MemoryVersion]


def provenance(port: Port, memory_id: int) -> Provenance:
    m = port.get(memory_id)
    evidence = port.store.derived_from(m.id)
    derived = port.store.built_on(m.id)
    return Provenance(
        memory_id=m.id,
        evidence=evidence,
        sessions=sorted({e.session for e in evidence if e.session}),
        derived=derived,
    )
