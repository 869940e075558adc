"""The command line of `python -m benchmarks.<name>`: its parser, the command as typed, progress output."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from benchmarks.harness.paths import RESULTS


def progress(iterable: Any = None, **kwargs: Any) -> tqdm:
    """A tqdm bar on a terminal, silent otherwise (logs, CI)."""
    kwargs.setdefault("disable", not sys.stderr.isatty())
    kwargs.setdefault("leave", False)
    return tqdm(iterable, **kwargs)


def say(*parts: object) -> None:
    """Progress notes go to stderr, so that stdout holds only the results."""
    print(*parts, file=sys.stderr, flush=True)


def parser(
    name: str, doc: str | None, *, data: Path | None = None, work_dir: bool = False, seed: bool = False
) -> argparse.ArgumentParser:
    """An argument parser for `python -m benchmarks.<name>`, described by the docstring's first paragraph.

    Every benchmark takes `--out` (its results folder); given `data`, `--data` (that folder or file by
    default); with `work_dir`, `--work-dir` (temporary folders); with `seed`, `--seed` (default 0).
    """
    p = argparse.ArgumentParser(prog=f"python -m benchmarks.{name}", description=(doc or "").split("\n\n")[0])
    p.add_argument("--out", type=Path, default=RESULTS, help="results folder (default %(default)s)")
    if data is not None:
        p.add_argument("--data", type=Path, default=data, help="the data folder or file (default %(default)s)")
    if work_dir:
        p.add_argument("--work-dir", type=Path, default=None, help="where temporary folders go (default: the system's)")
    if seed:
        p.add_argument("--seed", type=int, default=0)
    return p


def command_line(name: str, argv: Sequence[str] | None) -> str:
    """The command that ran `benchmarks.<name>` with these arguments, as typed from the repository root."""
    given = list(sys.argv[1:] if argv is None else argv)
    return " ".join([f"python -m benchmarks.{name}", *([shlex.join(given)] if given else [])])


def add_load_arguments(
    p: argparse.ArgumentParser, *, clients: str, repeats: int, duration: float, max_requests: int, timeout: float,
    ready_timeout: float,
) -> None:  # fmt: skip
    """The options of a benchmark that sends load from client processes to servers over HTTP; after parsing,
    `check_load_arguments` checks them."""
    p.add_argument("--clients", default=clients, help="client processes, comma separated (default %(default)s)")
    p.add_argument("--repeats", type=int, default=repeats, help="rounds per configuration (default %(default)s)")
    p.add_argument("--duration", type=float, default=duration, help="seconds per window at most (%(default)s)")
    p.add_argument("--max-requests", type=int, default=max_requests,
                   help="requests per client per window at most (%(default)s)")  # fmt: skip
    p.add_argument("--timeout", type=float, default=timeout, help="seconds per request at most (%(default)s)")
    p.add_argument("--ready-timeout", type=float, default=ready_timeout,
                   help="seconds to wait for a server's /ready (%(default)s)")  # fmt: skip


def check_load_arguments(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Check the options `add_load_arguments` added (p.error if out of range); `args.client_list` is --clients."""
    args.client_list = sorted({int(c) for c in args.clients.split(",") if c.strip()})
    if not args.client_list or min(args.client_list) < 1 or max(args.client_list) > 64:
        p.error("--clients: give numbers from 1 to 64")
    if not 0 < args.duration <= 600 or not 1 <= args.max_requests <= 100_000 or not 1 <= args.repeats <= 20:
        p.error("--duration must be in (0, 600], --max-requests in [1, 100000], --repeats in [1, 20]")
