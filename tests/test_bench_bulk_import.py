"""benchmarks.bulk_import end to end on a tiny corpus: both backends import every memory, the
bad chunk is refused whole, and the report says so side by side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bench_backends import write_data

from benchmarks import bulk_import


def test_bulk_import_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    data, out, cache = tmp_path / "data", tmp_path / "out", tmp_path / "cache"
    data.mkdir()
    write_data(data)
    argv = ["--size", "20", "--chunk", "10", "--rounds", "1", "--data", str(data), "--cache", str(cache),
            "--out", str(out)]  # fmt: skip
    assert bulk_import.main(argv) == 0
    res = json.loads((out / "bulk_import.json").read_text())
    for backend in ("embedded", "postgres"):
        s = res["summary"][backend]
        assert s["per_second_median"] > 0 and s["chunk_ms"]["n"] == 2
        assert s["all_current"] and s["check_ok"] and s["bad_chunk_refused"]
    assert res["summary"]["embedded"]["ratio_to_embedded"] == 1.0
    assert "| postgres |" in capsys.readouterr().out
    assert (out / "bulk_import.png").stat().st_size > 0
