"""The moving parts of benchmarks.concurrency: one real server per code side, and a pool of client processes.

A side is a source tree (the working tree, or a `git worktree` of the baseline commit). Its
server is `agentmem serve --host 127.0.0.1 --port P --config FILE` run by this venv's Python
with that tree alone on PYTHONPATH and a neutral working directory, through a two-line
launcher that first prints the files of the agentmem, indexes and api packages it imported;
the start fails unless they lie inside the side's tree. The launcher also stops the server
when the benchmark process goes away, however it ended.

The clients are long-lived processes (spawned once, so a measured window does not pay for
process start-up); for each window the first N of them open a fresh keep-alive connection
to one server, wait for a common start signal, and send requests until the window's time or
request budget is spent. Which request comes next is decided by `mix_schedule`; recall
questions and new texts come from per-side counters shared by every client, so a question
returns only after all the others were asked, and no text is written twice to one store.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import queue
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness.cli import say
from benchmarks.harness.client import keepalive_client, take, timed_post
from benchmarks.harness.clock import CpuWindow, proc_cpu_seconds
from benchmarks.harness.server import HOST, ServerProcess, free_port

PROJECT = "bench"
K = 10
KEYS = 500  # explicit keys bench.slot-0..499: the preload holds one memory for each
KEY_EVERY = 5  # every 5th new text carries a key, so it supersedes that slot's current memory
OP_REMEMBER, OP_RECALL = 1, 0
OUTCOMES = ("created", "reinforced", "superseded")

# Runs in the server process: watch the parent, say which code was imported, then `agentmem ...`.
LAUNCH = """\
import json, os, sys, threading, time
_parent = os.getppid()
def _watch():
    while os.getppid() == _parent:
        time.sleep(1.0)
    os.kill(os.getpid(), 15)
    time.sleep(30)
    os._exit(3)
threading.Thread(target=_watch, name="watch-parent", daemon=True).start()
import agentmem, api, indexes
print("bench-modules " + json.dumps({m.__name__: os.path.realpath(m.__file__) for m in (agentmem, indexes, api)}),
      flush=True)
sys.argv = ["agentmem", *sys.argv[1:]]
import runpy
runpy.run_module("agentmem", run_name="__main__", alter_sys=True)
"""


@dataclass(frozen=True)
class Side:
    """One version of the code: a name for the report, its source tree, and the commit it is at."""

    name: str
    root: Path
    commit: str
    dirty: bool = False

    def env(self) -> dict[str, str]:
        """This process's environment without agentmem settings, with only this tree on PYTHONPATH."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_") and k != "PYTHONPATH"}
        env.update(
            PYTHONPATH=str(self.root),
            PYTHONUNBUFFERED="1",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            HF_HUB_DISABLE_PROGRESS_BARS="1",
        )
        return env


def parse_modules(output: str) -> dict[str, str]:
    """The package files a LAUNCH process reported, from its output."""
    for line in output.splitlines():
        if line.startswith("bench-modules "):
            found: dict[str, str] = json.loads(line.split(" ", 1)[1])
            return found
    return {}


def check_modules(side: Side, modules: dict[str, str], who: str) -> None:
    """Raise unless agentmem, indexes and api all came from the side's own tree."""
    root = side.root.resolve()
    wrong = {m: f for m, f in modules.items() if not Path(f).is_relative_to(root)}
    if set(modules) != {"agentmem", "indexes", "api"} or wrong:
        raise RuntimeError(f"the {side.name} {who} imported code outside {root}: {modules or 'nothing reported'}")


def probe(side: Side, work: Path) -> dict[str, str]:
    """Which code `agentmem` runs for this side: LAUNCH with `--help` (no server, no model), checked."""
    out = subprocess.run([sys.executable, "-c", LAUNCH, "--help"], cwd=work, env=side.env(), capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    modules = parse_modules(out.stdout)
    if out.returncode != 0:
        raise RuntimeError(f"`agentmem --help` for {side.name} exited with {out.returncode}: {out.stderr[-2000:]}")
    check_modules(side, modules, "CLI")
    return modules


def config_toml(data_dir: Path, port: int, secret: str, database_url: str | None = None) -> str:
    """Server settings: this data directory (or a PostgreSQL database), one admin token (of every project, as
    the id check needs; the requests name PROJECT), no scheduled sweep or consolidation (they would run in a
    measured window)."""
    return (
        f'host = "{HOST}"\nport = {port}\ndata_dir = {json.dumps(str(data_dir))}\n'
        + (f"database_url = {json.dumps(database_url)}\n" if database_url else "")
        + "sweep_every_minutes = 0\nconsolidate_every_minutes = 0\n\n"
        f'[[tokens]]\nname = "bench"\ntoken = "{secret}"\nrole = "admin"\nprojects = ["*"]\n'
    )


class SideServer(ServerProcess):
    """The real service for one side on its own data directory (or a node of a PostgreSQL database, given
    `database_url`) and a free loopback port."""

    def __init__(
        self, side: Side, data_dir: Path, work: Path, *, ready_timeout: float, stop_timeout: float,
        database_url: str | None = None,
    ) -> None:  # fmt: skip
        super().__init__(work / f"server-{side.name}.log", ready_timeout=ready_timeout, stop_timeout=stop_timeout)
        self.side = side
        self.database_url = database_url
        self.data_dir = data_dir
        self.work = work
        self.config_path = work / f"server-{side.name}.toml"
        self.modules: dict[str, str] = {}

    def launch(self) -> None:
        """Start the process (returns at once; `wait_ready` waits for /ready)."""
        self.work.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.config_path.write_text(config_toml(self.data_dir, self.port, self.secret, self.database_url))
        cmd = [sys.executable, "-c", LAUNCH, "serve", "--host", HOST, "--port", str(self.port),
               "--config", str(self.config_path)]  # fmt: skip
        self.spawn(cmd, cwd=self.work, env=self.side.env())

    def wait_ready(self) -> None:
        """Wait until /ready says the engine is loaded, then check which code the server imported."""
        why = self.poll_ready(0.2)
        if why is not None:
            raise RuntimeError(f"{self.side.name} server {why}; log tail:\n{self.log_tail()}")
        self.modules = parse_modules(self.log_path.read_text(errors="replace"))
        check_modules(self.side, self.modules, "server")

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def stop(self) -> bool:
        """As ServerProcess.stop, noting whether the log shows a graceful close."""
        stopped = super().stop()
        if stopped:
            self.stop_info["clean"] = "Application shutdown complete" in self.log_tail(15)
        return stopped


def settle(pid: int, *, quiet_cores: float = 0.05, step: float = 0.25, limit: float = 6.0) -> float:
    """Wait until a server's CPU use drops below `quiet_cores` (index merges, flushes after a window
    end), at most `limit` seconds; returns the seconds waited."""
    t0 = time.perf_counter()
    last = proc_cpu_seconds(pid)
    while time.perf_counter() - t0 < limit:
        time.sleep(step)
        now = proc_cpu_seconds(pid)
        if now is None or last is None or (now - last) / step < quiet_cores:
            break
        last = now
    return round(time.perf_counter() - t0, 2)


# -- what each client sends ----------------------------------------------------------------


def mix_schedule(write_percent: int, n: int, phase: int = 0) -> list[int]:
    """The first `n` operations of a client: OP_REMEMBER for `write_percent` % of them, spread evenly
    (every stretch of 100 holds exactly that many), shifted by `phase` so that clients differ."""
    if not 0 <= write_percent <= 100:
        raise ValueError("write_percent must be 0..100")
    return [
        OP_REMEMBER if ((i + phase + 1) * write_percent) // 100 > ((i + phase) * write_percent) // 100 else OP_RECALL
        for i in range(n)
    ]


def write_body(pool: Sequence[str], j: int) -> tuple[dict[str, Any], bool]:
    """The j-th new memory a side receives: the j-th unused text, with a key on every KEY_EVERY-th one
    (the keys cycle through the KEYS slots the preload filled, so each keyed write supersedes).
    Past the end of `pool` texts come round again with a marker; the flag says so."""
    text = pool[j % len(pool)]
    recycled = j >= len(pool)
    if recycled:
        text = f"{text} (again, {j // len(pool)})"
    body: dict[str, Any] = {"content": text, "project": PROJECT}
    if j % KEY_EVERY == 0:
        body["key"] = slot_key((j // KEY_EVERY) % KEYS)
    return body, recycled


def slot_key(i: int) -> str:
    return f"bench.slot-{i}"


# -- the client processes ------------------------------------------------------------------


def client_main(
    wid: int,
    commands: Any,
    out: Any,
    go: Any,
    counters: dict[str, tuple[Any, Any]],
    queries: Sequence[str],
    texts: Sequence[str],
    idle_limit: float,
) -> None:
    """A client process: waits for window commands until told to stop, the parent dies or `idle_limit` passes."""
    parent = os.getppid()
    idle_since = time.monotonic()
    while os.getppid() == parent and time.monotonic() - idle_since < idle_limit:
        try:
            cmd = commands.get(timeout=1.0)
        except queue.Empty:
            continue
        if cmd is None:
            return
        try:
            _window(wid, cmd, out, go, counters, queries, texts)
        except BaseException:
            out.put(("failed", wid, cmd["window"], traceback.format_exc()))
        idle_since = time.monotonic()


def _window(
    wid: int,
    cmd: dict[str, Any],
    out: Any,
    go: Any,
    counters: dict[str, tuple[Any, Any]],
    queries: Sequence[str],
    texts: Sequence[str],
) -> None:
    q_counter, t_counter = counters[cmd["side"]]
    pool = texts[cmd["text_offset"] :]
    clock = time.perf_counter
    ops = mix_schedule(cmd["write_percent"], cmd["max_requests"], phase=wid * 7)
    with keepalive_client(cmd["url"], cmd["secret"], cmd["timeout"]) as http:
        http.get("/health")  # opens the keep-alive connection, untimed
        out.put(("ready", wid, cmd["window"], None))
        if not go.wait(120):
            out.put(("failed", wid, cmd["window"], "no start signal within 120 s"))
            return
        kinds: list[int] = []
        lat: list[float] = []
        status: list[int] = []
        outcome: list[str] = []
        errors: list[str] = []
        recycled = 0
        cpu0 = os.times()
        start = clock()
        stop_at = start + cmd["duration"]
        for op in ops:
            if clock() >= stop_at:
                break
            if op == OP_REMEMBER:
                body, again = write_body(pool, take(t_counter))
                recycled += again
                path = "/v1/memories"
            else:
                body = {"query": queries[take(q_counter) % len(queries)], "k": K, "project": PROJECT}
                path = "/v1/recall"
            code, content, ms = timed_post(http, path, body, clock, errors, f"{path} ")
            kinds.append(op)
            lat.append(ms)
            status.append(code)
            what = ""
            if op == OP_REMEMBER and 200 <= code < 300:
                try:
                    what = str(json.loads(content)["outcome"])
                except (ValueError, KeyError, TypeError):
                    what = "unparsable"
            elif code and not 200 <= code < 300 and len(errors) < 5:
                errors.append(f"{path} HTTP {code}: {content[:300]!r}")
            outcome.append(what)
        end = clock()
        cpu1 = os.times()
    out.put(
        (
            "done",
            wid,
            cmd["window"],
            {
                "op": kinds,
                "lat": lat,
                "status": status,
                "outcome": outcome,
                "errors": errors,
                "recycled": recycled,
                "start": start,
                "end": end,
                "cpu_seconds": (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system),
            },
        )
    )


class ClientPool:
    """`size` client processes, started once; `run` drives the first N of them against one server."""

    def __init__(self, size: int, side_names: Sequence[str], queries: Sequence[str], texts: Sequence[str]) -> None:
        self.ctx = mp.get_context("spawn")  # no torch or DuckDB state inherited
        self.out = self.ctx.Queue()
        self.go = self.ctx.Event()
        self.counters = {n: (self.ctx.Value("q", 0), self.ctx.Value("q", 0)) for n in side_names}
        self.commands = [self.ctx.Queue() for _ in range(size)]
        self.procs = [
            self.ctx.Process(
                target=client_main,
                args=(w, self.commands[w], self.out, self.go, self.counters, list(queries), list(texts), 1800.0),
                name=f"bench-client-{w}",
                daemon=True,
            )
            for w in range(size)
        ]
        self._window = 0
        for p in self.procs:
            p.start()

    def reset_texts(self, side: str) -> None:
        """New texts start again from the first unused one (a new store)."""
        with self.counters[side][1].get_lock():
            self.counters[side][1].value = 0

    def take_text(self, side: str) -> int:
        return take(self.counters[side][1])

    def take_query(self, side: str) -> int:
        return take(self.counters[side][0])

    def run(
        self, server: SideServer | Sequence[SideServer], clients: int, settings: dict[str, Any],
        cpu_pids: Sequence[int] = (),
    ) -> dict[str, Any]:  # fmt: skip
        """One measured window: `clients` processes against `server` (or against several servers of one side,
        client i on server i mod n, round-robin); their raw records and CPU use (the servers', and that of
        `cpu_pids` too, counted as server CPU)."""
        servers = [server] if isinstance(server, SideServer) else list(server)
        if clients > len(self.procs):
            raise ValueError(f"only {len(self.procs)} client processes")
        if len({s.side.name for s in servers}) != 1:
            raise ValueError("the servers of one window share one side (its text and question counters)")
        self._window += 1
        wid = self._window
        self.go.clear()
        for w in range(clients):
            srv = servers[w % len(servers)]
            self.commands[w].put({"window": wid, "side": srv.side.name, "url": srv.url, "secret": srv.secret,
                                  **settings})  # fmt: skip
        payloads: dict[int, dict[str, Any]] = {}
        failures: list[str] = []
        try:
            ready = 0
            deadline = time.monotonic() + 120
            while ready < clients:
                kind, w, win, payload = self._get(deadline, f"{ready} of {clients} clients ready")
                if win != wid:
                    continue  # a late message from an earlier window
                if kind == "ready":
                    ready += 1
                else:
                    raise RuntimeError(f"client {w} failed before the window:\n{payload}")
            stats = CpuWindow([*(s.pid for s in servers), *cpu_pids])
            self.go.set()
            deadline = time.monotonic() + settings["duration"] + settings["timeout"] + 60
            while len(payloads) + len(failures) < clients:
                try:
                    kind, w, win, payload = self._get(deadline, "window results")
                except RuntimeError as exc:
                    failures.append(str(exc))
                    break
                if win != wid:
                    continue
                if kind == "done":
                    payloads[w] = payload
                elif kind == "failed":
                    failures.append(f"client {w}: {payload}")
            cpu = stats.finish(sum(p["cpu_seconds"] for p in payloads.values()))
        finally:
            self.go.clear()
        return {"payloads": list(payloads.values()), "failures": failures, "cpu": cpu}

    def _get(self, deadline: float, what: str) -> tuple[str, int, int, Any]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RuntimeError(f"timed out waiting for {what}")
        try:
            item: tuple[str, int, int, Any] = self.out.get(timeout=left)
        except queue.Empty:
            raise RuntimeError(f"timed out waiting for {what}") from None
        return item

    def close(self) -> None:
        for q in self.commands:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for p in self.procs:
            p.join(5)
        for p in self.procs:
            if p.is_alive():
                p.terminate()
                p.join(5)


def copy_store(src: Path, dst: Path) -> None:
    """A private copy of a cached data directory (the cache itself is never opened by a server)."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)


def warm_up(server: SideServer, pool: ClientPool, queries: Sequence[str], texts: Sequence[str], recalls: int,
            writes: int, timeout: float) -> dict[str, Any]:  # fmt: skip
    """Untimed requests after start: recalls (the first searchers) and writes (the first index writers)."""
    import httpx

    errors = 0
    t0 = time.perf_counter()
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=timeout) as http:
        for _ in range(recalls):
            q = queries[pool.take_query(server.side.name) % len(queries)]
            r = http.post("/v1/recall", json={"query": q, "k": K, "project": PROJECT})
            errors += not 200 <= r.status_code < 300
        for _ in range(writes):
            body, _again = write_body(texts, pool.take_text(server.side.name))
            r = http.post("/v1/memories", json=body)
            errors += not 200 <= r.status_code < 300
    if errors:
        say(f"  {server.side.name}: {errors} warm-up request(s) failed")
    return {"recalls": recalls, "writes": writes, "errors": errors, "seconds": round(time.perf_counter() - t0, 2)}
