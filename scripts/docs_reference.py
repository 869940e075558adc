"""Writes the reference pages of the docs site from the code, or checks them (`--check`).

- docs/reference/http.md: every route of the HTTP API, from the service's OpenAPI schema;
- docs/reference/cli.md: every command and flag, from the argparse parser `agentmem` runs;
- docs/reference/operations.md: each operation's arguments, from its request Struct
  (agentmem.operations);
- docs/reference/config.md: every settings field, from the msgspec Structs (`Settings` for the
  server's TOML file, `Config` for the engine), with the comment written beside each field.

    python scripts/docs_reference.py           # rewrite the pages
    python scripts/docs_reference.py --check   # exit 1, naming the pages that differ from the code

tests/test_docs.py runs the check, so a changed argument, flag or field fails the tests until the
pages are written again.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import json
import os
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import msgspec

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
HOW = (
    "Generated from the code by `python scripts/docs_reference.py`; `tests/test_docs.py` fails when this page"
    " and the code differ. Do not edit it by hand."
)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


# ---------------------------------------------------------------- HTTP, from the OpenAPI schema


def openapi_schema() -> dict[str, Any]:
    """The OpenAPI document the service serves at /docs/openapi.json (the app is built, never run:
    the schema does not depend on the store, so none is opened)."""
    from api.app import create_app
    from api.settings import load

    app = create_app(load(env={}), mem=None)  # type: ignore[arg-type]
    schema: dict[str, Any] = app.openapi_schema.to_schema()
    return schema


def _anchor(name: str) -> str:
    return name.lower()


def _type(s: dict[str, Any]) -> str:
    """A schema, as a short Markdown type: `string`, `list of [Hit](#hit)`, `integer or null`."""
    if "$ref" in s:
        name = s["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    for key in ("oneOf", "anyOf"):
        if key in s:
            return " or ".join(_type(x) for x in s[key])
    if "enum" in s:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in s["enum"])
    kind = s.get("type")
    if isinstance(kind, list):
        return " or ".join(_type({**s, "type": k}) for k in kind)
    if kind == "array":
        return "list of " + _type(s.get("items", {}))
    if kind == "object" and isinstance(s.get("additionalProperties"), dict) and s["additionalProperties"]:
        return "map of string to " + _type(s["additionalProperties"])
    if kind is None:
        return "any"
    return f"{kind} ({s['format']})" if "format" in s else str(kind)


def _default(s: dict[str, Any]) -> str:
    return f"`{json.dumps(s['default'])}`" if "default" in s else ""


API_PREFIXES = ("/v1/", "/health", "/ready", "/metrics")  # /ui/ is the web viewer's HTML (guides/viewer.md)


def http_page(schema: dict[str, Any]) -> str:
    out = [
        "# HTTP API reference",
        "",
        HOW,
        "",
        f"Version {schema['info']['version']}. Every body is JSON (unknown fields are refused). Send"
        " `Authorization: Bearer <token>` when the server has tokens. Errors, roles and limits:"
        " [HTTP guide](../guides/http.md) and [Security](../operations/security.md).",
        "",
    ]
    used: set[str] = set()
    paths = {p: ops for p, ops in schema["paths"].items() if p.startswith(API_PREFIXES)}
    out += ["| route | what |", "| --- | --- |"]
    for path in sorted(paths):
        for method in sorted(paths[path]):
            op = paths[path][method]
            slug = f"{method}-{path}".replace("/", "-").replace("{", "").replace("}", "").strip("-")
            out.append(f"| [`{method.upper()} {path}`](#{slug}) | {_cell(op.get('summary', ''))} |")
    out.append("")
    for path in sorted(paths):
        for method in sorted(paths[path]):
            op = paths[path][method]
            slug = f"{method}-{path}".replace("/", "-").replace("{", "").replace("}", "").strip("-")
            out += [f"## `{method.upper()} {path}` {{ #{slug} }}", ""]
            if op.get("summary"):
                out += [f"**{op['summary']}.**", ""]
            if op.get("description"):
                out += [textwrap.dedent(op["description"]).strip(), ""]
            params = op.get("parameters", [])
            for where in ("path", "query"):
                rows = [p for p in params if p["in"] == where]
                if rows:
                    out += [f"{where.capitalize()} parameters:", "", "| name | type | required | default | what |",
                            "| --- | --- | --- | --- | --- |"]  # fmt: skip
                    for p in sorted(rows, key=lambda p: str(p["name"])):
                        s = p.get("schema", {})
                        used.update(_refs(s))
                        out.append(
                            f"| `{p['name']}` | {_type(s)} | {'yes' if p.get('required') else ''} | {_default(s)}"
                            f" | {_cell(p.get('description', ''))} |"
                        )
                    out.append("")
            body = op.get("requestBody")
            if body:
                for media, content in sorted(body.get("content", {}).items()):
                    s = content.get("schema", {})
                    used.update(_refs(s))
                    out += [f"Body (`{media}`): {_type(s) if s else 'see above'}.", ""]
            replies = []
            for status, reply in sorted(op.get("responses", {}).items()):
                if not status.startswith("2"):
                    continue
                for media, content in sorted(reply.get("content", {}).items()):
                    s = content.get("schema", {})
                    used.update(_refs(s))
                    replies.append(f"{status} `{media}`" + (f": {_type(s)}" if s else ""))
                if not reply.get("content"):
                    replies.append(status)
            if replies:
                out += ["Reply: " + "; ".join(replies) + ".", ""]
    components = schema.get("components", {}).get("schemas", {})
    todo, seen = sorted(used), set()
    while todo:  # the types the routes use, and the types those use
        name = todo.pop()
        if name in seen or name not in components:
            continue
        seen.add(name)
        todo.extend(sorted(_refs(components[name]) - seen))
    out += ["## Types", ""]
    for name in sorted(seen):
        s = components[name]
        out += [f"### {name} {{ #{_anchor(name)} }}", ""]
        if s.get("description"):
            out += [" ".join(s["description"].split()), ""]
        props = s.get("properties", {})
        if props:
            required = set(s.get("required", []))
            out += ["| field | type | required | default |", "| --- | --- | --- | --- |"]
            for field in sorted(props):
                f = props[field]
                out.append(f"| `{field}` | {_type(f)} | {'yes' if field in required else ''} | {_default(f)} |")
            out.append("")
        else:
            out += [f"A {_type(s)}.", ""]
    return "\n".join(out)


def _refs(s: Any) -> set[str]:
    if isinstance(s, dict):
        found = {s["$ref"].rsplit("/", 1)[-1]} if "$ref" in s else set()
        for v in s.values():
            found |= _refs(v)
        return found
    if isinstance(s, list):
        return set().union(*(_refs(v) for v in s)) if s else set()
    return set()


# ---------------------------------------------------------------- CLI, from the argparse parser


def cli_parser() -> argparse.ArgumentParser:
    """The parser `agentmem` runs (agentmem.cli's, with the service's `serve` and `mcp`)."""
    from agentmem import cli
    from api.server import add_commands

    parser, sub = cli._parser()
    add_commands(sub)
    return parser


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| argument | default | what |", "| --- | --- | --- |"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                meta = action.metavar or action.dest.upper()
                name += " " + (" ".join(meta) if isinstance(meta, tuple) else str(meta))
                if action.nargs in ("*", "+") or isinstance(action, argparse._AppendAction):
                    name += " ..." if action.nargs != "+" else " [...]"
        else:
            meta = action.metavar or action.dest
            name = " ".join(meta) if isinstance(meta, tuple) else str(meta)
            if action.nargs in ("*", "?"):
                name = f"[{name}]"
        default = action.default
        shown = "" if default in (None, False, argparse.SUPPRESS) or isinstance(action, argparse._StoreTrueAction) \
            else f"`{default}`"  # fmt: skip
        what = action.help or ""
        if action.choices and not isinstance(action, argparse._SubParsersAction):
            what = (what + "; " if what else "") + "one of " + ", ".join(f"`{c}`" for c in action.choices)
        if action.required and action.option_strings:
            what = "required; " + what if what else "required"
        rows.append(f"| `{_cell(name)}` | {shown} | {_cell(what)} |")
    return rows if len(rows) > 2 else []


def _commands(parser: argparse.ArgumentParser, prefix: str, out: list[str]) -> None:
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {c.dest: c.help for c in action._choices_actions}
        for name, sub in action.choices.items():
            full = f"{prefix} {name}"
            out += [f"## `{full}`", ""]
            if helps.get(name):
                out += [f"{helps[name][0].upper()}{helps[name][1:]}.", ""]
            usage = " ".join(sub.format_usage().split()).removeprefix("usage: ")
            out += ["```text", textwrap.fill(usage, 100, subsequent_indent="    ", break_on_hyphens=False), "```", ""]
            rows = _flags(sub)
            if rows:
                out += [*rows, ""]
            _commands(sub, full, out)


def cli_page(parser: argparse.ArgumentParser) -> str:
    out = [
        "# Command line reference",
        "",
        HOW,
        "",
        "The options before the command apply to every command; `--url` (or `AGENTMEM_URL`) sends the"
        " command to a running service instead of opening the data directory. Exit codes and a tour:"
        " [Command line guide](../guides/cli.md).",
        "",
        "## `agentmem`",
        "",
        f"{parser.description}",
        "",
        *_flags(parser),
        "",
    ]
    _commands(parser, "agentmem", out)
    return "\n".join(out)


# ---------------------------------------------------------------- configuration, from the Structs


def _comments(cls: type) -> dict[str, str]:
    """Each field's comment in the class body: the one at the end of its line, else the full-line
    comments right above it."""
    lines, _ = inspect.getsourcelines(cls)
    source = textwrap.dedent("".join(lines))
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.ClassDef)
    text = source.splitlines()
    found: dict[str, str] = {}
    for node in body.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        last = text[(node.end_lineno or node.lineno) - 1]
        trailing = _trailing_comment(last)
        above: list[str] = []
        i = node.lineno - 2
        while i >= 0 and text[i].strip().startswith("#"):
            above.insert(0, text[i].strip().lstrip("#").strip())
            i -= 1
        found[node.target.id] = trailing or " ".join(above)
    return found


def _trailing_comment(line: str) -> str:
    """The comment at the end of a line of code, if any (a # inside a string is not one)."""
    import io
    import tokenize

    try:
        for tok in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if tok.type == tokenize.COMMENT:
                return tok.string.lstrip("#").strip()
    except (tokenize.TokenError, IndentationError):
        return ""
    return ""


def _type_name(t: Any) -> str:
    text = getattr(t, "__name__", None) if isinstance(t, type) else None
    text = re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", text or str(t))  # agentmem.kinds.KindSpec -> KindSpec
    return " ".join(text.split())


def _struct_default(f: Any) -> str:
    if f.default is not msgspec.NODEFAULT:
        value = f.default
    elif f.default_factory is not msgspec.NODEFAULT:
        value = f.default_factory()
    else:
        return "required"
    if isinstance(value, msgspec.Struct):
        return f"[{type(value).__name__}](#{type(value).__name__.lower()}) defaults"
    if isinstance(value, dict) and value and all(isinstance(v, msgspec.Struct) for v in value.values()):
        return "the built-in " + ", ".join(f"`{k}`" for k in value)
    return f"`{value!r}`"


def config_structs() -> list[tuple[str, str, list[type]]]:
    from agentmem.config import ClaimRules, Config, ConsolidationSettings
    from agentmem.kinds import KindSpec
    from agentmem.provider import ProviderConfig
    from agentmem.ranking import Weights
    from agentmem.retention import RetentionPolicy
    from agentmem.supersede import Thresholds
    from api.settings import IngestRoot, Settings, TokenSpec, ViewerSettings

    return [
        ("The server's settings file", "The TOML file `agentmem serve --config FILE` reads (or `AGENTMEM_CONFIG`);"
         " most top-level keys can also be set by an `AGENTMEM_*` variable, which wins (see"
         " [Configuration](../operations/configuration.md)).", [Settings, TokenSpec, IngestRoot, ViewerSettings]),
        ("The engine", "`agentmem.Config`, given to `Memory(..., config=Config(...))`; the server builds one"
         " from its settings file.", [Config]),
        ("Sections shared by both", "Set as `[section]` tables in the settings file, or as the struct in"
         " `Config`.", [KindSpec, RetentionPolicy, ConsolidationSettings, ClaimRules, ProviderConfig]),
        ("Engine only", "Set in `Config` (Python).", [Thresholds, Weights]),
    ]  # fmt: skip


def config_page() -> str:
    how = "How to set each in practice, with an example file: [Configuration](../operations/configuration.md)."
    out = ["# Configuration reference", "", HOW, "", how, ""]
    for title, intro, structs in config_structs():
        out += [f"## {title}", "", intro, ""]
        for cls in structs:
            name = cls.__name__
            out += [f"### {name} {{ #{name.lower()} }}", "", f"`{cls.__module__}.{name}`.", ""]
            doc = inspect.getdoc(cls)
            if doc and doc != inspect.getdoc(msgspec.Struct):
                out += [" ".join(doc.split("\n\n")[0].split()), ""]
            comments = _comments(cls)
            out += ["| field | type | default | what |", "| --- | --- | --- | --- |"]
            for f in msgspec.structs.fields(cls):
                out.append(
                    f"| `{f.name}` | `{_cell(_type_name(f.type))}` | {_cell(_struct_default(f))}"
                    f" | {_cell(comments.get(f.name, ''))} |"
                )
            out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- operations, from their requests


def operations_page() -> str:
    """Each operation's arguments, from its request Struct (agentmem.operations): the same in
    `Memory`, `Client`, the HTTP body, the CLI and the MCP tool."""
    from typing import get_args

    from agentmem.operations import REQUESTS, description

    out = ["# Operations reference", "", HOW, "",
           "Each operation's arguments are declared once, as a msgspec Struct in `agentmem.operations`. The"
           " keyword method of `Memory` and `Client` takes them, the HTTP route takes them as its JSON body,"
           " the CLI has a flag for each and the MCP tool a subset.", ""]  # fmt: skip
    for cls in dict.fromkeys(REQUESTS.values()):
        name = cls.__name__
        ops = ", ".join(f"`{op}`" for op, r in REQUESTS.items() if r is cls)
        out += [f"## {name} {{ #{name.lower()} }}", "", f"`{cls.__module__}.{name}`: {ops}.", ""]
        out += [" ".join((inspect.getdoc(cls) or "").split()), ""]
        out += ["| field | type | default | what |", "| --- | --- | --- | --- |"]
        for f in msgspec.structs.fields(cls):
            base = get_args(f.type)[0] if get_args(f.type) else f.type
            out.append(
                f"| `{f.name}` | `{_cell(_type_name(base))}` | {_cell(_struct_default(f))}"
                f" | {_cell(description(f.type))} |"
            )
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------- write or check


def pages() -> dict[Path, str]:
    for name in [k for k in os.environ if k.startswith("AGENTMEM_")]:  # parser defaults read them
        del os.environ[name]
    return {
        REFERENCE / "http.md": http_page(openapi_schema()) + "\n",
        REFERENCE / "cli.md": cli_page(cli_parser()) + "\n",
        REFERENCE / "config.md": config_page() + "\n",
        REFERENCE / "operations.md": operations_page() + "\n",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on a difference")
    args = parser.parse_args(argv)
    stale = []
    for path, text in pages().items():
        if path.exists() and path.read_text() == text:
            continue
        if args.check:
            stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("out of date with the code: " + ", ".join(stale) + " (run: python scripts/docs_reference.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
