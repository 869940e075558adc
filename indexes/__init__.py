"""Derived search structures kept equal to the store: BM25, vectors, the embedder, the sync.

This package knows nothing about memories: it indexes integer ids, text, a few
filter fields and vectors, and replays an outbox that a `Source` hands it.
"""

from indexes.bm25 import BM25Index
from indexes.docs import Doc, IndexCorrupt, IndexFailure, OutboxEntry
from indexes.embed import Embedder, SentenceTransformerEmbedder
from indexes.onnx_embed import OnnxEmbedder, default_embedder, embedder_named
from indexes.sync import IndexSet, Source
from indexes.vectors import VectorIndex

__all__ = [
    "BM25Index",
    "Doc",
    "Embedder",
    "IndexCorrupt",
    "IndexFailure",
    "IndexSet",
    "OnnxEmbedder",
    "OutboxEntry",
    "SentenceTransformerEmbedder",
    "Source",
    "VectorIndex",
    "default_embedder",
    "embedder_named",
]
