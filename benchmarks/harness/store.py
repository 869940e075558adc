"""Stores preloaded with the corpus: a memory version a text, and the texts as JSON Lines export
chunks (agentmem.transfer's format) for Memory.import_lines or POST /v1/import.

agentmem is imported inside the functions: a benchmark that starts servers of other trees imports it
only when it builds a store itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from agentmem.records import MemoryVersion


def memory_version(i: int, text: str, when: datetime, *, project: str, key: str | None = None) -> MemoryVersion:
    """Memory `i` (1-based) of a preloaded store: a latest, active fact, as an import writes it."""
    from agentmem.records import MemoryVersion
    from agentmem.text import sha256

    return MemoryVersion(
        id=i, lineage_id=i, version=1, parent_id=None, is_latest=True, status="active", content=text, key=key,
        tier="semantic", kind="fact", project=project, source="import", salience=0.5, confidence=0.7,
        created_at=when, valid_from=when, last_reinforced_at=when, content_hash=sha256(text),
    )  # fmt: skip


def export_lines(
    texts: Sequence[str], vectors: np.ndarray, make: Callable[[int, str, datetime], MemoryVersion], *, model: str,
    schema_version: int, base_time: datetime, chunk: int,
) -> Iterator[list[bytes]]:  # fmt: skip
    """The texts as memories 1..N (versions from `make`), one a minute, the last at `base_time`, each with its
    vector: lists of newline-ended JSON lines, a header and up to `chunk` memories each (format version 1,
    which every release reads)."""
    import msgspec

    from agentmem.transfer import FORMAT, Header, VersionLine

    enc = msgspec.json.Encoder()
    header = enc.encode(Header(FORMAT, 1, schema_version, model, int(vectors.shape[1]), base_time)) + b"\n"
    n = len(texts)
    for start in range(0, n, chunk):
        lines = [header]
        for i in range(start, min(n, start + chunk)):
            when = base_time - timedelta(minutes=n - i)  # one a minute, oldest first
            lines.append(enc.encode(VersionLine(make(i + 1, texts[i], when), vectors[i].tolist())) + b"\n")
        yield lines
