"""Recall's currentness stage: the newer statement of a topic first, the older directly under it.

Among the best `window` hits, the pair model, the slot rules and upstream marks pair an older hit
with a newer one; only sure evidence marks it `older_than`. Nothing leaves the reply and nothing
sinks below unrelated memories. Why: docs/design/currentness.md, docs/design/modules.md#currentness-order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import msgspec
import numpy as np

from agentmem.currentness.analysis import Analysis
from agentmem.currentness.pair import PairModel, Window
from agentmem.records import Hit

PAIR_MODEL, SAME_QUESTION, CLAIM_SUPERSEDED = "pair model", "same question", "claim superseded"


def order(
    hits: Sequence[Hit],
    *,
    window: int,
    vectors: Mapping[int, np.ndarray],
    analyses: Mapping[int, Analysis],
    model: PairModel | None,
    rule_pairs: Iterable[tuple[int, int]] = (),
) -> list[Hit]:
    """`hits` (best first) with each topic's newer statements first (see the module docstring).

    `vectors`: the hits' unit vectors by memory id; `analyses`: their texts as written, by memory
    id (a hit without both, such as an event, is ordered by the rules only); `rule_pairs`: (older,
    newer) positions in `hits` that a rule says state one slot."""
    head, tail = list(hits[:window]), list(hits[window:])
    above: dict[int, set[int]] = {}  # position -> positions of newer hits to place above it
    marks: dict[int, dict[int, str]] = {}  # position -> {newer position: reason}

    def relate(i: int, j: int, reason: str | None) -> None:
        above.setdefault(i, set()).add(j)
        if reason is not None:
            marks.setdefault(i, {}).setdefault(j, reason)

    at = {h.memory.id: i for i, h in enumerate(head)}
    asks = [(a := analyses.get(h.memory.id)) is not None and a.question is not None for h in head]
    for i, h in enumerate(head):  # a mark made upstream (claims): under the hit it names, when here
        if h.older_than is not None and (j := at.get(h.older_than)) is not None and j != i:
            relate(i, j, h.older_reason or CLAIM_SUPERSEDED)
    for i, j in rule_pairs:
        if i < len(head) and j < len(head):
            relate(i, j, SAME_QUESTION if asks[i] and asks[j] else None)
    usable = [i for i, h in enumerate(head) if h.memory.id in vectors and h.memory.id in analyses]
    if model is not None and len(usable) >= 2:
        m = np.stack([vectors[head[i].memory.id] for i in usable])
        older, newer = _topic_pairs([head[i] for i in usable], m @ m.T, model.topic, [asks[i] for i in usable])
        if len(older):
            w = Window.of(m, [analyses[head[i].memory.id].words for i in usable])
            ordered, marked = model.judge(w, older, newer)
            for x in np.flatnonzero(ordered).tolist():
                relate(usable[older[x]], usable[newer[x]], PAIR_MODEL if marked[x] else None)
    if not above:
        return list(hits)
    placed: list[int] = []
    done: set[int] = set()

    def place(i: int) -> None:
        done.add(i)
        for j in sorted(above.get(i, ())):
            if j not in done:
                place(j)
        placed.append(i)

    for i in range(len(head)):
        if i not in done:
            place(i)
    out = []
    for i in placed:
        h = head[i]
        if i in marks:
            j, reason = max(marks[i].items(), key=lambda jr: head[jr[0]].memory.valid_from)
            h = msgspec.structs.replace(h, older_than=head[j].memory.id, older_reason=reason)
        out.append(h)
    return out + tail


def _topic_pairs(
    hits: Sequence[Hit], cosines: np.ndarray, topic: float, asks: Sequence[bool]
) -> tuple[np.ndarray, np.ndarray]:
    """(older, newer) positions of hits about one topic: cosine at least `topic`, strictly later,
    not one lineage, not both a question and its answer."""
    when = [h.memory.valid_from for h in hits]
    lineage = [h.memory.lineage_id for h in hits]
    near = (cosines >= topic).tolist()  # a window is a few hits: its pairs are walked in Python
    pairs = [
        (i, j)
        for i, row in enumerate(near)
        for j, close in enumerate(row)
        if close and when[i] < when[j] and lineage[i] != lineage[j] and not (asks[i] and asks[j])
    ]
    if not pairs:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    older, newer = zip(*pairs, strict=True)
    return np.array(older, np.intp), np.array(newer, np.intp)
