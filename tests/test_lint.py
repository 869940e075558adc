"""ruff and mypy over the packages: the same dev loop everywhere."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


@pytest.mark.parametrize(
    "cmd",
    [
        [sys.executable, "-m", "ruff", "check", "agentmem", "indexes", "api", "tests", "benchmarks"],
        [sys.executable, "-m", "mypy", "agentmem", "indexes", "api"],
    ],
    ids=["ruff", "mypy"],
)
def test_clean(cmd: list[str]) -> None:
    if shutil.which("ruff") is None and cmd[2] == "ruff":
        pytest.fail("ruff is not installed: install the project with the [test] extra")
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
