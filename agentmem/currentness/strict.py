"""Write time is strict: a rule that retires a memory for a new value needs the pair model's assent.

Superseding at write takes the older memory out of the indexes, so a wrong kill costs most there.
The value rules of `agentmem.supersede` ("new value", "moved") read words; the pair model reads
both sentence vectors. When the model knows the pair (both vectors are its embedder's) and gives
a probability under its `order` threshold, the level 90% of the replacing pairs it was trained on
reach, the two are kept as two memories, and recall orders them. Restatements, explicit keys and
slots, and one question asked with another answer are not the model's to judge: it was trained on
replacing against another fact, and those rules say the two texts are one fact.
"""

from __future__ import annotations

import numpy as np

from agentmem.currentness.pair import PairModel

JUDGED = frozenset({"new value", "moved"})  # the rules that retire a memory for what it says, not how


def vetoed(model: PairModel | None, reason: str | None, older: np.ndarray | None, newer: np.ndarray,
           older_text: str, newer_text: str) -> bool:  # fmt: skip
    """True when the rule `reason` would retire `older_text` for `newer_text` and the model says
    the newer text is very likely another fact."""
    if model is None or reason not in JUDGED or older is None or older.shape != (model.dim,):
        return False
    return model.replaces(older, newer, older_text, newer_text) < model.order
