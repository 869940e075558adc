"""Command-line flags from an operation's request Struct (agentmem.operations): one per field.

A required field is positional (named `metavar` in the usage, or a required flag when `_about` names
one), a one-letter name is
`-k`, a list is a repeatable flag named in the singular (`tiers` -> `--tier`; a list of literals
offers them as its choices), a bool is a switch
(`--off`-like, storing false, when it defaults to true); the help is the field's description. The
caller's own project (`own=True`) defaults to $AGENTMEM_PROJECT, else "default".
"""

from __future__ import annotations

import argparse
import os
from types import UnionType
from typing import Any, Literal, get_args, get_origin

import msgspec

from agentmem.operations import Request, default, description, plain, shown


def _flag(name: str, is_list: bool) -> str:
    name = name[:-1] if is_list and name.endswith("s") else name
    return f"-{name}" if len(name) == 1 else "--" + name.replace("_", "-")


class _Append(argparse.Action):
    """Like action="append", but the first use replaces the default instead of adding to it."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, value: Any, option: str | None = None) -> None:
        given = getattr(namespace, self.dest)
        setattr(namespace, self.dest, [*(given if given is not self.default else []), value])


def _base(annotation: Any) -> Any:
    """The field's type without Annotated and None: `int | None` -> int; a union of several -> str."""
    base, _ = plain(annotation)
    options = [t for t in get_args(base) if t is not type(None)] if get_origin(base) is UnionType else [base]
    return options[0] if len(options) == 1 else str


def add_flags(parser: argparse.ArgumentParser, request: type[Request]) -> None:
    """One argument of `parser` for each field of `request`."""
    for f in msgspec.structs.fields(request):
        base, how, text = _base(f.type), shown(f.type), description(f.type) or None
        value = default(f)
        if how.get("own"):
            value = os.environ.get("AGENTMEM_PROJECT", "default")
        is_list = getattr(base, "__origin__", None) is list
        flag = how.get("flag") or _flag(f.name, is_list)
        if f.required and "flag" not in how:
            parser.add_argument(f.name, metavar=how.get("metavar"), help=text)
        elif f.required:
            parser.add_argument(flag, dest=f.name, required=True, help=text)
        elif base is bool:
            action = "store_false" if value is True else "store_true"
            parser.add_argument(flag, dest=f.name, action=action, help=text)
        elif is_list:
            item = get_args(base)[0] if get_args(base) else str
            choices = get_args(item) if get_origin(item) is Literal else None
            metavar = None if choices else flag.lstrip("-").upper()
            parser.add_argument(flag, dest=f.name, metavar=metavar, action=_Append, default=value,
                                type=item if item in (int, float) else str, choices=choices, help=text)  # fmt: skip
        else:
            kind = base if base in (int, float) else str
            parser.add_argument(flag, dest=f.name, type=kind, default=value, help=text)


def arguments(args: argparse.Namespace, request: type[Request]) -> dict[str, Any]:
    """The parsed values of `request`'s fields, as keyword arguments of its operation."""
    return {f.name: getattr(args, f.name) for f in msgspec.structs.fields(request)}
