"""The viewer's pages, rendered from records to escaped HTML (no state, no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from agentmem.audit import ACTIONS, AuditEntry
from agentmem.claims import CLAIM
from agentmem.kinds import STATUSES, TIERS
from agentmem.records import MemoryVersion, RememberResult, Stats, Triple
from agentmem.retention import Retention
from api.viewer.html import Safe, fmt, join, options, query, quote_path, when
from api.viewer.plot import bars
from indexes.sync import Consistency


def base(project: str) -> str:
    return f"/ui/p/{quote_path(project)}"


def memory_link(memory_id: int | None) -> Safe:
    if memory_id is None:
        return Safe("")
    return fmt('<a href="/ui/memories/{i}">#{i}</a>', i=memory_id)


def tag(text: str, cls: str = "") -> Safe:
    return fmt('<span class="tag {c}">{t}</span>', c=cls, t=text)


def login(message: str | None = None, next_path: str = "/ui/") -> Safe:
    note = fmt('<p class="error" role="alert">{m}</p>', m=message) if message else Safe("")
    return fmt(
        "{note}<p>The viewer shows one token's projects. Paste a token from the service's configuration;"
        " it is kept in an HttpOnly cookie for this site's /ui pages only.</p>"
        '<form method="post" action="/ui/login"><input type="hidden" name="next" value="{n}">'
        '<p><label for="token">Token</label> <input id="token" name="token" type="password" required '
        'autocomplete="current-password" autofocus></p><p><button type="submit">Sign in</button></p></form>',
        note=note,
        n=next_path,
    )


def error(status: int, message: str, signed_in: bool) -> Safe:
    more = Safe('<p><a href="/ui/">Back to your projects</a></p>') if signed_in else Safe("")
    return fmt('<p class="error" role="alert">{s}: {m}</p>{more}', s=status, m=message, more=more)


def projects(counts: dict[str, int]) -> Safe:
    if not counts:
        return Safe('<p class="muted">No memories yet. Write one through the API, the CLI, or a project page.</p>')
    rows = [
        fmt('<li><a href="{b}/">{p}</a> <span class="muted">({n} versions)</span></li>', b=base(p), p=p, n=n)
        for p, n in counts.items()
    ]
    return fmt("<ul>{r}</ul>", r=join(rows))


def remember_box(project: str, csrf: str, kinds: Sequence[str], *, key: str | None = None, can: bool = True) -> Safe:
    if not can:
        return Safe('<p class="muted">This token may read but not write: the remember box is hidden.</p>')
    return fmt(
        '<form method="post" action="{b}/remember"><fieldset><legend>Remember</legend>'
        '<input type="hidden" name="csrf" value="{csrf}">'
        '<p><label for="content">What is true now</label><br>'
        '<textarea id="content" name="content" rows="3" required></textarea></p>'
        '<p><label for="key">Key</label> <input id="key" name="key" value="{key}" size="24" '
        'aria-describedby="key-help"> <span id="key-help" class="muted">optional: a later memory with the '
        "same key replaces this one</span></p>"
        '<p><label for="rkind">Kind</label> <select id="rkind" name="kind">{kinds}</select> '
        '<label for="rtier">Tier</label> <select id="rtier" name="tier">{tiers}</select> '
        '<label for="ragent">Agent</label> <input id="ragent" name="agent" size="14"></p>'
        '<p><button type="submit">Remember</button></p></fieldset></form>',
        b=base(project),
        csrf=csrf,
        key=key or "",
        kinds=options(kinds, "fact", blank="fact (default)"),
        tiers=options(TIERS, "semantic", blank="semantic (default)"),
    )


def memory_rows(
    items: Sequence[tuple[MemoryVersion, Retention, float | None]],
    older: Mapping[int, tuple[int, str | None]] | None = None,
    said_in: Mapping[int, int] | None = None,
) -> Safe:
    """The table of memories; `older` maps a recalled memory to the newer one that states its slot
    with another value and what judged so (a hit's `older_than`, `older_reason`), `said_in` a
    recalled claim to the turn it was said in (a hit's `stated_in`): both shown beside its content."""
    if not items:
        return Safe('<p class="muted">No current memories match.</p>')
    rows = []
    for m, r, score in items:
        marked, turn = (older or {}).get(m.id), (said_in or {}).get(m.id)
        note = Safe("")
        if turn is not None:
            note = fmt(' <span class="said">(said in <a href="/ui/memories/{t}">#{t}</a>)</span>', t=turn)
        if marked is not None:
            note = fmt(
                '{s} <span class="older">(older than <a href="/ui/memories/{n}">#{n}</a>: {why})</span>',
                s=note,
                n=marked[0],
                why=marked[1] or "",
            )
        rows.append(
            fmt(
                '<tr><td><a href="/ui/memories/{id}">#{id}</a></td><td class="content">{content}{note}</td>'
                "<td>{kind}</td><td>{tier}</td><td>{agent}</td><td>{ret}</td><td>{ver}</td><td>{since}</td>"
                "{score}</tr>",
                id=m.id,
                content=m.content,
                note=note,
                kind=m.kind,
                tier=m.tier,
                agent=m.agent or "",
                ret=tag(r.tier, r.tier),
                ver=f"v{m.version}" + (" (has history)" if m.version > 1 else ""),
                since=when(m.valid_from),
                score=fmt("<td>{s}</td>", s=f"{score:.3f}") if score is not None else Safe(""),
            )
        )
    score_head = "<th scope=col>Score</th>" if items[0][2] is not None else ""
    return fmt(
        '<table><caption class="muted">{n} shown</caption><thead><tr><th scope=col>Id</th><th scope=col>Memory</th>'
        "<th scope=col>Kind</th><th scope=col>Tier</th><th scope=col>Agent</th><th scope=col>Retention</th>"
        "<th scope=col>Version</th><th scope=col>True since</th>{sh}</tr></thead><tbody>{rows}</tbody></table>",
        n=len(items),
        sh=Safe(score_head),
        rows=join(rows),
    )


def memories(
    project: str,
    items: Sequence[tuple[MemoryVersion, Retention, float | None]],
    *,
    q: str,
    tier: str | None,
    kind: str | None,
    agent: str | None,
    status: str,
    kinds: Sequence[str],
    next_cursor: int | None,
    box: Safe,
    older: Mapping[int, tuple[int, str | None]] | None = None,
    said_in: Mapping[int, int] | None = None,
) -> Safe:
    b = base(project)
    more = Safe("")
    if next_cursor is not None:
        more = fmt(
            '<p><a href="{u}">Older memories</a></p>',
            u=query(f"{b}/", tier=tier, kind=kind, agent=agent, status=status, cursor=next_cursor),
        )
    if q:
        what = fmt("<h2>Recalled for “{q}” <span class=muted>(current memories only)</span></h2>", q=q)
    elif status == "active":
        what = Safe("<h2>Current memories, newest first</h2>")
    else:
        what = fmt("<h2>Versions with status {s}, newest first</h2>", s=status)
    return fmt(
        '<form method="get" action="{b}/" role="search"><fieldset><legend>Search and filter</legend>'
        '<label for="q">Search</label> <input id="q" name="q" type="search" value="{q}" size="32"> '
        '<label for="tier">Tier</label> <select id="tier" name="tier">{tiers}</select> '
        '<label for="kind">Kind</label> <select id="kind" name="kind">{kinds}</select> '
        '<label for="agent">Agent</label> <input id="agent" name="agent" value="{agent}" size="14"> '
        '<label for="status">Status</label> <select id="status" name="status">{statuses}</select> '
        '<button type="submit">Show</button></fieldset></form>{what}{rows}{more}{box}',
        b=b,
        q=q,
        tiers=options(TIERS, tier),
        kinds=options(kinds, kind),
        agent=agent or "",
        statuses=options([s for s in STATUSES if s != "active"] + ["all"], status, blank="active (current)"),
        what=what,
        rows=memory_rows(items, older, said_in),
        more=more,
        box=box,
    )


def why(reason: str | None, similarity: float | None, key: str | None, triple: Triple | None) -> str:
    """The rule that replaced a version, in words: the key or triple slot it shared, and the similarity."""
    if reason == "key" and key:
        text = f"a newer memory has the same key “{key}”"
    elif reason == "triple" and triple:
        text = f"a newer memory fills the same triple slot “{triple.subject} / {triple.predicate}”"
    elif reason == "similarity":
        text = "a newer memory says nearly the same thing"
    elif reason == "moved":
        text = "a newer memory says it moved on (a new value, or the old one dropped)"
    elif reason == "new answer":
        text = "a newer memory answers the same question otherwise"
    elif reason and reason.startswith("model ") and ": " in reason:  # agentmem.adjudicate's rulings
        ruling, _, said = reason.removeprefix("model ").partition(": ")
        text = f"a model ruled the newer memory {'an' if ruling[:1] in 'aeiou' else 'a'} {ruling}: {said}"
    else:
        text = reason or "replaced"
    return text if similarity is None else f"{text} (similarity {similarity:.3f})"


def death(v: MemoryVersion, by: MemoryVersion | None) -> Safe:
    """What replaced a version, when and why; or why it left recall otherwise."""
    if v.superseded_by is not None:
        replaced = fmt(": “{c}”", c=by.content) if by is not None else Safe("")
        return fmt(
            '<p class="death">Replaced by {link}{replaced} on <time datetime="{iso}">{at}</time>, because: {why}.</p>',
            link=memory_link(v.superseded_by),
            replaced=replaced,
            iso=v.superseded_at.isoformat() if v.superseded_at else "",
            at=v.superseded_at,
            why=why(v.supersede_reason, v.supersede_similarity, v.key, v.triple),
        )
    if v.status in ("archived", "expired", "deleted"):
        at = v.archived_at or v.deleted_at or v.valid_to
        return fmt(
            '<p class="death">{s} on {at}{r}.</p>',
            s=v.status.capitalize(),
            at=at,
            r=f": {v.status_reason}" if v.status_reason else "",
        )
    return Safe('<p class="muted">Current: in recall now.</p>')


def evidence(v: MemoryVersion) -> Safe:
    """What a version was built from: a claim's turn ("Said in"), a derived memory's sources."""
    if not v.source_ids:
        return Safe("")
    return fmt(
        "<dt>{what}</dt><dd>{links}</dd>",
        what="Said in" if v.kind == CLAIM else "Derived from",
        links=join([memory_link(i) for i in v.source_ids], ", "),
    )


def timeline(
    chain: Sequence[MemoryVersion],
    focus: int,
    retention: Retention | None,
    *,
    csrf: str,
    can_write: bool,
) -> Safe:
    by_id = {v.id: v for v in chain}
    items = []
    for v in chain:
        restore = Safe("")
        if can_write and v.is_latest and v.status in ("archived", "expired"):
            restore = restore_form(v.id, csrf)
        triple = f"{v.triple.subject} / {v.triple.predicate} / {v.triple.object}" if v.triple else ""
        items.append(
            fmt(
                '<li id="v{id}" class="{cls}"{cur}><h2>Version {ver} · {link} · {status}</h2>'
                '<div class="content">{content}</div>'
                '<dl><dt>Became true</dt><dd><time datetime="{vf}">{vfs}</time> (recorded {created})</dd>'
                "{key}{triple}{evidence}"
                "<dt>Kind / tier / agent / source</dt><dd>{kind} / {tier} / {agent} / {source}</dd>"
                "<dt>Reinforced</dt><dd>{reinf} times; recalled {acc} times</dd></dl>{death}{restore}</li>",
                id=v.id,
                cls="dead" if v.status != "active" else "alive",
                cur=Safe(' aria-current="true"') if v.id == focus else Safe(""),
                ver=v.version,
                link=memory_link(v.id),
                status=tag(v.status),
                content=v.content,
                vf=v.valid_from.isoformat(),
                vfs=v.valid_from,
                created=v.created_at,
                key=fmt("<dt>Key</dt><dd>{k}</dd>", k=v.key) if v.key else Safe(""),
                triple=fmt("<dt>Triple</dt><dd>{t}</dd>", t=triple) if triple else Safe(""),
                evidence=evidence(v),
                kind=v.kind,
                tier=v.tier,
                agent=v.agent or "-",
                source=v.source,
                reinf=v.reinforcements,
                acc=v.accesses,
                death=death(v, by_id.get(v.superseded_by) if v.superseded_by else None),
                restore=restore,
            )
        )
    ret = Safe("")
    if retention is not None:
        ret = fmt(
            "<p>Retention now: {t} score {s} (decay {d}, confidence {c}, access {a}){p}</p>",
            t=tag(retention.tier, retention.tier),
            s=f"{retention.score:.3f}",
            d=f"{retention.decay:.3f}",
            c=f"{retention.effective_confidence:.3f}",
            a=f"{retention.access:.3f}",
            p="; pinned" if retention.pinned else "",
        )
    return fmt(
        '<p>{n} version(s), oldest first. <a href="{audit}">Audit entries for this memory</a></p>{ret}'
        '<ol class="timeline" aria-label="version chain">{items}</ol>',
        n=len(chain),
        audit=query(f"{base(chain[0].project)}/audit", memory_id=focus),
        ret=ret,
        items=join(items),
    )


def outcome(result: RememberResult, old: MemoryVersion | None) -> Safe:
    """What the remember box just did: created, reinforced, or which belief it killed and why."""
    m = result.memory
    if result.outcome == "superseded" and old is not None:
        head = fmt(
            "<p><strong>Superseded</strong> {old}: “{oc}” is no longer believed: {why}. "
            "It stays in the chain below; {new} holds now.</p>",
            old=memory_link(old.id),
            oc=old.content,
            why=why(result.reason, result.similarity, old.key, old.triple),
            new=memory_link(m.id),
        )
    elif result.outcome == "reinforced":
        head = fmt(
            "<p><strong>Reinforced</strong> {link} ({why}): it has now been reinforced {n} times.</p>",
            link=memory_link(m.id),
            why=result.reason or "same content",
            n=m.reinforcements,
        )
    else:
        head = fmt("<p><strong>Created</strong> {link}: a new belief.</p>", link=memory_link(m.id))
    if result.also_superseded:
        head = fmt(
            "{h}<p>Also superseded, each asking the same question with another answer: {links}.</p>",
            h=head,
            links=join((memory_link(i) for i in result.also_superseded), ", "),
        )
    near = Safe("")
    if result.near_duplicates:
        near = fmt(
            "<p>Similar, left alone:</p><ul>{li}</ul>",
            li=join(
                fmt("<li>{l} ({s}): {c}</li>", l=memory_link(d.id), s=f"{d.similarity:.3f}", c=d.content)
                for d in result.near_duplicates
            ),
        )
    return fmt('<section class="outcome" role="status" aria-label="what happened">{h}{n}</section>', h=head, n=near)


def restore_form(memory_id: int, csrf: str) -> Safe:
    return fmt(
        '<form class="inline" method="post" action="/ui/memories/{i}/restore">'
        '<input type="hidden" name="csrf" value="{c}"><button type="submit">Restore #{i}</button></form>',
        i=memory_id,
        c=csrf,
    )


def archive(items: Sequence[MemoryVersion], *, csrf: str, can_write: bool) -> Safe:
    if not items:
        return Safe('<p class="muted">Nothing archived or expired.</p>')
    rows = [
        fmt(
            '<tr><td>{link}</td><td class="content">{c}</td><td>{s}</td><td>{at}</td><td>{r}</td><td>{btn}</td></tr>',
            link=memory_link(m.id),
            c=m.content,
            s=m.status,
            at=m.archived_at or m.valid_to,
            r=m.status_reason or "",
            btn=restore_form(m.id, csrf) if can_write and m.is_latest else Safe(""),
        )
        for m in items
    ]
    return fmt(
        "<table><thead><tr><th scope=col>Id</th><th scope=col>Memory</th><th scope=col>Status</th>"
        "<th scope=col>Since</th><th scope=col>Why</th><th scope=col>Restore</th></tr></thead>"
        "<tbody>{r}</tbody></table>",
        r=join(rows),
    )


def audit(
    project: str, items: Sequence[AuditEntry], *, action: str | None, memory_id: int | None, next_cursor: int | None
) -> Safe:
    b = base(project)
    rows = [
        fmt(
            "<tr><td>{at}</td><td>{a}</td><td>{actor}</td><td>{m}</td><td>{n}</td><td>{r}</td><td><code>{d}</code>"
            "</td></tr>",
            at=e.created_at,
            a=e.action,
            actor=e.actor,
            m=memory_link(e.memory_id),
            n=e.affected,
            r=e.reason or "",
            d=msgspec.json.encode(e.details).decode() if e.details else "",
        )
        for e in items
    ]
    more = Safe("")
    if next_cursor is not None:
        more = fmt(
            '<p><a href="{u}">Older entries</a></p>',
            u=query(f"{b}/audit", action=action, memory_id=memory_id, cursor=next_cursor),
        )
    table = (
        fmt(
            "<table><thead><tr><th scope=col>When</th><th scope=col>Action</th><th scope=col>Actor</th>"
            "<th scope=col>Memory</th><th scope=col>Versions</th><th scope=col>Reason</th><th scope=col>Details</th>"
            "</tr></thead><tbody>{r}</tbody></table>",
            r=join(rows),
        )
        if rows
        else Safe('<p class="muted">No audit entries match.</p>')
    )
    return fmt(
        '<form method="get" action="{b}/audit"><fieldset><legend>Filter</legend>'
        '<label for="action">Action</label> <select id="action" name="action">{acts}</select> '
        '<label for="memory_id">Memory id</label> <input id="memory_id" name="memory_id" inputmode="numeric" '
        'value="{mid}" size="8"> <button type="submit">Show</button></fieldset></form>{t}{more}',
        b=b,
        acts=options(ACTIONS, action),
        mid=memory_id or "",
        t=table,
        more=more,
    )


def _counts(title: str, counts: dict[str, int]) -> Safe:
    rows = join(fmt("<tr><th scope=row>{k}</th><td>{v}</td></tr>", k=k, v=v) for k, v in counts.items())
    return fmt(
        "<section><h2>{t}</h2><table><tbody>{rows}</tbody></table>{plot}</section>",
        t=title,
        rows=rows,
        plot=bars(title, counts),
    )


def stats(project: str, s: Stats, check: Consistency | None, *, admin: bool) -> Safe:
    """The project's figures (`s` counts its memories only); the full id check is for `admin`s of all projects."""
    lag_note = "the indexes have applied every change" if s.outbox_pending == 0 else "changes waiting for the indexes"
    sizes_ok = s.bm25_docs == s.vector_docs == s.latest_active
    if check is not None:
        consistency = fmt(
            "<p>Full check (admin): {ok}. {reports}</p>",
            ok=tag("consistent", "cold") if check.ok else tag("INCONSISTENT", "hot"),
            reports=join(
                (
                    f"{r.name}: {r.count} documents, {len(r.missing)} missing, {len(r.extra)} extra"
                    for r in check.indexes
                ),
                sep="; ",
            ),
        )
    else:
        consistency = fmt(
            "<p>Index sizes {ok} the current memories of this project. {full}</p>",
            ok="match" if sizes_ok else "do not match",
            full=fmt('<a href="{u}">Run the full id check</a> (admin).', u=query(f"{base(project)}/stats", check=1))
            if admin
            else "An admin token of all projects can run the full id check.",
        )
    return fmt(
        "<section><h2>Store and indexes</h2><dl><dt>Versions</dt><dd>{v}</dd><dt>Current memories</dt><dd>{cur}</dd>"
        "<dt>Links</dt><dd>{links}</dd><dt>Outbox lag</dt><dd>{lag} ({lag_note})</dd>"
        "<dt>BM25 / vector documents</dt><dd>{bm} / {vec} of {cur} current</dd>"
        "<dt>Embedding model</dt><dd>{model}</dd></dl>{cons}</section>{status}{tier}{kind}",
        v=s.versions,
        cur=s.latest_active,
        links=s.links,
        lag=s.outbox_pending,
        lag_note=lag_note,
        bm=s.bm25_docs,
        vec=s.vector_docs,
        model=s.embedding_model,
        cons=consistency,
        status=_counts("By status", s.by_status),
        tier=_counts("By tier", s.by_tier),
        kind=_counts("By kind", s.by_kind),
    )
