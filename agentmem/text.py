"""Text normalisation for supersession: tokens, Snowball stemming, Jaccard, content hashes."""

from __future__ import annotations

import hashlib
import re
import threading
import unicodedata
from functools import lru_cache

import Stemmer

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


# Snowball's English stemmer (Porter2), the C build from PyStemmer. It replaced a hand-written
# suffix stripper that left "postgre" and "runn" (figures: docs/design/libraries.md).
# A PyStemmer object is not thread-safe: each thread gets its own (request threads and the writer).
_SNOWBALL = threading.local()


def _snowball() -> Stemmer.Stemmer:
    stemmer = getattr(_SNOWBALL, "stemmer", None)
    if stemmer is None:
        stemmer = _SNOWBALL.stemmer = Stemmer.Stemmer("english", 0)  # no cache of its own: stem() has one
    return stemmer


@lru_cache(maxsize=65_536)
def stem(token: str) -> str:
    """The Snowball English stem of a word; words of three letters or fewer and numbers stay as they are.

    >>> [stem(w) for w in ("running", "moved", "policies", "postgres", "its", "3000")]
    ['run', 'move', 'polici', 'postgr', 'its', '3000']
    """
    if len(token) <= 3 or token.isdigit():
        return token
    return str(_snowball().stemWord(token))


def fold_accents(text: str) -> str:
    """`text` in compatibility decomposition without its combining marks ("café" -> "cafe");
    ASCII text is returned as it is (decomposition leaves it unchanged)."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def folded_words(text: str) -> list[str]:
    """Lowercased, accent-folded, punctuation-free words, unstemmed."""
    folded = fold_accents(text.casefold()).replace("'", "").replace("\u2019", "")
    return _TOKEN.findall(folded)


def tokens(text: str) -> list[str]:
    """`folded_words`, stemmed.

    >>> tokens("We moved to Postgres; it's running!")
    ['we', 'move', 'to', 'postgr', 'its', 'run']
    """
    return [stem(t) for t in folded_words(text)]


@lru_cache(maxsize=65_536)
def token_set(text: str) -> frozenset[str]:
    """The set of `tokens(text)`, cached: supersession compares each new text with the same
    current memories again and again."""
    return frozenset(tokens(text))


def normalise(text: str) -> str:
    """The tokens joined by single spaces: two texts that normalise equal say the same thing."""
    return " ".join(tokens(text))


def identity(text: str) -> str:
    """What makes two memories the same content: their normalised tokens, or, for a text with no
    tokens at all (emoji, symbols, control characters), the text itself with its spacing folded."""
    return normalise(text) or " ".join(text.split())


def slot_of(subject: str, predicate: str) -> str:
    """The triple slot: a new object for the same subject and predicate replaces the old one."""
    return f"{normalise(subject)}|{normalise(predicate)}"


def jaccard(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    """|a & b| / |a | b|, and 0.0 for two empty sets."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# A lead-in label says that news follows, not what it is about: "Quick update: we're on Render
# now", "FYI, ...", "Heads up - ...". Read as words, its "Quick" or "FYI" looks like a new value
# (a name at the start of a sentence), so the rules and claims read a statement without it.
_LEAD_IN = re.compile(
    r"(?i)^\s*(?:(?:(?:quick|small|brief|short|little|important|big|minor|major|latest|final|friendly|one more|"
    r"another|status|team|project)\s+)?(?:update|note|heads[- ]up|fyi|psa|reminder|correction|news flash|tl;?dr|"
    r"nb|ps|btw|edit|side note|fun fact|for the record|just so you know|change of plans?)\s*[:\-\u2013\u2014]+|"
    r"(?:quick update|fyi|heads[- ]up|psa|btw|ps|nb)\s*[,!]+|(?:p\.s\.|n\.b\.|f\.y\.i\.))\s+"
)


def without_lead_in(text: str) -> str:
    """`text` without a leading label that announces news ("Quick update:", "FYI:", "Heads up -")."""
    m = _LEAD_IN.match(text)
    return text[m.end() :] if m and text[m.end() :].strip() else text
