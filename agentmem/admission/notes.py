"""Markdown notes as an intent view: headings and the statements under them, chunked, then candidates.

Front matter, fenced code, HTML comments, tables and blank lines are left out of the view.
A paragraph (its wrapped lines joined) or a list item is one statement, with the line it starts
on. A section whose heading path names an intent (see `INTENTS`) makes a claim of that kind for
every statement under it; elsewhere the sentence patterns decide, over every declarative
sentence (not only first-person ones). Each candidate keeps `path:line` of its sentence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import msgspec

from agentmem.admission.extract import Candidate, judge, sentences

SUFFIXES = (".md", ".markdown", ".mdown")
MAX_CHUNK_CHARS = 2000
INTENTS: list[tuple[str, re.Pattern[str]]] = [
    (claim, re.compile(pattern, re.IGNORECASE))
    for claim, pattern in (
        ("decision", r"\b(?:decisions?|decided|adrs?|choices)\b"),
        ("preference", r"\b(?:preferences?|prefer|likes|dislikes|favou?rites?)\b"),
        ("convention", r"\b(?:conventions?|style ?guide|guidelines?|rules|practices)\b"),
        ("config", r"\b(?:config(?:uration)?|settings|environment|env|ports?|deployment|infrastructure)\b"),
        ("identity", r"\b(?:about me|profile|identity|who i am|bio)\b"),
        ("habit", r"\b(?:habits?|routines?)\b"),
        ("project", r"\b(?:facts?|overview|architecture|stack|glossary|background)\b"),
    )
]
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")


class Statement(msgspec.Struct, frozen=True):
    """A paragraph (wrapped lines joined by spaces) or a list item; `marks` maps text offsets to lines."""

    line: int
    text: str
    marks: list[tuple[int, int]]  # (offset in text, line number) where each source line starts

    def line_at(self, offset: int) -> int:
        return max((ln for off, ln in self.marks if off <= offset), default=self.line)


class Section(msgspec.Struct, frozen=True, kw_only=True):
    """A heading (its path from the top) and the statements under it."""

    headings: list[str]
    line: int
    statements: list[Statement]


def intent_view(text: str) -> list[Section]:
    """The headings of a Markdown text and the statements under each, without code, tables or comments."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    current: list[Statement] = []
    heading_line = 0
    para: list[tuple[int, str]] = []

    def end_para() -> None:
        if para:
            marks, offset = [], 0
            for line_no, text in para:
                marks.append((offset, line_no))
                offset += len(text) + 1
            current.append(Statement(para[0][0], " ".join(t for _, t in para), marks))
            para.clear()

    def end_section() -> None:
        end_para()
        if current:
            sections.append(Section(headings=[h for _, h in path], line=heading_line, statements=list(current)))
            current.clear()

    lines = text.splitlines()
    start = 0
    if lines and lines[0].strip() == "---":  # front matter
        for n in range(1, len(lines)):
            if lines[n].strip() in ("---", "..."):
                start = n + 1
                break
    fence: str | None = None
    comment = False
    for n in range(start, len(lines)):
        raw = lines[n]
        line = raw.strip()
        if fence is not None:
            if line.startswith(fence):
                fence = None
            continue
        if line.startswith(("```", "~~~")):
            end_para()
            fence = line[:3]
            continue
        if comment or line.startswith("<!--"):
            comment = "-->" not in line
            continue
        m = _HEADING.match(line)
        if m:
            end_section()
            level = len(m.group(1))
            path = [(lv, h) for lv, h in path if lv < level] + [(level, m.group(2))]
            heading_line = n + 1
            continue
        if not line or line.startswith("|") or re.fullmatch(r"[-=*_\s]{3,}", line) or raw.startswith(("    ", "\t")):
            end_para()
            continue
        if _ITEM.match(raw):
            end_para()
            para.append((n + 1, " ".join(_ITEM.sub("", raw).split())))
            end_para()  # a list item is a statement of its own
            continue
        para.append((n + 1, " ".join(line.lstrip("> ").split())))
    end_section()
    return sections


def chunks(sections: list[Section], max_chars: int = MAX_CHUNK_CHARS) -> Iterator[Section]:
    """Sections cut into pieces of at most `max_chars` characters of statements (a statement is never cut)."""
    for s in sections:
        piece: list[Statement] = []
        size = 0
        for st in s.statements:
            if piece and size + len(st.text) > max_chars:
                yield msgspec.structs.replace(s, statements=piece)
                piece, size = [], 0
            piece.append(st)
            size += len(st.text)
        if piece:
            yield msgspec.structs.replace(s, statements=piece)


def intent(headings: list[str]) -> str | None:
    """The claim the nearest heading that names an intent makes; None when none does."""
    for heading in reversed(headings):
        for claim, pattern in INTENTS:
            if pattern.search(heading):
                return claim
    return None


def candidates(rel: str, text: str, *, speaker: str = "user") -> Iterator[Candidate]:
    """Every candidate of one note, each with `rel:line`."""
    for chunk in chunks(intent_view(text)):
        claim = intent(chunk.headings)
        title = chunk.headings[-1][:200] if chunk.headings else None
        for st in chunk.statements:
            cursor = 0
            for sentence in sentences(st.text):
                found = st.text.find(sentence[:40], cursor)
                cursor = found if found >= 0 else cursor
                ref = f"{rel}:{st.line_at(cursor)}"[-200:]
                c = judge(sentence, speaker=speaker, ref=ref, claim=claim, title=title, strict=False)
                if c is not None:
                    yield c
