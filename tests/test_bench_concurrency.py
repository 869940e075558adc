"""benchmarks.concurrency's pure parts: the mix chooser, what a write sends, window and round summaries,
ratios, targets and the report it writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.__main__ import BENCHMARKS, GROUPS
from benchmarks.concurrency import parse_args
from benchmarks.concurrency_load import (
    KEY_EVERY,
    KEYS,
    OP_RECALL,
    OP_REMEMBER,
    Side,
    check_modules,
    config_toml,
    mix_schedule,
    probe,
    write_body,
)
from benchmarks.concurrency_report import (
    compare,
    compare_inprocess,
    plot,
    ratio,
    render_markdown,
    spread,
    summarise_config,
    summarise_window,
    targets,
)
from benchmarks.harness.report import write_json, write_report


@pytest.mark.parametrize("percent", [0, 20, 100, 37])
def test_mix_schedule_spreads_writes_evenly(percent: int) -> None:
    for phase in (0, 3, 14):
        ops = mix_schedule(percent, 500, phase)
        assert len(ops) == 500 and set(ops) <= {OP_RECALL, OP_REMEMBER}
        assert sum(ops) == pytest.approx(5 * percent, abs=1)
        for start in range(0, 400, 100):  # every stretch of 100 holds exactly `percent` writes
            assert sum(ops[start : start + 100]) == percent
    assert mix_schedule(20, 10, 0) == [0, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    assert mix_schedule(20, 10, 1) != mix_schedule(20, 10, 0)  # clients differ
    with pytest.raises(ValueError):
        mix_schedule(101, 5)


def test_write_body_keys_and_recycling() -> None:
    pool = [f"text number {i}" for i in range(7)]
    bodies = [write_body(pool, j) for j in range(14)]
    assert [b["content"] for b, _ in bodies[:7]] == pool and not any(again for _, again in bodies[:7])
    assert all(again for _, again in bodies[7:]) and bodies[7][0]["content"] != pool[0]
    assert len({b["content"] for b, _ in bodies}) == 14  # a store never receives the same text twice
    keyed = [j for j, (b, _) in enumerate(bodies) if "key" in b]
    assert keyed == [j for j in range(14) if j % KEY_EVERY == 0]
    assert bodies[0][0]["key"] == "bench.slot-0" and bodies[KEY_EVERY][0]["key"] == "bench.slot-1"
    big = [str(i) for i in range(KEYS * KEY_EVERY + 1)]
    assert write_body(big, KEYS * KEY_EVERY)[0]["key"] == "bench.slot-0"  # keys cycle through the preloaded slots


def test_config_is_loopback_with_one_token_and_no_schedules(tmp_path: Path) -> None:
    from api.settings import load

    path = tmp_path / "c.toml"
    path.write_text(config_toml(tmp_path / "data dir", 8999, "a-secret-of-enough-length"))
    s = load(path, env={})
    assert (s.host, s.port, s.data_dir) == ("127.0.0.1", 8999, str(tmp_path / "data dir"))
    assert s.sweep_every_minutes == 0 and s.consolidate_every_minutes == 0
    assert [(t.role, t.projects) for t in s.tokens] == [("admin", ["*"])]  # the id check covers every project


def payload(ops: list[int], lat: list[float], status: list[int], start: float, end: float) -> dict[str, Any]:
    outcome = ["created" if o == OP_REMEMBER and 200 <= s < 300 else "" for o, s in zip(ops, status, strict=True)]
    return {"op": ops, "lat": lat, "status": status, "outcome": outcome, "errors": [], "recycled": 0,
            "start": start, "end": end, "cpu_seconds": 0.1}  # fmt: skip


def window(rps_scale: float = 1.0) -> dict[str, Any]:
    a = payload([1, 0, 0, 1], [10.0, 2.0, 4.0, 30.0], [201, 200, 200, 201], 100.0, 100.0 + 2 / rps_scale)
    b = payload([0, 1], [3.0, 50.0], [200, 503], 100.5, 101.0)
    w = summarise_window([a, b])
    w["cpu"] = {"server_cpu_seconds": 1.0, "server_cores": 0.5, "client_cores": 0.1, "other_cores": 0.2}
    return w


def test_summarise_window_counts_and_percentiles() -> None:
    w = window()
    assert (w["requests"], w["ok"], w["errors"]) == (6, 5, 1)
    assert w["errors_by_kind"] == {"remember 503": 1}
    assert w["wall_seconds"] == 2.0 and w["rps"] == 2.5  # 5 successful over first start to last end
    assert w["ops"]["remember"]["sent"] == 3 and w["ops"]["remember"]["latency_ms"]["n"] == 2
    assert w["ops"]["recall"]["latency_ms"]["p50"] == 3.0 and w["ops"]["recall"]["latency_ms"]["max"] == 4.0
    assert w["outcomes"] == {"created": 2}
    assert summarise_window([], ["client 0: boom"])["errors"] == 1


def test_summarise_config_pools_rounds_and_ratio() -> None:
    base = summarise_config([window(), window()])
    new = summarise_config([window(2.0), window(2.0)])
    assert base["rounds"] == 2 and base["rps"] == 2.5 and base["errors"] == 2 and base["round_spread"] == 1.0
    assert spread([2.0, 3.0, 2.5]) == 1.5 and spread([2.0]) is None
    assert base["ops"]["recall"]["latency_ms"]["n"] == 6 and base["ops"]["recall"]["latency_ms"]["round_p50"] == [3, 3]
    assert base["server_cpu_ms_per_request"] == round(1000 * 2 / 12, 2)
    r = compare(base, new)
    assert r["rps"] == 2.0 and r["recall_p50"] == 1.0
    assert ratio(None, 1.0) is None and ratio(1.0, 0) is None and ratio(3.0, 2.0) == 1.5


def results_for_report() -> dict[str, Any]:
    cfg = {"mix": "write", "clients": 8, "sides": {"baseline": summarise_config([window()]),
                                                   "new": summarise_config([window(2.0)])}}  # fmt: skip
    cfg["ratio"] = compare(cfg["sides"]["baseline"], cfg["sides"]["new"])
    ip_side = {
        "remember": {"calls_per_second": 160.0, "latency_ms": {"p50": 5.0, "p95": 7.0, "p99": 9.0},
                     "outcomes": {"created": 80, "superseded": 20}, "embed_misses": 0, "check_ok": True},
        "import": {"memories_per_second": 1200.0, "memories_per_second_with_close": 1000.0, "embed_misses": 0,
                   "check_ok": True},
    }  # fmt: skip
    slow = json.loads(json.dumps(ip_side))
    slow["remember"]["calls_per_second"], slow["import"]["memories_per_second"] = 20.0, 400.0
    results: dict[str, Any] = {
        "command": "python -m benchmarks.concurrency --quick",
        "machine": {"date": "2026-12-01T00:00:00+00:00", "cpu_count": 2, "cpu_model": "AMD EPYC", "python": "3.11"},
        "settings": {"repeats": 1, "duration": 3.0, "max_requests": 500, "inprocess_calls": 100},
        "sides": {"baseline": {"rev": "62ce809", "commit": "62ce809" + "0" * 33, "root": "/b", "dirty": False},
                  "new": {"rev": "working tree", "commit": "a" * 40, "root": "/n", "dirty": True}},
        "inprocess": {"size": 2000, "rounds": 1, "key_every": 5, "import_memories": 1000,
                      "sides": {"baseline": slow, "new": ip_side}, "ratio": {"remember_per_second": 8.0}},
        "http": [{"size": 2000, "configs": [cfg], "windows": [],
                  "servers": {"new": {"start_seconds": 9.5, "modules": {"agentmem": "/n/agentmem/__init__.py"}}}}],
        "stores": {"2000": {"import_seconds": 5.0, "import_per_second": 400.0, "disk_mb": 20.0, "cached": True}},
        "notes": ["a note"],
        "total_seconds": 100.0,
    }  # fmt: skip
    results["targets"] = targets(results)
    return results


def test_targets_judge_the_new_side() -> None:
    t = {row["target"].split(":")[0]: row for row in results_for_report()["targets"]}
    remember = t["remember() in process, sequential, embedding excluded"]
    assert remember["met_new"] is True and remember["met_baseline"] is False
    assert t["bulk import >= 1,000 memories/s (import_lines, embeddings in the file, empty data directory)"]["met_new"]
    http = next(row for name, row in t.items() if name.startswith("8 HTTP writers"))
    assert http["met_new"] is False  # 5 req/s, and an error


def test_report_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = results_for_report()
    write_json(tmp_path, "concurrency", results)
    md = render_markdown(results)
    assert "| write | 8 | 2.5 / 5.0 | 2.00 | - / - | 6 / 6 |" in md and "**no**" in md and "a note" in md
    assert json.loads((tmp_path / "concurrency.json").read_text())["targets"] == json.loads(
        json.dumps(results["targets"])
    )
    pytest.importorskip("matplotlib")
    write_report(results, tmp_path, "concurrency", render_markdown, plot)
    assert "Produced by" in (tmp_path / "concurrency.md").read_text() and "2.5 / 5.0" in capsys.readouterr().out
    assert (tmp_path / "concurrency.png").read_bytes()[:4] == b"\x89PNG"


def test_registered_and_quick_settings() -> None:
    assert "concurrency" in BENCHMARKS and "concurrency" in GROUPS["speed"]
    quick = parse_args(["--quick"])
    assert quick.size_list == [2000] and quick.client_list == [1, 8] and quick.duration == 3.0
    full = parse_args([])
    assert full.size_list == [10_000, 100_000] and full.client_list == [1, 4, 8, 16]
    assert full.mix_list == ["read", "mixed", "write"] and full.baseline == "62ce809"
    with pytest.raises(SystemExit):
        parse_args(["--mixes", "read,nope"])


def test_compare_inprocess() -> None:
    def side(rate: float, p50: float, imp: float) -> dict[str, Any]:
        return {"remember": {"calls_per_second": rate, "latency_ms": {"p50": p50}},
                "import": {"memories_per_second": imp}}  # fmt: skip

    r = compare_inprocess(side(20.0, 40.0, 400.0), side(160.0, 5.0, 1200.0))
    assert r == {"remember_per_second": 8.0, "remember_p50": 0.125, "import_per_second": 3.0}
    assert compare_inprocess(None, side(1.0, 1.0, 1.0))["import_per_second"] is None


def test_probe_names_the_tree_a_side_imports(tmp_path: Path) -> None:
    """The baseline's server must run the baseline's code: the launcher reports what it imported."""
    import shutil

    from benchmarks.harness.paths import REPO_ROOT

    tree = tmp_path / "tree"
    for pkg in ("agentmem", "indexes", "api"):
        shutil.copytree(REPO_ROOT / pkg, tree / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    work = tmp_path / "work"
    work.mkdir()
    modules = probe(Side("baseline", tree, "0" * 40), work)
    assert set(modules) == {"agentmem", "indexes", "api"}
    assert all(Path(f).is_relative_to(tree.resolve()) for f in modules.values())
    with pytest.raises(RuntimeError, match="outside"):
        check_modules(Side("new", REPO_ROOT, "0" * 40), modules, "server")
