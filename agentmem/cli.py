"""The `agentmem` command line: remember, recall, history, stats, upkeep, lifecycle, export and import."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import IO, Any

import msgspec

from agentmem.admission.cli import add_ingest, run_ingest
from agentmem.bench import Timings, add_bench, run_bench
from agentmem.contract import MemoryAPI
from agentmem.errors import AgentMemError, ValidationError
from agentmem.flags import add_flags, arguments
from agentmem.kinds import KINDS, TIERS
from agentmem.operations import (
    AuditRequest,
    ConsolidateRequest,
    DeleteRequest,
    EndSessionRequest,
    ListRequest,
    PinRequest,
    RebuildRequest,
    RecallRequest,
    RestoreRequest,
    ScopeRequest,
    SweepRequest,
)
from agentmem.records import Hit, MemoryVersion, NewMemory, RememberResult, Triple

EXIT_OK, EXIT_FAILURE = 0, AgentMemError.exit_code  # an error exits with its own exit_code


def default_data_dir() -> Path:
    env = os.environ.get("AGENTMEM_DATA_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "agentmem"


Extra = Callable[[Any], dict[str, Callable[[argparse.Namespace], int]]]
Opener = Callable[[Path], MemoryAPI]


def _parser() -> tuple[argparse.ArgumentParser, Any]:
    p = argparse.ArgumentParser(prog="agentmem", description="A versioned memory for AI agents.")
    p.add_argument("--data-dir", type=Path, default=None, help="data directory (env AGENTMEM_DATA_DIR)")
    p.add_argument(
        "--database-url",
        default=os.environ.get("AGENTMEM_DATABASE_URL") or None,
        help="a PostgreSQL database (with pgvector) instead of the data directory (env AGENTMEM_DATABASE_URL)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--url", default=os.environ.get("AGENTMEM_URL"), help="talk to a running service (env AGENTMEM_URL)")
    p.add_argument("--token", default=os.environ.get("AGENTMEM_TOKEN"), help="bearer token (env AGENTMEM_TOKEN)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("remember", help="store a memory (creates, reinforces or supersedes)")
    r.add_argument("content")
    r.add_argument("--project", default=os.environ.get("AGENTMEM_PROJECT", "default"))
    r.add_argument("--kind", default="fact", help=f"one of {', '.join(KINDS)}")
    r.add_argument("--tier", default="semantic", help=f"one of {', '.join(TIERS)}")
    r.add_argument("--title")
    r.add_argument("--key", help="an explicit slot, e.g. project.database")
    r.add_argument("--triple", nargs=3, metavar=("SUBJECT", "PREDICATE", "OBJECT"))
    r.add_argument("--agent")
    r.add_argument("--session")
    r.add_argument("--salience", type=float, default=0.5)
    r.add_argument("--ttl-days", type=float)
    r.add_argument("--expires-at")
    r.add_argument("--valid-from")
    r.add_argument("--pinned", action="store_true")

    add_flags(sub.add_parser("recall", help="search current memories (or those valid --as-of a time)"), RecallRequest)

    for name, text in (("get", "show one version"), ("history", "show every version of a memory's lineage")):
        c = sub.add_parser(name, help=text)
        c.add_argument("id", type=int)

    add_flags(sub.add_parser("stats", help="counts over the store and indexes"), ScopeRequest)
    sub.add_parser("check", help="compare index ids with DuckDB (exit 1 when they differ)")
    add_flags(sub.add_parser("rebuild", help="rebuild the indexes from DuckDB"), RebuildRequest)
    e = sub.add_parser("export", help="write every version and link as JSON Lines")
    e.add_argument("file", nargs="?", default="-", help="output file, - for stdout")
    add_flags(e, ScopeRequest)
    i = sub.add_parser("import", help="load a JSON Lines export into this data directory")
    i.add_argument("file", help="input file, - for stdin")

    add_flags(sub.add_parser("sweep", help="archive memories whose retention faded, and expired ones"), SweepRequest)
    add_flags(sub.add_parser("list", help="list memory versions, newest first"), ListRequest)
    a = sub.add_parser("archived", help="list archived and expired memories (the flags of list)")
    add_flags(a, ListRequest)
    a.set_defaults(status=["archived", "expired"])
    for name, text in (("restore", "bring an archived or expired memory back"), ("pin", "exempt from the sweep"),
                       ("retention", "show retention score and tier")):  # fmt: skip
        c = sub.add_parser(name, help=text)
        c.add_argument("id", type=int)
        if name == "restore":
            add_flags(c, RestoreRequest)
        if name == "pin":
            add_flags(c, PinRequest)
    add_flags(sub.add_parser("delete", help="governance delete: erase content for good (needs --reason)"),
              DeleteRequest)  # fmt: skip
    add_flags(sub.add_parser("audit", help="show the audit log, newest first"), AuditRequest)
    sub.add_parser("compact", help="rewrite the database file so erased content leaves the disk (offline)")
    es = sub.add_parser("end-session", help="a session is over: its observations become one episodic memory")
    es.add_argument("session")
    add_flags(es, EndSessionRequest)
    add_flags(sub.add_parser("consolidate", help="run episodic, semantic and procedural consolidation"),
              ConsolidateRequest)  # fmt: skip
    pv = sub.add_parser("provenance", help="the evidence a memory came from, and what was built on it")
    pv.add_argument("id", type=int)
    add_ingest(sub)
    add_bench(sub)
    return p, sub


def _out(args: argparse.Namespace, value: Any, text: str) -> None:
    if args.json:
        sys.stdout.write(msgspec.json.encode(value).decode() + "\n")
    else:
        print(text)


def _line(m: MemoryVersion) -> str:
    state = m.status if not m.is_latest or m.status != "active" else "current"
    return f"#{m.id} v{m.version} [{state}] ({m.kind}, {m.project}) {m.content}"


def _remember_text(r: RememberResult) -> str:
    text = f"{r.outcome}: {_line(r.memory)}"
    if r.superseded_id is not None:
        text += f"\n  replaced #{r.superseded_id} by {r.reason} (similarity {r.similarity})"
    for i in r.also_superseded:
        text += f"\n  replaced #{i} by new answer"
    for d in r.near_duplicates:
        text += f"\n  near duplicate #{d.id} ({d.similarity}): {d.content}"
    return text


def _history_text(versions: list[MemoryVersion]) -> str:
    lines = []
    for v in versions:
        lines.append(_line(v))
        if v.superseded_by is not None:
            lines.append(
                f"    superseded by #{v.superseded_by} at {v.superseded_at:%Y-%m-%d %H:%M} "
                f"({v.supersede_reason}, similarity {v.supersede_similarity})"
            )
    return "\n".join(lines)


def _hits_text(hits: list[Hit]) -> str:
    if not hits:
        return "no memories found"
    return "\n".join(
        f"{h.score:.4f}  {_line(h.memory)}"
        + (f"  (older than #{h.older_than}: {h.older_reason})" if h.older_than is not None else "")
        + (f"  (said in #{h.stated_in.id})" if h.stated_in is not None else "")
        + (f"  (superseded by #{h.memory.superseded_by})" if h.memory.superseded_by is not None else "")
        for h in hits
    )


def _open(path: str, mode: str) -> IO[Any]:
    """A file named on the command line; one that cannot be opened is bad input."""
    try:
        return open(path, mode)
    except OSError as exc:
        raise ValidationError(f"cannot open {path}: {(exc.strerror or str(exc)).lower()}") from None


def _run(args: argparse.Namespace, open_memory: Opener) -> int:
    data_dir = args.data_dir or default_data_dir()
    with closing(open_memory(data_dir)) as mem:
        cmd = args.command
        if cmd == "remember":
            item = NewMemory(
                content=args.content,
                project=args.project,
                kind=args.kind,
                tier=args.tier,
                title=args.title,
                key=args.key,
                triple=Triple(*args.triple) if args.triple else None,
                agent=args.agent,
                session=args.session,
                source="cli",
                salience=args.salience,
                ttl_days=args.ttl_days,
                expires_at=args.expires_at,
                valid_from=args.valid_from,
                pinned=args.pinned,
            )
            result = mem.remember(item)
            _out(args, result, _remember_text(result))
        elif cmd == "recall":
            found = mem.search(**arguments(args, RecallRequest))
            history = [_history_text(versions) for versions in found.history.values()]
            _out(args, found if args.include_history else found.hits, "\n".join([_hits_text(found.hits), *history]))
        elif cmd == "get":
            m = mem.get(args.id)
            _out(args, m, _history_text([m]))
        elif cmd == "history":
            versions = mem.history(args.id)
            _out(args, versions, _history_text(versions))
        elif cmd == "stats":
            s = mem.stats(**arguments(args, ScopeRequest))
            _out(args, s, "\n".join(f"{k}: {v}" for k, v in msgspec.structs.asdict(s).items()))
        elif cmd in ("check", "rebuild"):
            report = mem.check() if cmd == "check" else mem.rebuild(**arguments(args, RebuildRequest))
            text = [f"expected {report.expected} latest active memories"]
            for r in report.indexes:
                text.append(f"{r.name}: {r.count} ids, {len(r.missing)} missing, {len(r.extra)} extra")
            text += [f"store: {problem}" for problem in report.store_problems]
            text.append("consistent" if report.ok else "INCONSISTENT")
            _out(args, {"ok": report.ok, **msgspec.structs.asdict(report)}, "\n".join(text))
            return EXIT_OK if report.ok else EXIT_FAILURE
        elif cmd == "export":
            out = sys.stdout.buffer if args.file == "-" else _open(args.file, "wb")
            try:
                lines = mem.export_lines(**arguments(args, ScopeRequest))
                n = sum(1 for line in lines if out.write(line) is not None)
            finally:
                if out is not sys.stdout.buffer:
                    out.close()
            print(f"exported {n - 1} lines", file=sys.stderr)
        elif cmd == "import":
            if args.file == "-":
                n = mem.import_lines(sys.stdin.buffer)
            else:
                with _open(args.file, "rb") as f:
                    n = mem.import_lines(f)
            _out(args, {"imported": n}, f"imported {n} versions")
        elif cmd == "ingest":
            run_ingest(args, mem, _out)
        else:
            _lifecycle(args, mem)
    return EXIT_OK


def _lifecycle(args: argparse.Namespace, mem: MemoryAPI) -> None:
    cmd = args.command
    if cmd == "sweep":
        r = mem.sweep(**arguments(args, SweepRequest))
        verb = "would archive" if r.dry_run else "archived"
        lines = [
            f"{verb} {r.archived} faded and {r.expired} expired of {r.examined} current memories "
            f"(threshold {r.threshold}, {r.left_for_next_run} left for the next run, {r.took_ms:.0f} ms)"
        ]
        lines += [f"  #{i.id} {i.action} ({i.kind}, {i.project}) retention {i.retention}" for i in r.items[:50]]
        _out(args, r, "\n".join(lines))
    elif cmd in ("list", "archived"):
        found, _ = mem.list_versions(**arguments(args, ListRequest))
        none = "no archived memories" if cmd == "archived" else "no memories"
        _out(args, found, "\n".join(_line(m) for m in found) or none)
    elif cmd == "restore":
        m = mem.restore(args.id, **arguments(args, RestoreRequest))
        _out(args, m, f"restored {_line(m)}")
    elif cmd == "pin":
        m = mem.pin(args.id, **arguments(args, PinRequest))
        _out(args, m, f"{'pinned' if m.pinned else 'unpinned'} {_line(m)}")
    elif cmd == "retention":
        t = mem.retention(args.id)
        _out(args, t, f"#{t.id} {t.tier} (retention {t.score}, confidence now {t.effective_confidence}, "
                      f"decay {t.decay}, access {t.access}{', pinned' if t.pinned else ''}"
                      f"{', expired' if t.expired else ''})")  # fmt: skip
    elif cmd == "delete":
        d = mem.delete(**arguments(args, DeleteRequest))
        verb = "would delete" if d.dry_run else "deleted"
        _out(args, d, f"{verb} {d.versions} versions in {d.lineages} lineages: {d.ids}")
    elif cmd == "end-session":
        e = mem.end_session(args.session, **arguments(args, EndSessionRequest))
        _out(args, e, f"{e.outcome}: {_line(e.memory)}" if e.memory else e.outcome)
    elif cmd == "consolidate":
        reports = mem.consolidate(**arguments(args, ConsolidateRequest))
        text = []
        for report in reports:
            for name in ("episodic", "semantic", "procedural"):
                c = getattr(report, name)
                archived = f", {c.children_archived} children archived" if c.children_archived else ""
                text.append(f"{report.project} {name}: {c.created} created, {c.reinforced} reinforced, "
                            f"{c.unchanged} unchanged, {c.skipped} skipped, {c.failed} failed{archived}")  # fmt: skip
        _out(args, reports, "\n".join(text) or "nothing to consolidate")
    elif cmd == "provenance":
        p = mem.provenance(args.id)
        lines = [f"#{p.memory_id} from {len(p.evidence)} pieces of evidence in sessions {', '.join(p.sessions) or '-'}"]
        lines += [f"  <- {_line(m)}" for m in p.evidence] + [f"  -> {_line(m)}" for m in p.derived]
        _out(args, p, "\n".join(lines))
    elif cmd == "audit":
        entries, _ = mem.audit(**arguments(args, AuditRequest))
        text = [
            f"{e.created_at:%Y-%m-%d %H:%M:%S} {e.action} by {e.actor}: {e.affected} in {e.project or '*'}"
            f"{f' #{e.memory_id}' if e.memory_id else ''}{f' ({e.reason})' if e.reason else ''}"
            for e in entries
        ]
        _out(args, entries, "\n".join(text) or "no audit entries")


def _opener(args: argparse.Namespace, hooks: dict[str, list[Callable[..., Any]]] | None = None) -> Opener:
    """The running service with --url (its replies go to httpx `hooks`), else the data directory
    opened in this process."""
    if args.url:
        from agentmem.client import Client

        url, token = args.url, args.token
        return lambda _path: Client(url, token=token, event_hooks=hooks)

    database_url = getattr(args, "database_url", None)

    def open_local(path: Path) -> MemoryAPI:
        from agentmem.memory import Memory
        from indexes.onnx_embed import default_embedder

        return Memory(path, embedder=default_embedder(), database_url=database_url)

    return open_local


def main(argv: Sequence[str] | None = None, *, open_memory: Opener | None = None, extra: Extra | None = None) -> int:
    """Run one command; returns 0, or the exit code of the error it met (2 bad input, 3 not found,
    4 data directory in use by another process, 1 others).

    `extra` adds subcommands (the service adds `serve` this way, so this module never imports it).
    With --url (or AGENTMEM_URL) the commands go to a running service instead of the data directory.
    """
    parser, sub = _parser()
    handlers = extra(sub) if extra else {}
    args = parser.parse_args(argv)
    try:
        if args.command in handlers:
            return handlers[args.command](args)
        if args.command == "compact":
            if args.url:
                raise ValidationError("compact works on a data directory, offline: stop the server and drop --url")
            from agentmem.memory import Memory

            before, after = Memory.compact(args.data_dir or default_data_dir())
            _out(args, {"before": before, "after": after}, f"compacted: {before} -> {after} bytes")
            return EXIT_OK
        if args.command == "bench":
            timings = Timings()
            opener = open_memory or _opener(args, {"response": [timings.hook]})
            data_dir = args.data_dir or default_data_dir()
            with closing(opener(data_dir)) as mem:
                return run_bench(args, mem, timings, args.url or str(data_dir))
        return _run(args, open_memory or _opener(args))
    except AgentMemError as exc:
        print(f"agentmem: {exc.label}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("agentmem: interrupted", file=sys.stderr)
        return 130


def entry() -> None:
    sys.exit(main())
