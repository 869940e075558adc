"""Command-line flags from an operation's request Struct (agentmem.operations): one per field.

A required field is positional, a one-letter name is `-k`, a list is a repeatable flag named in the
singular (`tiers` -> `--tier`), a bool is a switch; the help is the field's description.
"""

from __future__ import annotations

import argparse
from types import UnionType
from typing import Any, get_args

import msgspec

from agentmem.operations import Request, description


def _flag(name: str, is_list: bool) -> str:
    name = name[:-1] if is_list and name.endswith("s") else name
    return f"-{name}" if len(name) == 1 else "--" + name.replace("_", "-")


def add_flags(parser: argparse.ArgumentParser, request: type[Request]) -> None:
    """One argument of `parser` for each field of `request`."""
    for f in msgspec.structs.fields(request):
        base = get_args(f.type)[0] if get_args(f.type) else f.type
        options = [t for t in get_args(base) if t is not type(None)] if isinstance(base, UnionType) else [base]
        base = options[0] if len(options) == 1 else str
        default = f.default_factory() if f.default_factory is not msgspec.NODEFAULT else f.default
        text = description(f.type) or None
        if f.required:
            parser.add_argument(f.name, help=text)
        elif base is bool:
            parser.add_argument(_flag(f.name, False), dest=f.name, action="store_true", help=text)
        elif getattr(base, "__origin__", None) is list:
            flag = _flag(f.name, True)
            parser.add_argument(flag, dest=f.name, metavar=flag.lstrip("-").upper(), action="append",
                                default=default, help=text)  # fmt: skip
        else:
            kind = base if base in (int, float) else str
            parser.add_argument(_flag(f.name, False), dest=f.name, type=kind, default=default, help=text)


def arguments(args: argparse.Namespace, request: type[Request]) -> dict[str, Any]:
    """The parsed values of `request`'s fields, as keyword arguments of its operation."""
    return {f.name: getattr(args, f.name) for f in msgspec.structs.fields(request)}
