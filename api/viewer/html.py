"""A tiny escaping HTML helper: every value is escaped unless it is already `Safe` markup."""

from __future__ import annotations

import html
from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlencode


class Safe(str):
    """Markup that is already escaped (or built only from escaped parts)."""

    __slots__ = ()


def esc(value: Any) -> Safe:
    """`value` as HTML text: Safe passes through, None is empty, everything else is escaped."""
    if isinstance(value, Safe):
        return value
    if value is None:
        return Safe("")
    if isinstance(value, datetime):
        return Safe(html.escape(when(value)))
    return Safe(html.escape(str(value), quote=True))


def fmt(template: str, /, **values: Any) -> Safe:
    """Fill a constant template; each value is escaped (attributes included: quotes are escaped too)."""
    return Safe(template.format(**{k: esc(v) for k, v in values.items()}))


def join(parts: Iterable[Any], sep: str = "") -> Safe:
    return Safe(sep.join(esc(p) for p in parts))


def when(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S UTC") if at is not None else ""


def query(path: str, **params: Any) -> str:
    """`path` with the non-empty params as a query string (escape it with esc/fmt when printing)."""
    pairs = [(k, v) for k, vs in params.items() for v in (vs if isinstance(vs, list | tuple) else [vs]) if v]
    return f"{path}?{urlencode(pairs)}" if pairs else path


def options(choices: Iterable[str], selected: str | None, blank: str = "any") -> Safe:
    out = [fmt('<option value="">{b}</option>', b=blank)]
    for c in choices:
        sel = " selected" if c == selected else ""
        out.append(fmt('<option value="{c}"{s}>{c}</option>', c=c, s=Safe(sel)))
    return join(out)


CSS = """
:root { color-scheme: light dark; --muted: #666; --line: #ccc; --accent: #0b5cad; --bad: #a4262c; --ok: #1b7a3a; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; }
header { padding: .6rem 1rem; border-bottom: 1px solid var(--line); display: flex; gap: 1rem; flex-wrap: wrap;
         align-items: center; }
header nav a { margin-right: .8rem; }
main { padding: 1rem; max-width: 72rem; }
a { color: var(--accent); }
a:focus, button:focus, input:focus, select:focus, textarea:focus { outline: 3px solid #f0a500; outline-offset: 1px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .3rem .5rem; border-bottom: 1px solid var(--line); }
.muted { color: var(--muted); }
.tag { display: inline-block; padding: 0 .4rem; border: 1px solid var(--line); border-radius: .6rem; font-size: .85em; }
.hot { background: #fde0dc; } .warm { background: #fff3cd; } .cold { background: #dcebfa; }
.evictable { background: #eee; }
form.inline { display: inline; }
fieldset { border: 1px solid var(--line); margin: 1rem 0; }
label { margin-right: .3rem; }
textarea { width: 100%; max-width: 40rem; }
ol.timeline { list-style: none; padding-left: 0; border-left: 3px solid var(--line); }
ol.timeline > li { margin: 0 0 1rem 0; padding-left: 1rem; }
ol.timeline > li.dead .content { text-decoration: line-through; color: var(--muted); }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; margin: .4rem 0; }
dd { margin: 0; }
section table { width: auto; min-width: 16rem; }
.content { white-space: pre-wrap; font-size: 1.05em; }
.outcome { border: 2px solid var(--accent); padding: .5rem 1rem; margin-bottom: 1rem; }
.error { border: 2px solid var(--bad); padding: .5rem 1rem; }
.skip { position: absolute; left: -10000px; } .skip:focus { left: 1rem; top: .5rem; background: #fff; }
"""


def page(
    title: str,
    body: Safe,
    *,
    project: str | None = None,
    user: str | None = None,
    csrf: str | None = None,
    logout: bool = False,
) -> Safe:
    """The whole document: header with navigation for `project`, then `body`."""
    nav = Safe("")
    if project is not None:
        base = f"/ui/p/{quote_path(project)}"
        nav = fmt(
            '<nav aria-label="project"><a href="{b}/">Memories</a><a href="{b}/archive">Archive</a>'
            '<a href="{b}/audit">Audit log</a><a href="{b}/stats">Stats</a><a href="/ui/">Projects</a></nav>',
            b=base,
        )
    who = Safe("")
    if user is not None:
        who = fmt('<span class="muted">signed in as {u}</span>', u=user)
        if logout and csrf:
            who = fmt(
                '{w} <form class="inline" method="post" action="/ui/logout">'
                '<input type="hidden" name="csrf" value="{c}"><button type="submit">Sign out</button></form>',
                w=who,
                c=csrf,
            )
    return fmt(
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>{title} · agentmem</title><style>{css}</style></head><body>"
        '<a class="skip" href="#main">Skip to content</a>'
        '<header><strong><a href="/ui/">agentmem</a></strong>{project}{nav}{who}</header>'
        '<main id="main"><h1>{title}</h1>{body}</main></body></html>',
        title=title,
        css=Safe(CSS),
        project=fmt(' <span class="tag">project {p}</span>', p=project) if project else Safe(""),
        nav=nav,
        who=who,
        body=body,
    )


def quote_path(segment: str) -> str:
    return quote(segment, safe="")
