"""The crash campaign: SIGKILL the real server under mixed writes, restart it, check every acknowledged write.

    python -m stress.crash                    # 50 kills, 4 writer processes (about 40 minutes here)
    python -m stress.crash --kills 3          # what CI runs (tests/test_crash_campaign.py)

Writer processes talk to the real server over loopback with the HTTP client and do, at
random: remember with a key from a small pool (supersedes the current holder), a burst of
concurrent remembers to one key shared by every writer (the group commit decides them in
arrival order, one batch or several), remember free text, governance-delete one of their own
acknowledged memories, archive one of their own (restore it later), restore. Each
acknowledged reply is appended to the writer's log (flushed and fsynced) only after the
server answered. The campaign kills the server with
SIGKILL after a random 0.5 to 4 seconds of load, restarts it, and checks, after every restart:

- every acknowledged write is present, with its content (or its tombstone when a later
  delete erased it: an acknowledged one, or one sent and cut off by the kill, which the
  writer logged as an intent first) and its version chain (the version it superseded points to it);
- nothing is half-present: every lineage has exactly one latest version, every key exactly one
  current memory (bursts included), every superseded version names an existing successor in its
  lineage, tombstones have no content;
- the indexes hold exactly the latest active versions (POST /v1/check) and /ready is green;
- recall never returns a superseded, archived or deleted version.

It prints kills survived, writes checked and losses, and writes stress/results/crash.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from agentmem.client import serving

TOKEN = "crash-campaign-secret-000001"
ROOT = "crash-campaign-root-secret-01"  # an admin of every project: the id check covers them all
PROJECT = "crash"
KEYS = 12  # per writer: a small pool, so that supersession chains grow long
BURST_KEYS = 3  # shared by all writers: concurrent writes to one key
BURST = 6  # concurrent remembers in one burst
RESULTS = Path(__file__).resolve().parent / "results"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`agentmem serve` in a child process on a loopback port."""

    def __init__(self, data: Path, port: int) -> None:
        self.data = data
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data.parent / "server.log"

    def start(self, timeout: float = 300) -> float:
        started = time.monotonic()
        env = {**os.environ, "AGENTMEM_TOKENS": f"c:{TOKEN}:admin:{PROJECT};root:{ROOT}:admin:*", "HF_HUB_OFFLINE": "1",
               "AGENTMEM_SWEEP_EVERY_MINUTES": "0", "AGENTMEM_CONSOLIDATE_EVERY_MINUTES": "0"}  # fmt: skip
        cmd = [sys.executable, "-m", "agentmem", "--data-dir", str(self.data), "serve", "--port", str(self.port)]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=log)
        while time.monotonic() - started < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                if serving(httpx.get(f"{self.url}/ready", timeout=5)):  # the engine is loaded
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.2)  # a poll without a pause would hold the GIL from the model loading
        raise RuntimeError("server did not start in time")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


# -- writers ------------------------------------------------------------------------------


def writer(n: int, url: str, log_path: str, stop: Any, seed: int) -> None:
    """Mixed writes until `stop` is set; an acknowledged reply goes to the log before the next call."""
    rng = random.Random(seed * 1000 + n)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    mine: list[int] = []
    archived: list[int] = []
    deleted = False  # each writer deletes once early, whatever the dice say: a loaded machine runs few ops
    i = 0
    pool = ThreadPoolExecutor(BURST)
    ack_lock = threading.Lock()
    with open(log_path, "a", encoding="utf-8") as log, httpx.Client(base_url=url, headers=headers, timeout=20) as http:

        def ack(record: dict[str, Any]) -> None:
            with ack_lock:  # burst threads share the log
                log.write(json.dumps(record) + "\n")
                log.flush()
                os.fsync(log.fileno())

        def remember(content: str, key: str | None = None, kind: str = "fact") -> None:
            body = {"content": content, "project": PROJECT, "kind": kind, **({"key": key} if key else {})}
            r = http.post("/v1/memories", json=body)
            if r.status_code in (200, 201):
                reply = r.json()
                ack({"op": "remember", "id": reply["memory"]["id"], "content": content, "key": key,
                     "outcome": reply["outcome"], "superseded": reply.get("superseded_id")})  # fmt: skip
                mine.append(reply["memory"]["id"])

        while not stop.is_set():
            i += 1
            roll = rng.random() if deleted or len(mine) < 2 else 0.8  # 0.8: the delete below
            try:
                if roll < 0.08:  # a burst of concurrent writes to one key that every writer shares
                    key = f"burst.k{rng.randrange(BURST_KEYS)}"
                    contents = [f"the shared setting {key} is {i}.{j} (writer {n})" for j in range(BURST)]
                    list(pool.map(lambda c, key=key: remember(c, key), contents))  # type: ignore[misc]
                elif roll < 0.55:
                    key = f"w{n}.k{rng.randrange(KEYS)}"
                    remember(f"writer {n} setting {key} has value {i} (build {rng.randrange(10**6)})", key)
                elif roll < 0.75:
                    remember(f"writer {n} saw event {i} in module m{rng.randrange(997)} at step {rng.random():.6f}",
                             kind="event")  # fmt: skip
                elif roll < 0.85 and mine:
                    deleted = True
                    victim = mine.pop(rng.randrange(len(mine)))
                    ack({"op": "delete-intent", "id": victim})  # a kill mid-call may leave it done, unacknowledged
                    r = http.post("/v1/delete", json={"ids": [victim], "reason": f"campaign delete {i}"})
                    if r.status_code == 200:
                        ack({"op": "delete", "id": victim, "versions": r.json()["versions"]})
                elif roll < 0.93 and mine:
                    # archive one memory: the sweep with threshold 1 and limit 1 takes the lowest retention
                    r = http.post("/v1/sweep", json={"threshold": 1.0, "limit": 1})
                    if r.status_code == 200:
                        for item in r.json()["items"]:
                            ack({"op": "archive", "id": item["id"]})
                            archived.append(item["id"])
                elif archived:
                    back = archived.pop(rng.randrange(len(archived)))
                    r = http.post(f"/v1/memories/{back}/restore", json={})
                    if r.status_code == 200:
                        ack({"op": "restore", "id": back})
            except httpx.HTTPError:
                time.sleep(0.2)  # the server is down: this call was not acknowledged; try again later


# -- checks -------------------------------------------------------------------------------


def read_acks(paths: Sequence[Path]) -> list[dict[str, Any]]:
    out = []
    for p in paths:
        if p.exists():
            for line in p.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    out.append(json.loads(line))
    return out


def check(url: str, acks: list[dict[str, Any]]) -> dict[str, Any]:
    """Every acknowledged write against the restarted server; returns counts and problems."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    problems: list[str] = []
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        versions: dict[int, dict[str, Any]] = {}
        cursor = None
        while True:
            params: dict[str, Any] = {"status": "all", "latest_only": False, "limit": 1000, "project": PROJECT}
            if cursor:
                params["cursor"] = cursor
            page = http.get("/v1/memories", params=params).json()
            for v in page["items"]:
                versions[v["id"]] = v
            cursor = page["next_cursor"]
            if not cursor:
                break
        erased = {a["id"] for a in acks if a["op"] == "delete"}  # a delete erases exactly that version
        maybe = {a["id"] for a in acks if a["op"] == "delete-intent"} - erased  # sent, never answered
        for a in acks:
            if a["op"] != "remember":
                continue
            v = versions.get(a["id"])
            if v is None:
                problems.append(f"acknowledged memory {a['id']} is missing")
                continue
            if a["id"] in erased or (a["id"] in maybe and v["status"] == "deleted"):
                if v["status"] != "deleted" or v["content"]:
                    problems.append(f"deleted memory {a['id']} still has content or status {v['status']}")
            elif a["outcome"] != "reinforced" and v["content"] != a["content"]:
                problems.append(f"memory {a['id']} content changed")
            old = a.get("superseded")
            if old is not None:
                o = versions.get(old)
                if o is None or o["superseded_by"] != a["id"] or o["is_latest"]:
                    problems.append(f"memory {a['id']} superseded {old}, but the old version does not say so")
        lineages: dict[int, list[dict[str, Any]]] = {}
        for v in versions.values():
            lineages.setdefault(v["lineage_id"], []).append(v)
            if v["status"] == "superseded" and v["superseded_by"] not in versions:
                problems.append(f"superseded version {v['id']} points at a missing successor")
            if v["status"] == "deleted" and v["content"]:
                problems.append(f"tombstone {v['id']} keeps content")
        current = [v for v in versions.values() if v["is_latest"] and v["status"] == "active"]
        holders = Counter(v["key"] for v in current if v["key"])
        problems += [f"key {key} has {n} current memories" for key, n in holders.items() if n > 1]
        for lineage, vs in lineages.items():
            latest = [v for v in vs if v["is_latest"]]
            if len(latest) > 1:
                problems.append(f"lineage {lineage} has {len(latest)} latest versions")
            if not latest and not all(v["status"] == "deleted" for v in vs):
                problems.append(f"lineage {lineage} has no latest version")
        consistency = http.post("/v1/check", headers={"Authorization": f"Bearer {ROOT}"}).json()
        if any(r["missing"] or r["extra"] for r in consistency["indexes"]):
            problems.append(f"indexes inconsistent: {json.dumps(consistency)[:500]}")
        dead = {i for i, v in versions.items() if not (v["is_latest"] and v["status"] == "active")}
        for n in range(4):
            for k in range(0, KEYS, 3):
                hits = http.post("/v1/recall", json={"query": f"writer {n} setting w{n}.k{k} value", "k": 20}).json()
                for h in hits["hits"]:
                    if h["memory"]["id"] in dead:
                        problems.append(f"recall returned dead version {h['memory']['id']}")
        ready = http.get("/ready")
    return {
        "versions": len(versions),
        "acknowledged": sum(1 for a in acks if a["op"] == "remember"),
        "problems": problems,
        "ready": ready.status_code == 200,
    }


# -- the campaign -----------------------------------------------------------------------


def _wait_for_load(logs: Sequence[Path], timeout: float = 120.0) -> None:
    """Until the writers (new processes, loading slowly on a busy machine) have had a write
    acknowledged since this call, and a delete sent: a kill then always lands under load."""
    before, end = len(_acks_so_far(logs)), time.monotonic() + timeout
    while time.monotonic() < end:
        acks = _acks_so_far(logs)
        if len(acks) > before and any(a["op"] == "delete-intent" for a in acks):
            return
        time.sleep(0.1)


def _acks_so_far(logs: Sequence[Path]) -> list[dict[str, Any]]:
    try:
        return read_acks(logs)
    except ValueError:  # a line being written: none counted this time
        return []


def campaign(kills: int, writers: int = 4, seed: int = 0, workdir: Path | None = None) -> dict[str, Any]:
    rng = random.Random(seed)
    tmp = Path(workdir or tempfile.mkdtemp(prefix="agentmem-crash-"))
    server = Server(tmp / "data", free_port())
    logs = [tmp / f"writer-{n}.jsonl" for n in range(writers)]
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    startup = [server.start()]
    procs = [ctx.Process(target=writer, args=(n, server.url, str(logs[n]), stop, seed)) for n in range(writers)]
    for p in procs:
        p.start()
    rounds: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        for k in range(kills):
            _wait_for_load(logs)
            time.sleep(rng.uniform(0.5, 4.0))
            server.kill()
            startup.append(server.start())
            stop.set()  # quiesce the writers while checking, so the check sees a still store
            time.sleep(0.5)
            result = check(server.url, read_acks(logs))
            rounds.append({"kill": k + 1, **{key: v for key, v in result.items() if key != "problems"},
                           "problems": result["problems"][:20]})  # fmt: skip
            print(f"kill {k + 1}/{kills}: {result['acknowledged']} acknowledged writes checked, "
                  f"{len(result['problems'])} problems", file=sys.stderr, flush=True)  # fmt: skip
            if result["problems"]:
                break
            for p in procs:
                p.join(timeout=30)
            stop = ctx.Event()
            procs = [ctx.Process(target=writer, args=(n, server.url, str(logs[n]), stop, seed + k + 1))
                     for n in range(writers)]  # fmt: skip
            for p in procs:
                p.start()
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
        server.kill()
    acks = read_acks(logs)
    last = rounds[-1] if rounds else {"problems": []}
    return {
        "kills": kills,
        "kills_survived": sum(1 for r in rounds if not r["problems"] and r["ready"]),
        "writes_checked": sum(1 for a in acks if a["op"] == "remember"),
        "acknowledged_ops": {
            op: sum(1 for a in acks if a["op"] == op) for op in ("remember", "delete", "archive", "restore")
        },
        "deletes_sent": sum(1 for a in acks if a["op"] == "delete-intent"),
        "losses": sum(len(r["problems"]) for r in rounds),
        "restart_seconds": {"median": sorted(startup)[len(startup) // 2], "max": max(startup)},
        "minutes": round((time.monotonic() - started) / 60, 2),
        "rounds": rounds,
        "last_problems": last["problems"],
        "workdir": str(tmp),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m stress.crash", description=__doc__.split("\n")[0])
    p.add_argument("--kills", type=int, default=50)
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    result = campaign(args.kills, args.writers, args.seed)
    result["command"] = "python -m stress.crash" + "".join(f" {a}" for a in (argv or sys.argv[1:]))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "crash.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"kills survived: {result['kills_survived']}/{result['kills']}, writes checked: {result['writes_checked']}, "
          f"losses: {result['losses']}, median restart {result['restart_seconds']['median']:.1f} s")  # fmt: skip
    return 0 if result["losses"] == 0 and result["kills_survived"] == result["kills"] else 1


if __name__ == "__main__":
    sys.exit(main())
