"""Fixtures: a deterministic fake embedder for fast tests, the real packaged model for marked ones."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentmem import Memory
from fakes import FakeEmbedder
from servers import Server


class Clock:
    """A controllable clock: starts at a fixed instant and moves only when told."""

    def __init__(self, start: datetime = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("AGENTMEM_"):
            monkeypatch.delenv(key)


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def memory(data_dir: Path, embedder: FakeEmbedder, clock: Clock) -> Iterator[Memory]:
    mem = Memory(data_dir, embedder=embedder, clock=clock)
    yield mem
    try:
        mem.close()
    except Exception:
        pass


@pytest.fixture(scope="session")
def real_embedder():  # type: ignore[no-untyped-def]
    from indexes.onnx_embed import default_embedder

    e = default_embedder()  # what the service runs: ONNX Runtime, torch as its fallback
    e.embed(["warm up"])
    return e


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """The real `agentmem serve` (started by the test with `server.start()`), killed afterwards."""
    s = Server(tmp_path / "data")
    yield s
    s.close()
