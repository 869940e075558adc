"""`agentmem ingest conversation FILE | notes DIR | code DIR`: the admission scans from the shell."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentmem.admission.scan import ScanReport
from agentmem.flags import add_flags, arguments
from agentmem.operations import IngestConversationRequest, IngestPathRequest

if TYPE_CHECKING:
    from agentmem.contract import MemoryAPI


def add_ingest(sub: Any) -> None:
    """The `ingest` subcommand and its three sources."""
    p = sub.add_parser("ingest", help="turn a conversation, notes or a source tree into memories (admission policy)")
    which = p.add_subparsers(dest="source", required=True, metavar="SOURCE")
    for name, text in (
        ("conversation", "a session's messages: JSON or JSON Lines (role, content, time, id)"),
        ("notes", "a directory of Markdown notes"),
        ("code", "a source tree: declarations and their documentation"),
    ):
        s = which.add_parser(name, help=text)
        add_flags(s, IngestConversationRequest if name == "conversation" else IngestPathRequest)
        s.add_argument("--show-rejected", action="store_true", help="list rejected candidates (always on a dry run)")


def report_text(r: ScanReport, show_rejected: bool) -> str:
    verb = "would admit" if r.dry_run else "admitted"
    reasons = ", ".join(f"{k} {v}" for k, v in r.rejected_by_reason.items()) or "none"
    skipped = ", ".join(f"{k} {v}" for k, v in r.skipped.items()) or "none"
    outcomes = ", ".join(f"{k} {v}" for k, v in r.outcomes.items())
    lines = [
        f"{r.source} scan of {r.target} ({r.status}): {verb} {r.admitted} of {r.candidates} candidates "
        f"from {r.units} {'messages' if r.source == 'conversation' else 'files'}"
        + (f" ({outcomes})" if outcomes else ""),
        f"  rejected: {reasons}",
        f"  skipped: {skipped}",
    ]
    if r.source == "conversation":
        kept = ", ".join(f"{k} {v}" for k, v in r.turns.items()) or "none"
        lines.insert(1, f"  turns kept whole: {kept}; claims from their sentences: {r.claims}")
    lines += [f"  + {i.ref} [{i.kind}] {i.text}" + (f" -> {i.outcome} #{i.memory_id}" if i.outcome else "")
              for i in r.admitted_items[:200]]  # fmt: skip
    if show_rejected or r.dry_run:
        lines += [f"  - {i.ref} ({i.reason}) {i.text[:160]}" for i in r.rejected_items[:500]]
    return "\n".join(lines)


def run_ingest(args: argparse.Namespace, mem: MemoryAPI, out: Callable[[argparse.Namespace, Any, str], None]) -> None:
    """Run one scan, in process (a progress bar on long scans, on a terminal) or through a service."""
    if args.source == "conversation":
        report = mem.ingest_conversation(**arguments(args, IngestConversationRequest), progress=True)
    elif args.source == "notes":
        report = mem.ingest_notes(**arguments(args, IngestPathRequest), progress=True)
    else:
        report = mem.ingest_code(**arguments(args, IngestPathRequest), progress=True)
    out(args, report, report_text(report, args.show_rejected))
