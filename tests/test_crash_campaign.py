"""A short crash campaign (stress/crash.py) in CI: SIGKILL the real server under mixed writes, three times."""

from __future__ import annotations

from pathlib import Path

import pytest

from stress.crash import TOKEN, campaign


@pytest.mark.model
@pytest.mark.slow
def test_three_kills_lose_nothing(tmp_path: Path) -> None:
    result = campaign(kills=3, writers=3, seed=1, workdir=tmp_path)
    assert result["last_problems"] == [] and result["losses"] == 0, result["rounds"]
    assert result["kills_survived"] == 3
    assert result["writes_checked"] >= 20 and result["deletes_sent"] >= 1  # a delete may be cut off by a kill
    log = (tmp_path / "server.log").read_text()
    assert "Application startup complete" in log and TOKEN not in log  # the secret never reaches a log
