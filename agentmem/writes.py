"""Remember, revise and observe: each one prepared outside the writer (validation, embedding),
then decided and applied as a job of the next group commit.

A job decides against its unit (`agentmem.unit.Write`), so it sees every acknowledged write
and every earlier write of its own batch: the current memories by key, slot and content, the
candidates text and vector search find, the versions still waiting for a BM25 commit, and
the versions its batch inserted before it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import msgspec
import numpy as np

from agentmem import adjudicate, claims, validate
from agentmem.audit import AuditEntry
from agentmem.currentness import pair
from agentmem.errors import ConflictError, ValidationError
from agentmem.filters import Filter
from agentmem.operations import ReviseRequest
from agentmem.ports import Port
from agentmem.records import MemoryVersion, NewMemory, RememberResult
from agentmem.retention import reinforcement
from agentmem.serving import gated
from agentmem.supersede import NEVER_SUPERSEDED, NEW_ANSWER, Decision, decide
from agentmem.text import jaccard, sha256, slot_of, token_set
from agentmem.unit import Write


def prepared(port: Port, item: NewMemory | str | None, fields: dict[str, Any]) -> NewMemory:
    """A checked NewMemory from either a NewMemory or its fields as keywords."""
    new = validate.new_memory(validate.as_new_memory(item, fields), port.config, port.clock())
    return _sources_known(port, new)


def _sources_known(port: Port, new: NewMemory) -> NewMemory:
    """`new`, if each of its source_ids is a version stored in its own project (its evidence)."""
    wanted = set(new.source_ids)
    if wanted:
        found = set(port.store.ids(Filter(ids=tuple(wanted), projects=(new.project or "",))))
        if wanted - found:
            raise ValidationError(
                f"source_ids: {', '.join(map(str, sorted(wanted - found)))} not memories of project {new.project!r}"
            )
    return new


@gated
def remember(port: Port, new: NewMemory, *, actor: str) -> RememberResult:
    """Create, reinforce or supersede (see `agentmem.supersede`), in the next group commit.

    With an adjudicating provider, a job that finds pairs the rules leave undecided writes
    nothing and hands them back; the model is asked here, outside the writer, and a second job
    decides again and applies its rulings (`agentmem.adjudicate`)."""
    content_hash = sha256(new.content)
    vector, stored = port.serving.vector_for(new.project or "", new.content, content_hash)
    judge = port.provider if port.provider is not None and port.provider.config.adjudicate else None
    asked: list[tuple[adjudicate.Pending, list[adjudicate.Verdict]]] = []

    def job(w: Write) -> RememberResult | adjudicate.Pending:
        decision, candidates = _decide(port, w, new, vector)
        if judge is not None:
            when = new.valid_from or w.now
            older = adjudicate.undecided(new, decision, candidates, when, port.config.slot_query_words)
            if older and not asked:
                return adjudicate.Pending(new.content, when, older)  # nothing written yet
            if older:
                pending, verdicts = asked[0]
                decision = adjudicate.settle(decision, pending, verdicts, older, new.content)
        w.embedding(content_hash, vector, stored=stored)
        return apply(port, w, new, content_hash, actor, decision)

    done = port.run(job)
    if isinstance(done, RememberResult):
        return done
    assert judge is not None
    asked.append((done, adjudicate.rule(judge, done)))
    again = port.run(job)
    assert isinstance(again, RememberResult)
    return again


def apply(port: Port, w: Write, new: NewMemory, content_hash: str, actor: str, decision: Decision) -> RememberResult:
    """Apply `decision` (taken against this unit) for `new` to the unit."""
    if decision.outcome == "reinforced":
        assert decision.target is not None
        # said again with a TTL: the expiry runs anew from now
        renewed: dict[str, Any] = {} if new.expires_at is None else {"expires_at": new.expires_at}
        refreshed = w.update(decision.target, **reinforcement(decision.target, w.now), **renewed)
        return RememberResult(
            outcome="reinforced",
            memory=refreshed,
            reason=decision.reason,
            similarity=decision.similarity,
            near_duplicates=decision.near,
        )
    old = decision.target if decision.outcome == "superseded" else None
    version = w.insert(new, content_hash=content_hash, replaces=old)
    if old is not None:
        gone = [(old, decision.reason, decision.similarity)] + [(m, NEW_ANSWER, sim) for m, sim in decision.also]
        for m, reason, sim in gone:
            w.supersede(m, version, reason, sim)
        w.audit(
            [
                AuditEntry.of(m, "supersede", actor, w.now, reason, by=version.id, similarity=sim)
                for m, reason, sim in gone
            ]
        )
    return RememberResult(
        outcome=decision.outcome,
        memory=version,
        superseded_id=old.id if old else None,
        also_superseded=[m.id for m, _ in decision.also] if old else [],
        reason=decision.reason if old else None,
        similarity=decision.similarity if old else None,
        near_duplicates=decision.near,
    )


def _decide(port: Port, w: Write, new: NewMemory, vector: np.ndarray) -> tuple[Decision, list[MemoryVersion]]:
    """Gather the current memories the rules look at (by key, by slot, by content, by vector),
    and decide; the decision and the search candidates.

    An expired memory no longer counts: it is neither reinforced nor superseded.
    """
    project, now = new.project or "", w.now

    def alive(m: MemoryVersion | None) -> MemoryVersion | None:
        return m if m is not None and (m.expires_at is None or m.expires_at > now) else None

    keyed = slotted = exact = None
    if new.kind not in NEVER_SUPERSEDED:
        if new.key is not None:
            keyed = alive(w.by_key(project, new.key))
        if new.triple is not None:
            slotted = alive(w.by_slot(project, slot_of(new.triple.subject, new.triple.predicate)))
        exact = alive(w.by_content(project, new.content))
    # The shortlist is the nearest current memories by vector: a rule needs a candidate's cosine
    # (one it lacks counts as 0, under every rule's floor), and a near duplicate is near in
    # meaning too. The unit's own inserts are in no index yet: they are compared here.
    cosines = dict(port.indexes.search_vector(vector, port.config.shortlist, project=project))
    found = w.many(list(cosines))
    candidates = [m for i in cosines if (m := alive(found.get(i))) is not None and m.project == project]
    inserted = [(float(np.dot(vector, own)), m) for m in w.pending(project)
            if m.id not in cosines and (own := w.vector(m.content_hash)) is not None]  # fmt: skip
    for cos, m in sorted(inserted, key=lambda cm: -cm[0])[: port.config.shortlist]:
        candidates.append(m)
        cosines[m.id] = cos
    # Claims meet claims only: what was said in passing never retires (or counts as) a remembered
    # or consolidated memory, nor the other way round (the slot test orders them at recall).
    is_claim = new.kind == claims.CLAIM
    candidates = [m for m in candidates if (m.kind == claims.CLAIM) == is_claim]
    exact = exact if exact is not None and (exact.kind == claims.CLAIM) == is_claim else None
    decision = decide(
        kind=new.kind,
        content=new.content,
        key=new.key,
        slot=slot_of(new.triple.subject, new.triple.predicate) if new.triple else None,
        triple_object=new.triple.object if new.triple else None,
        keyed=keyed,
        slotted=slotted,
        exact=exact,
        candidates=candidates,
        thresholds=port.config.thresholds,
        cosines=cosines,
        read={i: (a.text, a.question) for i, a in port.live.analyses(candidates).items()},
        beside=judge.adds_beside if (judge := pair.for_embedder(port.serving.model)) is not None else None,
    )
    return decision, candidates


def revise(port: Port, memory_id: int, request: ReviseRequest, *, actor: str) -> RememberResult:
    """The revise operation: a new version of a current memory with the fields `request` gives."""
    given = msgspec.structs.asdict(request)
    changes = {k: v for k, v in given.items() if v is not None and k not in ("content", "reason")}
    return new_version(port, memory_id, request.content, reason=request.reason, actor=actor, changes=changes)


@gated
def new_version(
    port: Port, memory_id: int, content: str, *, reason: str, actor: str, changes: dict[str, Any]
) -> RememberResult:
    """A new version of a current memory; unchanged fields carry over from it, `changes` (any
    NewMemory field) replace theirs."""
    reason = validate.content(reason, port.config, "reason")
    unknown = set(changes) - set(NewMemory.__struct_fields__)
    if unknown:
        raise ValidationError(f"unknown fields: {', '.join(sorted(unknown))}")
    old = port.get(memory_id)
    if changes.get("project", old.project) != old.project:
        raise ValidationError("project: a new version stays in its lineage's project; remember it there instead")
    new = _revised(port, old, content, changes)
    content_hash = sha256(new.content)
    vector, stored = port.serving.vector_for(old.project, new.content, content_hash)

    def job(w: Write) -> RememberResult:
        current = w.get(old.id)
        if current is None:
            raise ConflictError(f"memory {memory_id} is not the current version any more; revise the latest")
        w.embedding(content_hash, vector, stored=stored)
        version = w.insert(new, content_hash=content_hash, replaces=current)
        sim = round(jaccard(token_set(new.content), token_set(current.content)), 4)
        w.supersede(current, version, reason, sim)
        w.audit([AuditEntry.of(current, "supersede", actor, w.now, reason, by=version.id, similarity=sim)])
        return RememberResult(outcome="superseded", memory=version, superseded_id=current.id, reason=reason,
                              similarity=sim)  # fmt: skip

    return port.run(job)


def _revised(port: Port, old: MemoryVersion, content: str, changes: dict[str, Any]) -> NewMemory:
    if not old.is_latest or old.status != "active":
        raise ConflictError(f"memory {old.id} is {old.status}, not the current version; revise the latest")
    base = {f: getattr(old, f) for f in NewMemory.__struct_fields__ if hasattr(old, f)}
    base.update(source_ids=list(old.source_ids), confidence=None, valid_from=None, expires_at=old.expires_at)
    base.update(changes, content=content)
    now = port.clock()
    if "expires_at" not in changes and old.expires_at is not None and old.expires_at <= now:
        base["expires_at"] = None  # the old version's TTL has lapsed: the new one starts without it
    return _sources_known(port, validate.new_memory(NewMemory(**base), port.config, now))


@gated
def observe(
    port: Port,
    items: Sequence[NewMemory],
    *,
    actor: str = "local",
    not_claims: Sequence[Collection[str]] = (),
) -> list[MemoryVersion]:
    """Raw observations or events in one unit: all or nothing. They never supersede or reinforce.

    Each sentence of an observation that states something becomes a claim derived from it, decided
    in the same unit like any remembered memory (see `agentmem.claims`); but not the sentences
    `not_claims` names for it (by position: conversation ingest remembers those as typed memories)."""
    now = port.clock()
    checked = []
    for n, item in enumerate(items):
        try:
            new = _sources_known(port, validate.new_memory(item, port.config, now))
        except ValidationError as exc:
            raise ValidationError(f"observation {n}: {exc}") from None
        if new.kind not in NEVER_SUPERSEDED:
            raise ValidationError(f"observation {n}: kind must be observation or event, not {new.kind!r}")
        checked.append(new)
    rules = port.config.claims
    said = [claims.of_turn(m.content, rules) if rules.enabled and claims.is_turn(m) else [] for m in checked]
    for n, told in enumerate(not_claims[: len(said)]):
        said[n] = [s for s in said[n] if s not in told]
    hashes = [sha256(m.content) for m in checked]
    texts: dict[tuple[str, str], str] = {}  # (project, hash): each project reuses only its own vectors
    for m, h, sentences in zip(checked, hashes, said, strict=True):
        texts[(m.project or "", h)] = m.content
        texts.update(((m.project or "", sha256(s)), s) for s in sentences)
    known = {
        (p, h): vec
        for p in {p for p, _ in texts}
        for h, vec in port.serving.held_vectors(p, [h for q, h in texts if q == p]).items()
    }
    todo = {k: t for k, t in texts.items() if k not in known}
    embedded = dict(zip(todo, port.serving.embed(list(todo.values())), strict=True)) if todo else {}
    fresh = {h for _, h in embedded}
    vectors = {h: vec for (_, h), vec in {**known, **embedded}.items()}

    def job(w: Write) -> list[MemoryVersion]:
        created = []
        for new, content_hash, sentences in zip(checked, hashes, said, strict=True):
            w.embedding(content_hash, vectors[content_hash], stored=content_hash not in fresh)
            turn = w.insert(new, content_hash=content_hash)
            created.append(turn)
            for sentence in sentences:
                h = sha256(sentence)
                w.embedding(h, vectors[h], stored=h not in fresh)
                claim = claims.claim_of(turn, sentence)
                r = apply(port, w, claim, h, actor, _decide(port, w, claim, vectors[h])[0])
                if r.outcome == "reinforced":
                    w.link(r.memory.id, turn.id)  # said again: this turn is more evidence for it
        return created

    return port.run(job)
