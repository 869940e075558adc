"""`python -m benchmarks` lists what it can run and refuses what it cannot."""

from __future__ import annotations

import pytest

from benchmarks.__main__ import BENCHMARKS, main


def test_lists_and_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    for name in ("changing_facts", "sick", "latency", "lifecycle", "quality"):
        assert name in out
    assert main(["run", "nope"]) == 2 and "unknown benchmark nope" in capsys.readouterr().err
    assert main(["bogus"]) == 2
    assert set(BENCHMARKS) >= {"longmemeval", "locomo", "changing_facts", "sick"}
