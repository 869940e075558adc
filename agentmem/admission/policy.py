"""The admission policy: which statements may never become a memory, and why (a fixed set of reasons).

The screens run on one statement (a sentence, a note line, a docstring paragraph) before any
claim is looked for. Each returns one reason from `REASONS` or None; they are regular
expressions and small word lists, deterministic and cheap.

    path                 the statement is a file path (little else is left once paths are removed)
    command              a shell command (`$ ...`, or a known tool with arguments, pipes or flags)
    code                 source code (definitions, imports, statements ending in `;`, `=>`, fences)
    generated_output     logs, tracebacks, test or build output, tables, long hashes, walls of text
    secret               something that looks like a password, token or API key
    procedural           talk about the session itself: "let me check", "next, ...", "thanks"
    hypothetical         wishes, plans and conditions: "if we ...", "maybe", "I might", "I hope"
    event                something that happened, phrased as an action: "I ran the tests"
    malformed_predicate  the claim's predicate (or object) is not a usable slot
    no_claim             none of the claim patterns matched
    invalid              the store refused it (e.g. a field out of bounds)
"""

from __future__ import annotations

import re
from typing import Literal, get_args

Reason = Literal[
    "path",
    "command",
    "code",
    "generated_output",
    "secret",
    "procedural",
    "hypothetical",
    "event",
    "malformed_predicate",
    "no_claim",
    "invalid",
]
REASONS: tuple[str, ...] = get_args(Reason)

MAX_STATEMENT_CHARS = 500  # longer than this is a wall of text, not a claim

_PATH = re.compile(
    r"(?:(?<=\s)|^)[`'\"(]*(?:~|\.{1,2})?(?:/[\w.@+-]+)+/?|[A-Za-z]:\\[\w\\. -]+|\b[\w-]+(?:/[\w.-]+)+\.\w{1,5}\b"
)
_COMMANDS = frozenset(
    """git cd ls ll rm cp mv mkdir rmdir cat less head tail grep rg find sed awk chmod chown sudo apt apt-get brew
    yum dnf pip pip3 pipx python python3 node npm npx yarn pnpm bun deno cargo rustc go make cmake docker
    docker-compose kubectl helm terraform ansible ssh scp rsync curl wget tar zip unzip export source echo touch
    poetry uv pytest ruff mypy black tox conda systemctl journalctl ps kill top htop vim nano code gcc javac java
    mvn gradle bash sh zsh fish psql mysql redis-cli sqlite3 duckdb agentmem""".split()
)
_SUBCOMMANDS = frozenset(
    """install uninstall add remove run exec start stop restart build up down push pull commit clone checkout
    status log diff fetch merge rebase init test apply get describe logs create delete -m -c -v -rf -la -r -f
    -p -i -u -e -n -x --version --help""".split()
)
_CODE = [
    re.compile(p)
    for p in (
        r"```",
        r"^\s*(?:async\s+)?def\s+\w+\s*\(",
        r"^\s*class\s+\w+\s*[(:{]",
        r"^\s*(?:from\s+[\w.]+\s+)?import\s+[\w.*{]",
        r"^\s*(?:export\s+)?(?:const|let|var|function|fn|func|pub|public|private|static)\s+\w+.*[=({]",
        r"^\s*#include\s*[<\"]",
        r"=>\s*[{(\w]",
        r"[;{}]\s*$",
        r"^\s*(?:return|if|for|while)\b.*[:({]\s*$",
        r"\b\w+\s*\([^()]*\)\s*(?:\{|;|->)",
        r"^\s*[\w.\[\]]+\s*(?:[+\-*/]?=|==|!=|:=)\s*[\w\"'\[{(]",
        r"\b(?:console\.log|print|printf|System\.out)\s*\(",
        r"^\s*(?:SELECT|INSERT|UPDATE|DELETE|CREATE)\s+.*\b(?:FROM|INTO|SET|TABLE)\b",
        r"^\s*<\/?\w+[^>]*>",
    )
]
_OUTPUT = [
    re.compile(p)
    for p in (
        r"^\s*Traceback \(most recent call last\)",
        r"^\s*File \"[^\"]+\", line \d+",
        r"^\s*\[?(?:ERROR|WARN(?:ING)?|INFO|DEBUG|TRACE|FATAL)\]?[: ]",
        r"^\s*\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?",
        r"\b\d+ (?:passed|failed|errors?|skipped)\b.*\bin \d+(?:\.\d+)?s\b",
        r"^\s*(?:=|-|\*|#|~){4,}",
        r"^\s*\|.*\|\s*$",
        r"\b[0-9a-f]{32,}\b",
        r"\d+%\|",
        r"^\s*(?:\w+Error|\w+Exception)(?::|\b)",
        r"^\s*at [\w.$<>]+\(.*:\d+\)",
        r"(?i)^\s*(?:as an ai(?: language model)?|"
        r"here(?:'s| is) (?:the|a|an|your) (?:code|output|result|summary|diff|script))",
    )
]
_SECRET = [
    re.compile(p)
    for p in (
        r"(?i)\b(?:api[_-]?key|secret|passw(?:or)?d|passwd|access[_-]?token|auth[_-]?token|private[_-]?key)\b\s*(?:is|[:=])\s*\S{6,}",
        r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}",
        r"\bgh[pousr]_[A-Za-z0-9]{20,}",
        r"\bAKIA[0-9A-Z]{16}\b",
        r"\bxox[baprs]-[A-Za-z0-9-]{10,}",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
        r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.",
    )
]
_PROCEDURAL = re.compile(
    r"(?i)^(?:let me\b|let's (?:see|check|try|look|start|begin|do|run|get)\b|let us\b|one (?:moment|sec(?:ond)?)\b|"
    r"hold on\b|wait\b|ok(?:ay)?\b[,.!]?\s*(?:so|now|next|then|let)?|sure\b|thanks?\b|thank you\b|"
    r"(?:first|next|then|finally|now)\s*,|step \d+|todo\b|fixme\b|note to self\b|"
    r"i(?:'ll| will) (?:now |just |first |quickly )?(?:check|look|try|run|start|fix|update|open|do|see|test|"
    r"search|add|write|create|read|go|make|take|get|send|edit|change|remove|rerun|investigate)\b|"
    r"i(?:'m| am) (?:going to|gonna) (?:check|look|try|run|start|fix|update|open|do|see|test|search|add|write|"
    r"create|read|make|edit|change|remove|investigate)\b|"
    r"(?:please|pls|can you|could you|would you|will you)\b|"
    r"(?:run|open|click|type|paste|copy|press|try|check|see|use) (?:this|that|it|the following|below|above)\b|"
    r"(?:here(?:'s| is| are)|below is|above is|the following)\b|"
    r"(?:sounds good|got it|makes sense|no problem|you're welcome|good (?:morning|night|luck)|hi|hello|hey|bye)\b)"
)
# What someone might do, wants or plans, said of themselves: "I'm (also) thinking of", "I've been
# considering", "we plan to". Matched wherever a clause begins, not only at a sentence's start.
_ADV = r"(?:(?:also|still|really|just|now|currently|actually|seriously|kind of|sort of|even|already)\s+)*"
_INTENT = (
    rf"i {_ADV}(?:wish|hope|might|may|could|would|should|guess|wonder|think we should)\b(?! not\b)|"
    rf"we {_ADV}(?:might|may|could|should|would)\b(?! not\b)|i'd {_ADV}(?:like to|love to|want to|rather)\b|"
    rf"(?:i(?:'m| am)|we(?:'re| are)) {_ADV}(?:thinking (?:of|about)|planning|considering|hoping|not sure)\b|"
    rf"(?:i(?:'ve| have)|we(?:'ve| have)) {_ADV}been {_ADV}"
    r"(?:thinking (?:of|about)|considering|hoping|meaning|planning to)\b|"
    rf"(?:i|we) (?:was|were) {_ADV}(?:thinking|planning|considering|hoping|wondering)\b|"
    rf"(?:i|we) {_ADV}(?:want|plan|intend|need) to\b"
)
_HYPOTHETICAL = re.compile(
    rf"(?i)^(?:if|unless|maybe|perhaps|probably|possibly|hopefully|suppose|what if|in case|{_INTENT})"
)
# A clause that begins with an intent or a hedge makes its sentence hypothetical ("I use vim, but
# I'm thinking of switching": a rule must not read the switch as news). A condition inside a
# statement ("..., but if a release fails we roll back") does not.
_HYPOTHETICAL_CLAUSE = re.compile(rf"(?i)(?:maybe|perhaps|hopefully|what if|{_INTENT})")
# Where a clause begins inside a sentence: after a comma, semicolon, colon or dash, or at a
# conjunction ("..., so I might", "... and we could", "... but I'm also thinking of").
_CLAUSE_START = re.compile(r"(?i)(?:[,;:]|\s[-\u2013\u2014]+)\s*|\b(?:and|but|so|or)\s+")
# Discourse markers a sentence may open with before its remark: "So thanks", "Oh, that's really helpful".
_LEAD = re.compile(
    r"(?i)^(?:(?:so|and|but|or|also|oh|ah|well|anyway|actually|honestly|ok(?:ay)?|yeah|yes|wow|btw|by the way|"
    r"speaking of (?:which|that)|in that case|then|though)\b[,:!.]*\s*)+"
)
# A courtesy to the listener, the whole sentence ("That's really helpful, thanks!", "That's great
# to know", "Great, thanks"): it says how the talk went, not how things are.
_PRAISE = (
    r"(?:great|good|helpful|useful|interesting|cool|nice|awesome|perfect|amazing|fantastic|wonderful|excellent|"
    r"brilliant|fascinating|informative|lovely|neat|super helpful|exactly what i (?:need|needed|was looking for))"
)
_COURTESY = re.compile(
    r"(?i)^(?:(?:that|this|it|which)(?:'s| is| was| sounds| looks| seems)\s+(?:like\s+)?"
    r"(?:(?:really|very|so|super|incredibly|extremely|quite|truly|such|a|an|all)\s+)*"
    rf"{_PRAISE}\b(?:\s+(?:to (?:know|hear)|idea|ideas|tips?|advice|suggestions?|points?|question|info|"
    r"information|news|list|help|recommendations?|start|plan))?|"
    rf"{_PRAISE}\b(?:\s+to (?:know|hear))?|"
    r"(?:thanks?|thank you|cheers|much appreciated|i appreciate (?:it|that|this))\b)"
    r"(?:\s*[,.!;:\-\u2013\u2014]+\s*(?:(?:thanks?|thank you|cheers|i appreciate)\b.*)?)?\s*[.!]*$"
)
_REQUEST = re.compile(r"(?i)^(?:thanks?\b|thank you\b|please\b|pls\b|can you\b|could you\b|would you\b|let me\b)")
_FIRST_PERSON = re.compile(
    r"(?i)\b(?:let's|i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|we'd|we'll|our|ours|us)\b"
)
_PAST = frozenset(
    """went ran did made got took saw wrote built bought came met found had gave told said left began brought caught
    felt kept lost paid sent spent thought won ate drank drove flew forgot heard sold sat slept spoke stood swam
    taught threw understood woke broke chose fell fought grew hid hit hung knew led lent lit meant put quit rode
    rang rose set shook shot shut sang sank slid split spread stole stuck struck swore swept swung tore wore wove
    wept read""".split()
)
_EVENT = re.compile(
    r"(?i)^(?:i|we|me and \w+|\w+ and i)\s+(?:just |finally |already |also |recently |actually |then |even |"
    r"successfully |quickly |first |last |once )*(?P<verb>\w+)\b"
)
_EVENT_PERFECT = re.compile(r"(?i)^(?:i|we)(?:'ve| have)\s+(?:just |finally |already |now |recently )*(?P<verb>\w+)")
_ONGOING = re.compile(r"(?i)^(?:i|we)(?:'m|'re| am| are)\s+(?:just |currently |now |still |busy )*(?P<verb>\w+ing)\b")
_TIME_WORDS = re.compile(
    r"(?i)\b(?:yesterday|today|tonight|last (?:night|week|weekend|month|year|time)|this (?:morning|afternoon|"
    r"evening|week|weekend)|earlier|just now|ago|the other day)\b"
)


def _is_path(s: str) -> bool:
    found = _PATH.findall(s)
    if not found:
        return False
    rest = _PATH.sub(" ", s)
    return len(re.findall(r"[A-Za-z]{2,}", rest)) < 3


def _is_command(s: str) -> bool:
    text = s.strip().strip("`").strip()
    if text.startswith(("$ ", "# ", "> ", "% ", "PS> ")) and len(text) > 2:
        return True
    if "&&" in text or re.search(r"\s\|\s*(?:grep|head|tail|sort|xargs|wc|less|sed|awk)\b", text):
        return True
    words = text.split()
    if len(words) < 2 or words[0] not in _COMMANDS:  # case-sensitive: commands are typed lower-case
        return False
    rest = words[1:]
    return rest[0] in _SUBCOMMANDS or any(w.startswith("-") or "/" in w or "=" in w for w in rest)


def _is_code(s: str) -> bool:
    if "\n" in s.strip() and sum(1 for line in s.splitlines() if line.startswith(("    ", "\t"))) >= 2:
        return True
    return any(p.search(s) for p in _CODE)


def _is_output(s: str) -> bool:
    if len(s) > MAX_STATEMENT_CHARS:
        return True
    if any(p.search(s) for p in _OUTPUT):
        return True
    visible = [c for c in s if not c.isspace()]
    symbols = sum(1 for c in visible if not c.isalpha())
    return len(visible) >= 12 and symbols / len(visible) > 0.45


def screen(statement: str) -> Reason | None:
    """The first reason this statement can never be a memory, whatever it claims; None when it may be one."""
    if any(p.search(statement) for p in _SECRET):
        return "secret"
    if statement.lstrip().startswith(("```", "~~~")):
        return "code"
    if _is_command(statement):
        return "command"
    if _is_path(statement):
        return "path"
    if _is_output(statement):
        return "generated_output"
    if _is_code(statement):
        return "code"
    return None


def remark(statement: str) -> Reason | None:
    """`procedural` or `hypothetical` for talk about the session, or about what might happen.

    Procedural: a request, a step or a courtesy at the sentence's start, also after a discourse
    marker ("So thanks", "Oh, that's really helpful!"); a sentence that is only praise of the
    reply ("That's great to know"). Hypothetical: a condition, a hedge or an intent at its start,
    or an intent or a hedge at the start of any of its clauses ("I'm also thinking of ...",
    "..., so we might ...", "I use vim, but I'm thinking of switching")."""
    s = statement.strip().replace("\u2019", "'")
    lead = _LEAD.sub("", s)
    if _PROCEDURAL.match(s) or _REQUEST.match(lead) or _COURTESY.match(lead):
        return "procedural"
    if _HYPOTHETICAL.match(s) or _HYPOTHETICAL.match(lead):
        return "hypothetical"
    return "hypothetical" if _hedge(s) is not None else None


def _hedge(s: str) -> int | None:
    """Where the first clause after the sentence's start that opens with an intent or a hedge begins."""
    for m in _CLAUSE_START.finditer(s):
        if m.start() > 0 and _HYPOTHETICAL_CLAUSE.match(_LEAD.sub("", s[m.end() :])):
            return m.start()
    return None


def before_hedge(statement: str) -> str:
    """A sentence up to its first clause that opens with an intent or a hedge: "My friend Rachel just
    moved back to the suburbs, so I was thinking of somewhere near a city" states only its first
    clause. The sentence itself when no later clause is one (or nothing stands before it)."""
    s = statement.strip().replace("\u2019", "'")
    cut = _hedge(s)
    if cut is None:
        return statement
    head = s[:cut].rstrip(" ,;:-\u2013\u2014")
    return head + "." if head else statement


def is_event(statement: str) -> bool:
    """A first-person action in the past or in progress: "I ran the tests", "we're deploying now"."""
    m = _EVENT.match(statement)
    if m:
        verb = m.group("verb").lower()
        if verb in _PAST or (verb.endswith("ed") and len(verb) > 4 and verb not in ("need", "used", "based")):
            return True
    m = _EVENT_PERFECT.match(statement)
    if m and m.group("verb").lower() not in ("been", "got", "always", "never", "a", "to"):
        verb = m.group("verb").lower()
        if verb in _PAST or verb.endswith(("ed", "en", "un", "ne", "wn")):
            return True
    m = _ONGOING.match(statement)
    if m and m.group("verb").lower() not in ("thing", "nothing", "something", "everything"):
        return True
    return bool(_FIRST_PERSON.search(statement) and _TIME_WORDS.search(statement))


def mentions_self(statement: str) -> bool:
    """First person: the speaker (or their team) talking about themselves."""
    return bool(_FIRST_PERSON.search(statement))


_STOP = frozenset("a an the of to in on at for and or but with by is are was were be it this that".split())
_VAGUE = frozenset("it this that these those them one thing stuff something anything everything".split())


def predicate_ok(predicate: str) -> bool:
    """A usable slot name: one to four words of letters, not starting or ending with a stop word."""
    if predicate in ("is", "are"):
        return True
    words = predicate.split()
    if not 1 <= len(words) <= 4 or len(predicate) > 40:
        return False
    if not all(re.fullmatch(r"[A-Za-z][A-Za-z'-]*", w) for w in words):
        return False
    return words[0].lower() not in _STOP - {"is"} and words[-1].lower() not in _STOP - {"in", "on", "at", "to"}


def object_ok(obj: str) -> bool:
    """An object that says something: not empty, not a bare pronoun, not a paragraph."""
    words = obj.split()
    return 0 < len(words) <= 20 and " ".join(words).lower().strip(".!") not in _VAGUE
