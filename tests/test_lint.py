"""ruff and mypy over the packages: the same dev loop everywhere."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize(
    "cmd",
    [
        [sys.executable, "-m", "ruff", "check", "."],
        [sys.executable, "-m", "mypy", "agentmem", "indexes", "api"],
    ],
    ids=["ruff", "mypy"],
)
def test_clean(cmd: list[str]) -> None:
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
