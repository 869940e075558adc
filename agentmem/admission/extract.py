"""The deterministic extractor: statements in, candidate claims out, each admitted or rejected with a reason.

A text is split into sentences; leading fillers ("Actually,", "Well,", "So,") are dropped. A
sentence is *proposed* when its speaker talks about themselves or their team (first person), when
a project-fact pattern matches, or when it looks like a path, command or code (so that a dry run
can say why it was not remembered); other sentences (questions, chit-chat) are not candidates.

Each candidate then meets the policy (`agentmem.admission.policy`) in this order: the screens
(secret, command, path, generated output, code), then procedural and hypothetical remarks, then
the claim patterns below (first match wins), then, when none matched, `event` for an action
("I ran the tests") or `no_claim`. A claim whose triple has a malformed predicate is rejected.

    identity (kind identity): "my name is Ada" (S, name, Ada); "I live in Oslo" (S, lives in, Oslo);
        "I work at Acme" (S, works at, Acme); "I'm a nurse"
    preference: "my favourite editor is vim" (S, favorite editor, vim); "I prefer X for Y"
        (S, prefers for Y, X); "I love / hate / am a fan of ..."
    decision: "we decided / agreed / chose ...", "we moved / switched / migrated to ...", "let's go with ..."
    config: "the API runs on port 8080" (API, port, 8080); "the API port is 8080"; "X defaults to Y"
    project (kind fact): "the service uses Postgres" (service, uses, Postgres); "our CI is X"; "we use ..."
    habit (kind fact): "I usually / always / never ...", "every morning I ..."
    convention (kind procedure): "we always / usually / never ..."
    personal (kind fact): "my X is Y" (S, X, Y) for any other short X (identity for name, age, email ...)

S is the speaker (a conversation message's `name`, else its role). Sources with their own
structure propose claims directly: a note under an intent heading ("Decisions", "Preferences",
"Config", ...) and a documented declaration in code; they still pass the screens.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import msgspec
from sentencex import segment

from agentmem.admission.policy import Reason, is_event, mentions_self, object_ok, predicate_ok, remark, screen
from agentmem.records import Triple
from agentmem.text import without_lead_in

CLAIM_KINDS: dict[str, str] = {
    "identity": "identity",
    "preference": "preference",
    "decision": "decision",
    "config": "config",
    "project": "fact",
    "habit": "fact",
    "convention": "procedure",
    "personal": "fact",
    "note": "fact",
    "documentation": "fact",
}


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """One proposed statement and the policy's verdict: `reason` is None when it is admitted."""

    text: str
    ref: str
    claim: str | None = None
    kind: str | None = None
    triple: Triple | None = None
    title: str | None = None
    reason: Reason | None = None

    @property
    def admitted(self) -> bool:
        return self.reason is None


@dataclass(frozen=True)
class _Pattern:
    claim: str
    regex: re.Pattern[str]
    predicate: str | None = None  # a fixed predicate; or from the `p` group; None with no `o` group: no triple


def _p(claim: str, pattern: str, predicate: str | None = None) -> _Pattern:
    return _Pattern(claim, re.compile(pattern, re.IGNORECASE), predicate)


_ADV = r"(?:(?:really|also|still|now|actually|totally|absolutely|definitely|much|just|always|kind of|generally) )*"
_NOUN = r"[\w'-]+(?: [\w'-]+){0,3}?"
_PATTERNS: list[_Pattern] = [
    _p("identity", r"^my name(?:'s| is) (?P<o>.+)$", "name"),
    _p("identity", r"^(?:i am|i'm) called (?P<o>.+)$", "name"),
    _p("identity", r"^(?:i am|i'm) (?P<o>\d{1,3}) years? old\b", "age"),
    _p("identity", r"^my pronouns are (?P<o>.+)$", "pronouns"),
    _p("identity", rf"^i {_ADV}(?:live|am living|'m living) in (?P<o>.+)$", "lives in"),
    _p("identity", r"^(?:i am|i'm) (?:originally )?from (?P<o>.+)$", "is from"),
    _p("identity", rf"^i {_ADV}(?:work|am working|'m working) (?:at|for) (?P<o>.+)$", "works at"),
    _p("identity", rf"^i {_ADV}(?:work|am working|'m working) as (?:an? )?(?P<o>.+)$", "works as"),
    _p("preference", rf"^my (?:favou?rite|preferred) (?P<p>{_NOUN}) (?:is|are) (?P<o>.+)$"),
    _p("preference", rf"^i {_ADV}prefer (?P<o>.+?) (?:for|when|in|on|during) (?P<ctx>[\w'-]+(?: [\w'-]+)?)$"),
    _p(
        "preference",
        rf"^(?:i|we) {_ADV}(?:prefer|like|love|enjoy|adore|hate|dislike|detest|can't stand|cannot stand|"
        r"(?:am|'m) (?:a )?(?:big |huge |total )?fan of|(?:am|'m) (?:really )?(?:into|keen on|interested in|"
        r"fond of|passionate about|obsessed with|allergic to))\b",
    ),
    _p(
        "identity",
        r"^(?:i am|i'm) (?:a|an) (?!bit\b|little\b|lot\b|.*\bfans?\b)"
        r"(?P<x>[\w'-]+(?: [\w'-]+){0,3})$",
    ),
    _p(
        "decision",
        r"^(?:we|i|the team)(?: have|'ve| finally| just)? (?:decided|agreed|chose|picked|settled on|went with|"
        r"are going with|'re going with|will go with|'ll go with|opted)\b",
    ),
    _p(
        "decision",
        r"^(?:we|i|the team)(?: have|'ve| just| recently| finally)? (?:moved|switched|migrated|changed|"
        r"upgraded|downgraded|transitioned)(?: \w+)? (?:to|from|over to) \S",
    ),
    _p("decision", r"^(?:let's go with|decision:|the decision is|we're standardi[sz]ing on|from now on\b)"),
    _p(
        "config",
        rf"^(?:the |our )?(?P<s>{_NOUN}) (?:runs|listens|is running|is served|is exposed|is available|"
        r"is reachable|serves) on port (?P<o>\d{2,5})\b",
        "port",
    ),
    _p(
        "config",
        r"^(?:the |our )?(?P<s>[\w'-]+(?: [\w'-]+)?) (?P<p>port|host|hostname|url|endpoint|timeout|"
        r"region|version|database|db|schema|bucket|branch|cluster|namespace|log level) (?:is|=) "
        r"(?!set to|configured|pinned to|defaulted)"
        r"(?P<o>.+)$",
    ),
    _p(
        "config",
        rf"^(?:the |our )?(?P<s>{_NOUN}) (?:is set to|defaults to|is configured (?:to|with)|is pinned to) "
        r"(?P<o>.+)$",
        "is set to",
    ),
    _p(
        "project",
        rf"^(?:the |our )(?P<s>{_NOUN}) (?P<p>uses|is written in|is built (?:with|on)|is hosted (?:on|at|in)|"
        r"is deployed (?:to|on)|runs on|depends on|is stored in|lives in|talks to|connects to|is backed by|"
        r"stores \w+ in) (?P<o>.+)$",
    ),
    _p("project", r"^we (?:use|are using|'re using|rely on|deploy (?:to|on)|host (?:on|at|in)|run on|build with)\b"),
    _p("project", rf"^our (?P<p>{_NOUN}) (?:is|are) (?P<o>.+)$"),
    _p(
        "personal",
        r"^(?:i|we) (?:have|'ve got|own) (?:a|an|two|three|four|five|six|\d+|my own|our own) "
        r"(?!few\b|lot\b|bit\b|little\b|feeling\b|question\b|idea\b|plan\b|good\b|great\b|hard\b)\w",
    ),
    _p("habit", r"^i(?:'ve| have) been \w+ing (?:for|since|every|regularly)\b"),
    _p(
        "habit",
        r"^i (?:usually|always|never|often|normally|typically|generally|tend to|regularly|rarely|"
        r"sometimes|mostly|frequently)\b",
    ),
    _p(
        "habit",
        r"^(?:every|each) (?:morning|evening|night|day|week|weekend|month|year|monday|tuesday|wednesday|"
        r"thursday|friday|saturday|sunday)(?: morning| evening| night)?,? i\b",
    ),
    _p("habit", r"^on (?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|weekends),? i\b"),
    _p("convention", r"^we (?:usually|always|never|normally|typically|generally|tend to)\b"),
    _p("personal", rf"^my (?P<p>{_NOUN}) (?:is|are) (?P<o>.+)$"),
]
_ABOUT_YOU = frozenset("it that this them those you your yours how what when".split())
_DEGREE = frozenset("so very really super pretty too such quite totally extremely incredibly kinda".split())
_IDENTITY_SLOTS = frozenset("name age birthday pronouns nationality job role title occupation profession email".split())

_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_FILLER = re.compile(
    r"^(?:(?:actually|well|so|oh|ah|also|and|but|btw|by the way|anyway|yeah|yes|yep|no|nope|okay|ok|fyi|"
    r"honestly|basically|just so you know|for the record|heads up|update|note|fun fact|hmm|wow|cool|great|"
    r"haha|lol|ha)\b[,:!.]*\s+)+",
    re.IGNORECASE,
)
_PROJECT_HINT = re.compile(
    r"(?i)^(?:the|our)\s+[\w'-]+(?:\s+[\w'-]+){0,3}\s+(?:runs|listens|uses|is|are|depends|"
    r"defaults|talks|connects|lives|stores)\b"
)


_STATEMENT = re.compile(
    r"(?i)\b(?:is|are|uses|use|runs|run|has|have|must|should|never|always|lives|depends|"
    r"requires|needs|stores|keeps|owns|handles)\b"
)


def sentences(text: str) -> Iterator[str]:
    """The sentences of a text, whitespace collapsed, list markers and fillers removed."""
    pieces = _FENCE.split(text)
    fences = _FENCE.findall(text)
    for n, piece in enumerate(pieces):
        yield from _split(piece)
        if n < len(fences):
            yield fences[n].strip()  # a fenced block stays whole: one candidate, rejected as code


def _split(text: str) -> Iterator[str]:
    # Each line is split on its own (a chat line or a list item ends a sentence), by sentencex,
    # which knows abbreviations ("Dr. Patel", "e.g. staging") that a punctuation rule cuts.
    for part in (p for line in text.split("\n") for p in segment("en", line)):
        s = " ".join(part.split())
        s = re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", s)
        s = without_lead_in(_FILLER.sub("", without_lead_in(s))).strip()  # "Quick update:", "So, FYI:"
        if s:
            yield s


_TRAILING = re.compile(r"(?i)[,\s]+(?:now|these days|nowadays|anymore|as well|too|though|actually|lately)$")


def _clean_object(o: str) -> str:
    o = o.strip().rstrip(".!;,").strip()
    o = _TRAILING.sub("", o)
    return o.strip("\"'`").strip()


def _claim(sentence: str, speaker: str) -> tuple[str, Triple | None] | None | Reason:
    """The first matching claim and its triple; a Reason when its predicate is unusable; None: no claim."""
    sentence = sentence.rstrip(".!;, ")
    for pat in _PATTERNS:
        m = pat.regex.match(sentence)
        if m is None:
            continue
        groups = m.groupdict()
        rest = sentence[m.end() :].split()
        if pat.claim == "preference" and "o" not in groups and (not rest or rest[0].lower().strip(",") in _ABOUT_YOU):
            return None  # "I love it", "I love how you ...": a reaction, not the speaker's preference
        if "o" not in groups:
            return pat.claim, None
        obj = _clean_object(groups["o"])
        predicate = pat.predicate or (groups.get("p") or "").lower()
        if "ctx" in groups:
            predicate = f"prefers for {groups['ctx'].lower()}"
        elif pat.claim == "preference" and groups.get("p"):
            predicate = f"favorite {predicate}"
        subject = _clean_object(groups.get("s") or speaker)
        if pat.claim == "project" and pat.regex.pattern.startswith("^our"):
            subject, predicate = f"our {predicate}", "is"
        if not predicate_ok(predicate) or not object_ok(obj) or not subject:
            return "malformed_predicate"
        if obj.split()[0].lower() in _DEGREE:
            return None  # "my kids are so excited": a passing state, not a fact
        claim = pat.claim
        if claim == "personal" and predicate in _IDENTITY_SLOTS:
            claim = "identity"
        return claim, Triple(subject, predicate, obj)
    return None


def judge(
    sentence: str, *, speaker: str, ref: str, claim: str | None = None, title: str | None = None, strict: bool = True
) -> Candidate | None:
    """The verdict on one sentence, or None when it is not a candidate at all.

    `claim` is a claim the source's structure already makes (a note under an intent heading, a
    documented declaration): the sentence then only has to pass the screens. `strict` (conversations)
    proposes first-person and project-fact sentences only; notes propose every declarative sentence.
    """
    if sentence.endswith("?"):
        return None
    base = Candidate(text=sentence, ref=ref, title=title)
    reason: Reason | None = screen(sentence)
    if reason is not None:
        return msgspec.structs.replace(base, reason=reason)
    if claim is not None:
        found = _claim(sentence, speaker)
        triple = found[1] if isinstance(found, tuple) else None
        return msgspec.structs.replace(base, claim=claim, kind=CLAIM_KINDS[claim], triple=triple)
    if strict and not mentions_self(sentence) and not _PROJECT_HINT.match(sentence):
        return None
    if len(sentence.split()) < 3:
        return None if strict else msgspec.structs.replace(base, reason="no_claim")
    reason = remark(sentence)
    if reason is not None:
        return msgspec.structs.replace(base, reason=reason)
    found = _claim(sentence, speaker)
    if isinstance(found, str):
        return msgspec.structs.replace(base, reason=found)
    if found is None:
        if is_event(sentence):
            return msgspec.structs.replace(base, reason="event")
        if not strict and _STATEMENT.search(sentence) and len(sentence.split()) >= 4:
            return msgspec.structs.replace(base, claim="note", kind=CLAIM_KINDS["note"])
        return msgspec.structs.replace(base, reason="no_claim")
    name, triple = found
    return msgspec.structs.replace(base, claim=name, kind=CLAIM_KINDS[name], triple=triple)


def propose(
    text: str, *, speaker: str, ref: str, claim: str | None = None, title: str | None = None, strict: bool = True
) -> list[Candidate]:
    """Every candidate in a text (a message, a note paragraph, a docstring), each with its verdict."""
    found = []
    for sentence in sentences(text):
        c = judge(sentence, speaker=speaker, ref=ref, claim=claim, title=title, strict=strict)
        if c is not None:
            found.append(c)
    return found
