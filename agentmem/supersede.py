"""The rules that decide whether a new memory is new, repeats a current one, or replaces one.

In order: the same explicit key, then the same triple slot (subject + predicate), then the
same normalised content (reinforce), then the best current memory that the new one replaces
by its words. A plain-text memory replaces another in two ways:

- *restatement*: Jaccard similarity of normalised tokens at least `supersede`, cosine
  similarity of the embeddings at least `restate_cosine`, and neither memory names a
  subject word the other lacks on both sides (the descriptive words of one are contained
  in the other's: "the staging database ..." never restates "the production database ...");
- *same slot, new value*: the descriptive words match in the same way, and what differs is
  one value: a single run of number, version, name or time tokens ("port 3000" -> "port
  4000", "Jenkins" -> "GitHub Actions"), not in the leading position of both sentences,
  with cosine similarity at least `value_cosine`.

Events and observations never supersede and are never superseded. Memories filed under
different keys or triple slots never meet.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

import msgspec

from agentmem.records import MemoryVersion, NearDuplicate, Outcome
from agentmem.text import identity, jaccard, normalise, stem, tokens

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
    updating bump bumps bumped set""".split()
)
NUMBER_WORDS = frozenset(
    """zero one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty
    fifty sixty hundred thousand million billion once twice first second third fourth fifth""".split()
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCE_END = re.compile(r"[.!?:;]\s*$")


class Thresholds(msgspec.Struct, frozen=True):
    """When a plain-text memory replaces another (see the module docstring).

    `supersede` and `hint` are Jaccard similarities of normalised tokens: a restatement
    needs `supersede` (and `restate_cosine`); from `hint` up a current memory is named as a
    near duplicate. `value_cosine` is the cosine a same-slot, new-value change needs;
    `value_rule=False` turns that rule off. Cosines apply when the caller knows them.
    """

    supersede: float = 0.7
    hint: float = 0.4
    max_hints: int = 5
    restate_cosine: float = 0.8
    value_cosine: float = 0.5
    value_rule: bool = True

    def __post_init__(self) -> None:
        if not 0.0 < self.hint <= self.supersede <= 1.0:
            raise ValueError("thresholds need 0 < hint <= supersede <= 1")
        if not (-1.0 <= self.restate_cosine <= 1.0 and -1.0 <= self.value_cosine <= 1.0):
            raise ValueError("cosine thresholds need -1 <= cosine <= 1")


class Decision(msgspec.Struct, frozen=True):
    outcome: Outcome
    target: MemoryVersion | None = None
    reason: str | None = None
    similarity: float | None = None
    near: list[NearDuplicate] = []


def slot_of(subject: str, predicate: str) -> str:
    """The triple slot: a new object for the same subject and predicate replaces the old one."""
    return f"{normalise(subject)}|{normalise(predicate)}"


class Words(msgspec.Struct, frozen=True):
    """A text's content words in order (stopwords dropped), and those that read as values."""

    words: tuple[str, ...]
    values: frozenset[str]  # numbers, number words, versions, names: digits, or a capital not at a sentence start


def _canon(word: str) -> str:
    """`tokens()`'s stem, with a doubled final consonant undone ("running" -> "runn" -> "run")."""
    t = stem(word)
    if len(t) >= 4 and t[-1] == t[-2] and t[-1] not in "aeiouls" and not t[-1].isdigit():
        t = t[:-1]
    return t


# Generic verbs that say little about which slot a value fills ("X uses / runs on / is built
# with React 18"); ignored only when a value is compared with a value.
LIGHT_VERBS = frozenset(
    _canon(w)
    for w in """use uses used using run runs running ran build builds built building power powers powered
    host hosts hosted go goes went make makes made handle handles handled manage manages managed
    process processes processed keep keeps kept work works worked""".split()
)


def words(text: str) -> Words:
    """The content words of `text`; a capitalised word at a sentence start is a plain word
    unless it has digits or inner capitals ("MySQL", "GitHub")."""
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in folded if not unicodedata.combining(c)).replace("'", "").replace("\u2019", "")
    out: list[str] = []
    values: set[str] = set()
    for m in _WORD.finditer(folded):
        raw = m.group()
        low = raw.casefold()
        if low in STOPWORDS:
            continue
        t = _canon(low)
        out.append(t)
        at_start = m.start() == 0 or bool(_SENTENCE_END.search(folded[: m.start()]))
        if (
            any(c.isdigit() for c in raw)
            or low in NUMBER_WORDS
            or any(c.isupper() for c in raw[1:])
            or (raw[0].isupper() and not at_start)
        ):
            values.add(t)
    return Words(tuple(out), frozenset(values))


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


def _compare(a: Words, b: Words, ignore: frozenset[str] = frozenset()) -> tuple[bool, set[str], set[str]]:
    """Whether the descriptive (non-value) words of one text, less `ignore`, are all among the
    other's (and the texts share a word); and the value words `b` gains and loses against `a`."""
    values = a.values | b.values
    wa, wb = set(a.words), set(b.words)
    na, nb = wa - values - ignore, wb - values - ignore
    same = bool(wa & wb) and (na <= nb or nb <= na)
    return same, (wb & values) - wa, (wa & values) - wb


def _numeric(word: str) -> bool:
    return any(c.isdigit() for c in word) or word in NUMBER_WORDS


def new_value(a: Words, b: Words) -> bool:
    """`b` gives the slot `a` describes a new value: one run of value words differs, of the same
    shape (a number for a number, a name for a name), and the descriptive words match."""
    same, gained, lost = _compare(a, b, LIGHT_VERBS)
    if not same or not gained:
        return False
    runs_b, runs_a = _runs(b.words, gained), _runs(a.words, lost)
    if len(runs_b) != 1 or len(runs_a) > 1:
        return False
    if runs_a:
        run_a = a.words[runs_a[0][0] : runs_a[0][1]]
        run_b = b.words[runs_b[0][0] : runs_b[0][1]]
        if any(map(_numeric, run_a)) != any(map(_numeric, run_b)):
            return False  # "Python 3.12" -> "SQLAlchemy": another slot, not a new value
    values = a.values | b.values
    marked_a = _mark(a.words, runs_a[0] if runs_a else None, values)
    if marked_a != _mark(b.words, runs_b[0], values, marker=bool(runs_a)):
        return False  # the values both keep sit elsewhere: "fact 12 about 28" is not "fact 28 about 732"
    leading = runs_b[0][0] == 0 and (not runs_a or runs_a[0][0] == 0)
    return not leading  # "Alice is on call" / "Bob is on call": the subject differs, not a value


def _mark(seq: Sequence[str], run: tuple[int, int] | None, values: frozenset[str], marker: bool = True) -> list[str]:
    """The value words of `seq` in order, with `run` replaced by one marker (or dropped)."""
    out: list[str] = []
    for i, w in enumerate(seq):
        if run is not None and run[0] <= i < run[1]:
            if marker and i == run[0]:
                out.append("\0")
        elif w in values:
            out.append(w)
    return out


def same_values(a: Words, b: Words) -> bool:
    """`b` restates `a`'s values in other words: the same value words, the descriptive words match."""
    same, gained, lost = _compare(a, b, LIGHT_VERBS)
    return same and bool(set(a.words) & (a.values | b.values)) and not gained and not lost


def restates(a: Words, b: Words) -> bool:
    """`b` says what `a` says, maybe with more or fewer words: no descriptive word is swapped for
    another, and no value is swapped for another."""
    same, gained, lost = _compare(a, b)
    return same and not (gained and lost)


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
) -> Decision:
    """Apply the rules to current memories of the same project found by key, slot, content and search.

    `cosines` maps candidate ids to the cosine similarity of their embedding with the new
    memory's; when it is given, a candidate missing from it counts as dissimilar (cosine 0).
    """
    new_tokens = set(tokens(content))

    def other_slot(c: MemoryVersion) -> bool:
        """Two memories filed under different keys (or triple slots) are different facts."""
        c_slot = slot_of(c.triple.subject, c.triple.predicate) if c.triple else None
        return bool((key and c.key and c.key != key) or (slot and c_slot and c_slot != slot))

    candidates = [c for c in candidates if not other_slot(c)]
    scored = sorted(
        ((jaccard(new_tokens, set(tokens(c.content))), c) for c in candidates),
        key=lambda sc: (-sc[0], -sc[1].id),
    )

    def hints(skip: int | None) -> list[NearDuplicate]:
        return [
            NearDuplicate(id=c.id, similarity=round(s, 4), content=c.content)
            for s, c in scored
            if c.id != skip and thresholds.hint <= s < thresholds.supersede
        ][: thresholds.max_hints]

    if kind in NEVER_SUPERSEDED:
        return Decision("created", near=hints(None))
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
        sim = round(jaccard(new_tokens, set(tokens(target.content))), 4)
        return Decision("superseded", target=target, reason=reason, similarity=sim, near=hints(target.id))
    if exact is not None and exact.kind not in NEVER_SUPERSEDED and not other_slot(exact):
        return Decision("reinforced", target=exact, reason="same content", similarity=1.0)

    def cosine(c: MemoryVersion) -> float | None:
        return None if cosines is None else cosines.get(c.id, 0.0)

    new_words = words(content)
    for sim, cand in scored:  # best Jaccard first
        if cand.kind in NEVER_SUPERSEDED:
            continue
        cos = cosine(cand)
        old_words = words(cand.content)
        if sim >= thresholds.supersede and (cos is None or cos >= thresholds.restate_cosine):
            if restates(old_words, new_words):
                return Decision(
                    "superseded", target=cand, reason="similarity", similarity=round(sim, 4), near=hints(cand.id)
                )
        if thresholds.value_rule and (cos is None or cos >= thresholds.restate_cosine):
            if same_values(old_words, new_words):
                return Decision(
                    "superseded", target=cand, reason="same value", similarity=round(sim, 4), near=hints(cand.id)
                )
        if thresholds.value_rule and (cos is None or cos >= thresholds.value_cosine):
            if new_value(old_words, new_words):
                return Decision(
                    "superseded", target=cand, reason="new value", similarity=round(sim, 4), near=hints(cand.id)
                )
    return Decision("created", near=hints(None))
