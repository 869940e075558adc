"""Schemathesis against the service's own OpenAPI schema: every generated request gets a 2xx or a
4xx, never a 5xx, and the store and both indexes stay consistent."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from agentmem import Memory
from api.app import create_app
from api.settings import load
from fakes import FakeEmbedder

SKIP = {"/v1/ingest/notes", "/v1/ingest/code"}  # they scan directories on the server's disk: not for random paths


def test_no_generated_request_gets_a_5xx(tmp_path: Path) -> None:
    mem = Memory(tmp_path / "d", embedder=FakeEmbedder())
    for i in range(5):
        mem.remember(f"seed memory number {i} about the shop backend", project="default", key=f"k{i % 3}")
    env = {"AGENTMEM_SWEEP_EVERY_MINUTES": "0", "AGENTMEM_CONSOLIDATE_EVERY_MINUTES": "0"}
    app = create_app(load(env=env), mem=mem)  # an open loopback server: every caller is admin
    schema = schemathesis.openapi.from_asgi("/docs/openapi.json", app)
    failures: list[str] = []
    statuses: Counter[int] = Counter()
    calls = 0
    operations = [r.ok() for r in schema.get_all_operations()]
    assert len(operations) > 30
    for op in operations:
        if op.path in SKIP:
            continue

        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(case=op.as_strategy())
        def check(case) -> None:  # type: ignore[no-untyped-def]
            nonlocal calls
            calls += 1
            response = case.call()
            statuses[response.status_code] += 1
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}")

        check()
    print(f"{calls} generated requests over {len(operations)} operations: {dict(sorted(statuses.items()))}")
    assert failures == [], failures[:10]
    assert calls > 300
    assert mem.check().ok  # after every generated request, the indexes still match DuckDB
    mem.close()


pytestmark = pytest.mark.slow
