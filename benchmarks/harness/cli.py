"""The command line of `python -m benchmarks.<name>`: its parser, the command as typed, progress output."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from tqdm import tqdm


def progress(iterable: Any = None, **kwargs: Any) -> tqdm:
    """A tqdm bar on a terminal, silent otherwise (logs, CI)."""
    kwargs.setdefault("disable", not sys.stderr.isatty())
    kwargs.setdefault("leave", False)
    return tqdm(iterable, **kwargs)


def say(*parts: object) -> None:
    """Progress notes go to stderr, so that stdout holds only the results."""
    print(*parts, file=sys.stderr, flush=True)


def parser(name: str, doc: str | None) -> argparse.ArgumentParser:
    """An argument parser for `python -m benchmarks.<name>`, described by the docstring's first paragraph."""
    return argparse.ArgumentParser(prog=f"python -m benchmarks.{name}", description=(doc or "").split("\n\n")[0])


def command_line(name: str, argv: Sequence[str] | None) -> str:
    """The command that ran `benchmarks.<name>` with these arguments, as typed from the repository root."""
    given = list(sys.argv[1:] if argv is None else argv)
    return " ".join([f"python -m benchmarks.{name}", *([shlex.join(given)] if given else [])])
