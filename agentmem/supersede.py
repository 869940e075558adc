"""The rules that decide whether a new memory is new, repeats a current one, or replaces one.

In order: the same key, the same triple slot, the same normalised content (reinforce), then a
restatement, a stated move, a new answer to the same question, or the same slot with a new value.
Events and observations take no part. A key is an identity, never a guess: a memory with a key
meets only the memory filed under that key, and one without a key never meets a keyed one.
Thresholds are `Thresholds`. The rules with examples:
docs/concepts/supersession.md; how each was chosen: docs/design/modules.md#supersede.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

import msgspec

from agentmem.records import MemoryVersion, NearDuplicate, Outcome
from agentmem.text import fold_accents, identity, jaccard, normalise, slot_of, stem, token_set, without_lead_in

NEVER_SUPERSEDED = frozenset({"event", "observation"})

# Words that carry no subject: function words, and the words people use to announce that a
# value is new ("we moved standups to 10:30", "it's on port 4000 now"). Negation stays a word.
STOPWORDS = frozenset(
    """a an the this that these those it its is are was were be been being am do does did has have had
    will would shall should can could may might must to of in on at for by with from as into onto over
    under about and or but so than then there here we our ours us you your yours they their theirs them
    i me my he him his she her hers now currently current today anymore still also just again already
    new newly move moves moved moving switch switches switched switching change changes changed changing
    migrate migrates migrated migrating upgrade upgrades upgraded upgrading update updates updated
    updating bump bumps bumped set raise raised lower lowered increase increased decrease decreased
    reduce reduced extend extended postpone postponed delay delayed rename renamed replace replaced
    scale scaled relocate relocated transfer transferred swap swapped all after before starting effective
    forward dr mr mrs ms prof""".split()
)
NUMBER_WORDS = frozenset(
    """zero one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty
    fifty sixty hundred thousand million billion once twice first second third fourth fifth""".split()
)
# What says a claim is how things stand now: a change is often stated with nothing else
# ("we're on 4000 now", "on call this week: Sofia"). A period after "this"/"these" is one too.
NOW_WORDS = frozenset("now nowadays currently presently anymore".split())
# Past forms that say a value was replaced ("we switched to", "X replaced Y", "moved to"); the
# present and progressive forms also describe actions ("a man is moving a box").
CHANGE_WORDS = frozenset(
    """switched moved migrated replaced replaces swapped instead changed upgraded relocated transferred""".split()
)
# Words that retract a claim: "we no longer use Y", "I don't use Y anymore", "we stopped using Y".
NEGATION = frozenset("no not dont doesnt didnt isnt arent wasnt werent never longer".split())
RETRACT_WORDS = frozenset("stopped quit".split())
_PERIODS = frozenset("day days week weeks month months quarter sprint year".split())
# What says the next word is the action a text states: "is slicing", "are being cut", "I'm running",
# "has been moved". After "being" / "been" any word is the action (a participle: "being cut").
# "I'm", "I've", "I'd", "I'll" with the apostrophe folded away: the pronoun "I", a stopword, not a
# capitalised name (mid-sentence, "By the way, I've ..." read as the value "ive").
I_CONTRACTED = frozenset({"Im", "Ive", "Id", "Ill"})
AUX = frozenset("is are was were am be been being im youre theyre hes shes".split())
_PASSIVE = frozenset({"being", "been"})
PRONOUNS = frozenset("i we you they he she".split())  # subjects: the word after one is a verb
# Words that may stand between the auxiliary and the action ("is not slicing", "is now running");
# an adverb in -ly too ("is shrewdly digging").
_BETWEEN = frozenset("not never also still just already again always really currently now".split())
_THIS = frozenset({"this", "these"})
COPULAS = frozenset({"is", "are", "was", "were"})
DEFINITE = frozenset("the my our your their his her its this that these those".split())
DETERMINERS = DEFINITE | {"a", "an"}
# Irregular verb forms a suffix stripper cannot meet ("is led by" / "leads").
IRREGULAR = dict(
    pair.split(":")
    for pair in """led:lead ran:run built:build went:go gone:go made:make kept:keep held:hold took:take taken:take
    gave:give given:give sent:send paid:pay bought:buy wrote:write written:write chose:choose chosen:choose
    began:begin begun:begin grew:grow grown:grow knew:know known:know met:meet brought:bring taught:teach
    sold:sell told:tell said:say found:find spent:spend stood:stand shown:show drove:drive driven:drive
    ate:eat eaten:eat broke:break broken:break spoke:speak spoken:speak flew:fly flown:fly froze:freeze
    frozen:freeze got:get gotten:get heard:hear threw:throw thrown:throw wore:wear worn:wear drew:draw
    drawn:draw hung:hang sang:sing sung:sing""".split()
)
_SPLIT = re.compile(r"([^\W_]+)", re.UNICODE)
_OWNER = re.compile(r"\b([a-z]+)'s\b|\b([a-z]+s)'(?!\w)")  # "my partner's", "the kids'"; not a name
_SENTENCE_ENDS = tuple(".!?:;")  # a word after one of these (and spacing) starts a sentence


class Thresholds(msgspec.Struct, frozen=True):
    """When a plain-text memory replaces another (see the module docstring).

    `supersede` and `hint` are Jaccard similarities of normalised tokens: a restatement
    needs `supersede` (and `restate_cosine`); from `hint` up a current memory is named as a
    near duplicate. `value_cosine` is the cosine a same-slot, new-value change needs, and
    `marked_cosine` the one it needs when the new text says it is how things stand now
    ("... now", "... this week"); `value_rule=False` turns that rule off. Cosines apply
    when the caller knows them.
    """

    supersede: float = 0.7
    hint: float = 0.4
    max_hints: int = 5
    restate_cosine: float = 0.8
    value_cosine: float = 0.4
    marked_cosine: float = 0.3
    value_rule: bool = True

    def __post_init__(self) -> None:
        if not 0.0 < self.hint <= self.supersede <= 1.0:
            raise ValueError("thresholds need 0 < hint <= supersede <= 1")
        if not all(-1.0 <= c <= 1.0 for c in (self.restate_cosine, self.value_cosine, self.marked_cosine)):
            raise ValueError("cosine thresholds need -1 <= cosine <= 1")


class Decision(msgspec.Struct, frozen=True):
    """What a write does: create, reinforce `target`, or supersede it (the new version continues its
    lineage). `also`: other current memories the new text retires with it, each with its Jaccard
    similarity: those that ask the new text's question with another answer (`NEW_ANSWER`)."""

    outcome: Outcome
    target: MemoryVersion | None = None
    reason: str | None = None
    similarity: float | None = None
    near: list[NearDuplicate] = []
    also: tuple[tuple[MemoryVersion, float], ...] = ()


NEW_ANSWER = "new answer"


class Words(msgspec.Struct, frozen=True, array_like=True):
    """A text's content words in order (stopwords dropped), and what the rules read off them."""

    words: tuple[str, ...]
    values: frozenset[str]  # numbers, number words, versions, names: digits, or a capital not at a sentence start
    maybe: frozenset[str] = frozenset()  # capitalised at a sentence start: a name, or just the first word
    now: bool = False  # says it is how things stand now ("now", "currently", "this week")
    copula: int | None = None  # `words[:copula]` is the subject of a definite "X is Y" statement
    light: frozenset[str] = frozenset()  # light verbs used as verbs ("runs", "we use"; not "my work laptop")
    owners: frozenset[str] = frozenset()  # possessors ("my partner's birthday"): they name whose fact it is
    raw: tuple[str, ...] = ()  # each of `words` as written, lower case and accents folded
    linker: str = ""  # the function word after the copula: "on" in "the meeting is on Monday"
    change: bool = False  # a past change verb: "switched to", "X replaced Y", "moved to", "instead"
    retract: bool = False  # says a claim stopped being true: "no longer", "not ... anymore", "stopped"
    actions: frozenset[str] = frozenset()  # the action it states: "slice" in "a man is slicing an onion"
    verbal: frozenset[str] = frozenset()  # words in a verb's form anywhere: "-ing", or after "being"


@lru_cache(maxsize=65_536)  # every word of every sentence read passes here
def _canon(word: str) -> str:
    """`tokens()`'s stem of the word (of its base form, for an irregular verb), with a doubled
    final consonant undone ("running" -> "runn" -> "run")."""
    t = stem(IRREGULAR.get(word, word))
    if len(t) >= 4 and t[-1] == t[-2] and t[-1] not in "aeiouls" and not t[-1].isdigit():
        t = t[:-1]
    return t


# Generic verbs that say little about which slot a value fills ("X uses / runs on / is built
# with React 18", "deploys happen on Tuesday"); ignored only when a value is compared with a value.
LIGHT_VERBS = frozenset(
    _canon(w)
    for w in """use uses used using run runs running ran build builds built building power powers powered
    host hosts hosted go goes went make makes made handle handles handled manage manages managed
    process processes processed keep keeps kept work works worked happen happens happened occur occurs
    occurred""".split()
)

# The words that put a bound on a quantity ("the upload limit is", "uploads are capped at",
# "the maximum upload size", "the API allows 500 requests"); one word when values are compared.
BOUNDS = {_canon(w): "limit" for w in "limit limited cap capped maximum max most ceiling quota allow".split()}
_BOUND_WORDS = frozenset(BOUNDS)


@lru_cache(maxsize=65_536)
def _verb_form(word: str) -> bool:
    """`word` (lower case) is in a verb's form: "-ing" or "-ed" that the stemmer takes off
    ("slicing", "knocked"; not "king", "red"), or an irregular past ("thrown", "led")."""
    return word in IRREGULAR or (word.endswith(("ing", "ed")) and stem(word) != word)


@lru_cache(maxsize=65_536)  # a pure function of the text; Words is frozen
def words(text: str) -> Words:
    """The content words of `text`; a capitalised word at a sentence start is a plain word
    unless it has digits or inner capitals ("MySQL", "GitHub"), and maybe a name. A lead-in label
    ("Quick update:", "FYI:") is no part of them: its first word would read as a new value."""
    folded = fold_accents(without_lead_in(text)).replace("\u2019", "'")
    owners = {_canon(w) for pair in _OWNER.findall(folded) for w in pair if w and w not in STOPWORDS}  # not "it's"
    folded = folded.replace("'", "")
    out: list[str] = []
    values: set[str] = set()
    maybe: set[str] = set()
    now = change = retract = negated = False
    pending = passive = False  # an auxiliary was just read ("is", "being"): the action may come next
    actions: set[str] = set()
    verbal: set[str] = set()
    copula: int | None = None
    light: set[str] = set()
    raw_words: list[str] = []
    linker = ""
    first = prev = ""
    state = True  # no copula seen yet, or a definite subject with a complement that is no action
    parts = _SPLIT.split(folded)  # spacing and punctuation, a word, spacing and punctuation, ...
    for k in range(1, len(parts), 2):
        gap, raw = parts[k - 1], parts[k]
        low = raw.casefold()
        before, prev, first = prev, low, first or low
        change = change or low in CHANGE_WORDS
        retract = retract or low in RETRACT_WORDS or (low == "longer" and before == "no")
        retract = retract or (low == "anymore" and negated) or (low == "more" and before == "any" and negated)
        negated = negated or (low in NEGATION and low != "longer")
        acting = False  # this word is the action the text states: "is slicing", "is being cut", "is thrown"
        if low in AUX:
            pending, passive = True, low in _PASSIVE
        elif pending and not (low in _BETWEEN or low.endswith("ly")):
            acting, pending, passive = passive or _verb_form(low), False, False
        if low in NOW_WORDS or (low in _PERIODS and before in _THIS):
            now = True
            continue
        if low in COPULAS and copula is None:
            copula = len(out)
            state = first in DEFINITE  # "the default branch", "my diet"; not "a man", not "Marco"
            continue
        if low in STOPWORDS or raw in I_CONTRACTED:
            if copula is not None and copula == len(out) and not linker:
                linker = low
            continue
        if copula is not None and copula == len(out) and low.endswith("ing"):
            state = False  # "the man is playing": an action, not a state
        t = _canon(low)
        out.append(t)
        raw_words.append(low)
        if acting:
            actions.add(t)
        if acting or _verb_form(low) or before in PRONOUNS:
            verbal.add(t)  # "we manage feature flags": after a subject pronoun, a verb
        if t in LIGHT_VERBS and before not in DETERMINERS:
            light.add(t)  # a verb ("runs", "we use"), not a noun ("my work laptop", "the build")
        tail = raw[1:]  # the C-level tests first: a word of letters alone has no digit, a lower-case tail no capital
        capital = raw[0].isupper()
        if (
            (not raw.isalpha() and any(c.isdigit() for c in raw))
            or low in NUMBER_WORDS
            or (tail != low[1:] and any(c.isupper() for c in tail))
            or (capital and gap and gap.rstrip()[-1:] not in _SENTENCE_ENDS)  # a capital not at a sentence start
        ):
            values.add(t)
        elif capital:
            maybe.add(t)
    return Words(
        tuple(out), frozenset(values), frozenset(maybe), now, copula if state else None, frozenset(light),
        frozenset(owners), tuple(raw_words), linker, change, retract, frozenset(actions), frozenset(verbal),
    )  # fmt: skip


def _named(a: Words, b: Words) -> tuple[Words, Words]:
    """`a` and `b` with each sentence-initial capitalised word the other text lacks read as a
    value: "Tom is the product manager" names Tom when the other text never says "tom"."""
    wa, wb = set(a.words), set(b.words)
    return (
        msgspec.structs.replace(a, values=a.values | (a.maybe - wb)),
        msgspec.structs.replace(b, values=b.values | (b.maybe - wa)),
    )


def carried(old: str, new: str) -> str:
    """The words of `old` that still describe what `new` (its successor) is about: its content
    words less the values `new` no longer has. The search index keeps them with `new`, so a
    memory restated briefly ("we're on 4000 now") is still found by how its slot was described
    ("the dev server port"), and never by a dead value."""
    o, keep = words(old), set(words(new).words)
    dead = o.values | o.maybe | (set(o.words[o.copula :]) if o.copula is not None else set())
    return " ".join(r for w, r in zip(o.words, o.raw, strict=True) if w not in dead or w in keep)


def _runs(seq: Sequence[str], picked: set[str]) -> list[tuple[int, int]]:
    """Maximal runs [start, end) of consecutive positions of `seq` whose word is in `picked`."""
    runs: list[tuple[int, int]] = []
    for i, w in enumerate(seq):
        if w in picked:
            if runs and runs[-1][1] == i:
                runs[-1] = (runs[-1][0], i + 1)
            else:
                runs.append((i, i + 1))
    return runs


def same_roles(a: Words, b: Words) -> bool:
    """No word is the action one text states and, in the other, only a thing or a quality: "a man
    is slicing an onion" is not "a man is eating onion slices", nor "a person is eating a cut onion"
    (the stems meet, the claims do not). A word in a verb's form in both ("is being cut" / "is
    cutting") keeps its role."""
    return not ((a.actions & set(b.words)) - b.verbal or (b.actions & set(a.words)) - a.verbal)


def _compare(a: Words, b: Words, loose: bool = False) -> tuple[bool, set[str], set[str]]:
    """Whether the descriptive (non-value) words of one text are all among the other's (and the
    texts share a word); and the value words `b` gains and loses against `a`. `loose` (when a
    value is compared with a value) ignores light verbs, reads every word of a bound as one and
    lets a word change role ("is led by Alice" / "the team lead is Priya"); otherwise each word
    keeps its role (`same_roles`)."""
    values = a.values | b.values
    wa, wb = set(a.words), set(b.words)
    na, nb = wa - values, wb - values
    if loose:
        na, nb = {BOUNDS.get(w, w) for w in na - a.light}, {BOUNDS.get(w, w) for w in nb - b.light}
    # one text's descriptive words are among the other's; and the new text adds few of its own
    # (a change is often said more briefly, "we're on Node 20 now"; many new words are another subject)
    same = bool(wa & wb) and (nb <= na or (na <= nb and len(nb - na) <= len(na) // 2))
    same = same and a.owners <= wb and b.owners <= wa and (loose or same_roles(a, b))
    return same, (wb & values) - wa, (wa & values) - wb


def _numeric(word: str) -> bool:
    return any(c.isdigit() for c in word) or word in NUMBER_WORDS


def new_value(a: Words, b: Words) -> bool:
    """`b` gives the slot `a` describes a new value: one run of value words differs, of the same
    shape (a number for a number, a name for a name), and the descriptive words match."""
    return _new_value(a, b) or _new_value(*_named(a, b))


def _new_value(a: Words, b: Words) -> bool:
    same, gained, lost = _compare(a, b, loose=True)
    if not same or not gained:
        return False
    runs_b, runs_a = _runs(b.words, gained), _runs(a.words, lost)
    if len(runs_b) != 1 or len(runs_a) != 1:
        return False  # a value replaces a value: "my sister is a doctor" / "... is in Berlin" adds one
    run_a = a.words[runs_a[0][0] : runs_a[0][1]]
    run_b = b.words[runs_b[0][0] : runs_b[0][1]]
    if any(map(_numeric, run_a)) != any(map(_numeric, run_b)):
        return False  # "Python 3.12" -> "SQLAlchemy": another slot, not a new value
    values = a.values | b.values
    if _mark(a.words, runs_a[0], values) != _mark(b.words, runs_b[0], values):
        return False  # the values both keep sit elsewhere: "fact 12 about 28" is not "fact 28 about 732"
    leading = runs_b[0][0] == 0 and runs_a[0][0] == 0
    # "Alice is on call" / "Bob is on call": the subject differs, not a value; unless only the
    # new text says that this is how it is now ("Bob is on call now")
    return not leading or (b.now and not a.now)


_NOT = NEGATION | {_canon(w) for w in RETRACT_WORDS}  # what a retraction says besides its subject


def moved(a: Words, b: Words) -> bool:
    """`b` says outright that the slot `a` describes moved on (see the module docstring): "We
    deploy the shop API on Fly.io" -> "We're on Render now for the shop API", "We use Jenkins for
    CI" -> "GitHub Actions replaced Jenkins", "We no longer use Jenkins"."""
    if not ((b.now and not a.now) or b.change or b.retract):
        return False  # both say "this week": two names for two weeks, not a move
    return _moved(a, b) or _moved(*_named(a, b))


def _moved(a: Words, b: Words) -> bool:
    values = a.values | b.values
    wa, wb = set(a.words) - _NOT, set(b.words) - _NOT
    na = {BOUNDS.get(w, w) for w in wa - values - a.light}
    nb = {BOUNDS.get(w, w) for w in wb - values - b.light}
    same = bool(wa & wb) and (nb <= na or (na <= nb and len(nb - na) <= len(na) // 2))
    if not (same and a.owners <= wb and b.owners <= wa):
        return False
    gained, lost, kept = (wb & values) - wa, (wa & values) - wb, wa & wb & values
    if b.retract:
        # "we no longer use Jenkins" drops `a`'s value (and may name what came instead: "we don't
        # use Jira anymore; bugs go in Linear"); "we no longer use Travis" drops another one
        return bool(kept) and not (gained and lost)
    runs_b, runs_a = _runs(b.words, gained), _runs(a.words, lost)
    if len(runs_b) != 1 or len(runs_a) > 1:
        return False  # more than one value changes: another subject ("the iOS team" / "the web team")
    if lost:
        run_a = a.words[runs_a[0][0] : runs_a[0][1]]
        return any(map(_numeric, run_a)) == any(_numeric(w) for w in gained)
    # nothing of `a`'s values is gone: `b` names the old value as what it replaced
    return b.change and bool(kept)


def described_alike(a: Words, b: Words) -> bool:
    """False only where `new_value(a, b)` and `moved(a, b)` both are, read from what both need first:
    the descriptive words of one text, read loosely, all among the other's. Any value or capitalised
    word may be a value there (`_named`), so only the words that are neither count. A few
    microseconds, where the rules take tens: recall's slot test asks it of every pair of hits first."""
    marked = a.values | b.values | a.maybe | b.maybe
    return _among(b, _loose(a), marked) or _among(a, _loose(b), marked)


@lru_cache(maxsize=65_536)
def _loose(w: Words) -> frozenset[str]:
    """The words of `w` as `_compare(loose=True)` and `_moved` read them, values and all."""
    return frozenset(BOUNDS.get(x, x) for x in set(w.words) - w.light)


@lru_cache(maxsize=65_536)
def _descriptive(w: Words) -> frozenset[str]:
    """The words of `w` that `_among` reads: no light verb, no negation."""
    return frozenset(w.words) - w.light - _NOT


def _among(w: Words, other: frozenset[str], marked: frozenset[str]) -> bool:
    """Each descriptive word of `w` but the `marked` ones is among `other`, a bound word as what it reads as."""
    rest = _descriptive(w) - marked
    if rest.isdisjoint(_BOUND_WORDS):
        return rest <= other  # most texts: no bound word, so one set test
    return rest - _BOUND_WORDS <= other and all(BOUNDS[x] in other for x in rest & _BOUND_WORDS)


MAX_ANSWER_WORDS = 20


def asked(query: str) -> str | None:
    """The question a query asks, normalised as `question_slot` reads a stored question (the "?" aside),
    when it has two words or more."""
    q = normalise(query.strip().rstrip("?"))
    return q if len(q.split()) >= 2 else None


@lru_cache(maxsize=65_536)
def question_slot(text: str) -> tuple[str, str] | None:
    """(question, answer), normalised, of a text that is one question and its short answer:
    "Who is the education minister of Bihar? Vijay Kumar Choudhary." Else None."""
    head, mark, answer = text.partition("?")
    if not mark or "?" in answer:
        return None
    q, a = normalise(head), normalise(answer)
    if len(q.split()) < 2 or not a or len(a.split()) > MAX_ANSWER_WORDS:
        return None
    return q, a


def new_state(a: Words, b: Words) -> bool:
    """`b` says the same definite subject now is something else: "The default branch is master"
    -> "The default branch is main now". Nothing of the complement is kept, it is no action
    ("the man is playing a guitar"), no indefinite subject ("a man is sleeping"), and both
    complements open alike ("is on Monday" / "is in room 4" are two facts about a meeting)."""
    if a.copula is None or b.copula is None or a.linker != b.linker:
        return False
    subject_a, subject_b = a.words[: a.copula], b.words[: b.copula]
    rest_a, rest_b = set(a.words[a.copula :]), set(b.words[b.copula :])
    same_subject = bool(subject_a) and sorted(subject_a) == sorted(subject_b)
    plain = not (rest_a & a.values or rest_b & b.values)  # a value is new_value()'s to judge
    return same_subject and plain and bool(rest_a and rest_b) and not rest_a & rest_b


def _mark(seq: Sequence[str], run: tuple[int, int], values: frozenset[str]) -> list[str]:
    """The value words of `seq` in order, with `run` replaced by one marker."""
    out: list[str] = []
    for i, w in enumerate(seq):
        if run[0] <= i < run[1]:
            if i == run[0]:
                out.append("\0")
        elif w in values:
            out.append(w)
    return out


def same_values(a: Words, b: Words) -> bool:
    """`b` restates `a`'s values in other words: the same value words, the descriptive words match."""
    same, gained, lost = _compare(a, b, loose=True)
    return same and bool(set(a.words) & (a.values | b.values)) and not gained and not lost


def restates(a: Words, b: Words) -> bool:
    """`b` says what `a` says, maybe with more or fewer words: no descriptive word is swapped for
    another, no value is swapped for another, and the words both hold come in the same order
    (words as a set cannot tell "a man is dancing and kids are looking" from its swap)."""
    same, gained, lost = _compare(a, b)
    return same and not (gained and lost) and _in_order(a.words, b.words)


def _in_order(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """The words `a` and `b` share come in the same order in both (each at its first place)."""
    shared = set(a) & set(b)
    return list(dict.fromkeys(w for w in a if w in shared)) == list(dict.fromkeys(w for w in b if w in shared))


def decide(
    *,
    kind: str,
    content: str,
    key: str | None = None,
    slot: str | None = None,
    triple_object: str | None,
    keyed: MemoryVersion | None,
    slotted: MemoryVersion | None,
    exact: MemoryVersion | None,
    candidates: Sequence[MemoryVersion],
    thresholds: Thresholds,
    cosines: Mapping[int, float] | None = None,
    read: Mapping[int, tuple[Words, tuple[str, str] | None]] | None = None,
    beside: Callable[[str, str], bool] | None = None,
) -> Decision:
    """Apply the rules to current memories of the same project found by key, slot, content and search.

    `cosines` maps candidate ids to the cosine similarity of their embedding with the new
    memory's; when it is given, a candidate missing from it counts as dissimilar (cosine 0).
    `read`: what was read of candidates' texts when they were written (their `words` and
    `question_slot`, by id: their stored analyses); the others are read now. `beside(older, newer)`:
    whether a learned reader says the new text states a fact beside a candidate's ("also"); the
    value rules then leave the candidate current (`pair.PairModel.adds_beside`).
    """
    new_tokens = token_set(content)

    def other_slot(c: MemoryVersion) -> bool:
        """Two memories filed under different keys (or triple slots) are different facts; a key is
        an identity, so a keyed memory and one without a key are different facts too."""
        c_slot = slot_of(c.triple.subject, c.triple.predicate) if c.triple else None
        return bool(((key or c.key) and c.key != key) or (slot and c_slot and c_slot != slot))

    candidates = [c for c in candidates if not other_slot(c)]
    scored = sorted(
        ((jaccard(new_tokens, token_set(c.content)), c) for c in candidates),
        key=lambda sc: (-sc[0], -sc[1].id),
    )

    def hints(*skip: int) -> list[NearDuplicate]:
        return [
            NearDuplicate(id=c.id, similarity=round(s, 4), content=c.content)
            for s, c in scored
            if c.id not in skip and thresholds.hint <= s < thresholds.supersede
        ][: thresholds.max_hints]

    if kind in NEVER_SUPERSEDED:
        return Decision("created", near=hints())
    norm = identity(content)
    for target, reason in ((keyed, "key"), (slotted, "triple")):
        if target is None or target.kind in NEVER_SUPERSEDED:
            continue
        same = identity(target.content) == norm or (
            reason == "triple"
            and triple_object is not None
            and target.triple is not None
            and identity(target.triple.object) == identity(triple_object)
        )
        if same:
            return Decision("reinforced", target=target, reason=reason, similarity=1.0)
        sim = round(jaccard(new_tokens, token_set(target.content)), 4)
        return Decision("superseded", target=target, reason=reason, similarity=sim, near=hints(target.id))
    if exact is not None and exact.kind not in NEVER_SUPERSEDED and not other_slot(exact):
        return Decision("reinforced", target=exact, reason="same content", similarity=1.0)

    def cosine(c: MemoryVersion) -> float | None:
        return None if cosines is None else cosines.get(c.id, 0.0)

    new_words = words(content)
    new_slot = question_slot(content)

    def read_of(c: MemoryVersion) -> tuple[Words, tuple[str, str] | None]:
        return (read or {}).get(c.id) or (words(c.content), question_slot(c.content))

    def answered_otherwise(c: MemoryVersion) -> bool:
        """`c` asks the new text's question and gives another answer, as close as a new value needs."""
        if new_slot is None:
            return False  # the new text is no question and answer: its candidates are not read for one
        slot, cos = read_of(c)[1], cosine(c)
        return (
            slot is not None and slot[0] == new_slot[0] and slot[1] != new_slot[1]
            and (cos is None or cos >= thresholds.value_cosine)
        )  # fmt: skip

    def superseding(target: MemoryVersion, reason: str, sim: float) -> Decision:
        """`target` superseded, and with it every other candidate that the new text answers
        otherwise: one write can restate one memory and answer another's question anew (a
        paraphrase merged earlier left the fact's own older answer current)."""
        also = tuple((c, round(s, 4)) for s, c in scored
                     if c.id != target.id and c.kind not in NEVER_SUPERSEDED and answered_otherwise(c))  # fmt: skip
        near = hints(target.id, *(c.id for c, _ in also))
        return Decision("superseded", target=target, reason=reason, similarity=round(sim, 4), near=near, also=also)

    # below every cosine a rule needs, no rule can fire: the candidate's words are not looked at
    marker = new_words.now or new_words.change or new_words.retract
    floor = min(thresholds.restate_cosine, thresholds.value_cosine, thresholds.marked_cosine if marker else 1.0)
    for sim, cand in scored:  # best Jaccard first
        if cand.kind in NEVER_SUPERSEDED:
            continue
        cos = cosine(cand)
        if cos is not None and cos < floor:
            continue
        old_words, old_slot = read_of(cand)
        if new_slot is not None and old_slot is not None and old_slot[1] != new_slot[1]:
            if old_slot[0] != new_slot[0]:
                continue  # another question with another answer: another slot
            if answered_otherwise(cand):
                return superseding(cand, NEW_ANSWER, sim)
        marked = new_words.now and not old_words.now
        value_cosine = thresholds.marked_cosine if marked else thresholds.value_cosine
        if sim >= thresholds.supersede and (cos is None or cos >= thresholds.restate_cosine):
            if restates(old_words, new_words):
                return superseding(cand, "similarity", sim)
        if thresholds.value_rule and (cos is None or cos >= thresholds.restate_cosine):
            if same_values(old_words, new_words):
                return superseding(cand, "same value", sim)
        if not thresholds.value_rule:
            continue
        if ((cos is None or cos >= value_cosine) and new_value(old_words, new_words)) or (
            # a new state says less than a new value: it needs a restatement's cosine
            (cos is None or cos >= thresholds.restate_cosine) and new_state(old_words, new_words)
        ):
            reason = "new value"
        elif (cos is None or cos >= thresholds.marked_cosine) and moved(old_words, new_words):
            reason = "moved"
        else:
            continue
        if beside is None or not beside(cand.content, content):
            return superseding(cand, reason, sim)
    return Decision("created", near=hints())
