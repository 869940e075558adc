"""`agentmem bench`: recall and remember latency of a running service or a data directory.

Writes (and, without `--project`, the recalls too) go to a scratch project `bench-<random>` that
is removed by a governance delete afterwards, also on Ctrl-C or an error; the service reports the
time of each recall stage in a `Server-Timing` header, read here (in process, directly).
"""

from __future__ import annotations

import argparse
import random
import secrets
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from agentmem.contract import MemoryAPI
from agentmem.errors import AccessDeniedError, AgentMemError, NotFoundError, ValidationError
from agentmem.recall.timing import STAGES, captured, parse_server_timing

SEED_MEMORIES = 40  # generated memories a scratch project starts with when it is also recalled from
SAMPLED = 200  # at most this many current memories of the project give the sampled queries
QUERY_WORDS = 12  # a sampled query: the first words of a memory's content
WARM_UP = 3  # recalls before the clock starts (not counted): the first loads caches and the model
DELETE_REASON = "agentmem bench: its scratch project"


class Figures(msgspec.Struct, frozen=True, kw_only=True):
    """One operation's latency over the run, in ms; `per_second`: its successes over the wall time."""

    name: str
    requests: int
    errors: int
    per_second: float
    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float


class Stage(msgspec.Struct, frozen=True, kw_only=True):
    """One recall stage's time over the run's recalls (`recalls`: how many reported it), in ms."""

    name: str
    recalls: int
    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float


class Report(msgspec.Struct, frozen=True, kw_only=True):
    """What `agentmem bench` measured (`--json` writes this)."""

    target: str
    project: str
    scratch_project: str | None
    queries: str
    clients: int
    mix: str
    seconds: float
    operations: list[Figures]
    stages: list[Stage]  # recall stages as the server (or, in process, the engine) timed them
    error_messages: list[str]


class Timings:
    """The recall stage times of the last request of each thread: a `Server-Timing` header over
    HTTP (`hook` is an httpx response hook), the engine's stopwatch in process (`local`)."""

    def __init__(self) -> None:
        self._last = threading.local()

    def hook(self, response: Any) -> None:
        if response.request.url.path.endswith("/v1/recall"):
            self._last.ms = parse_server_timing(response.headers.get("server-timing", ""))

    def recall(self, mem: MemoryAPI, query: str, project: str, k: int) -> dict[str, float]:
        self._last.ms = {}
        with captured() as ms:  # in process the stopwatch fills `ms`; over HTTP the hook sets _last
            mem.recall(query, project=project, k=k)
        return ms or dict(self._last.ms)


def _positive(kind: type) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
        return value

    return parse


def _mix(text: str) -> tuple[int, int]:
    reads, sep, writes = text.partition("/")
    if not sep or not reads.strip().isdigit() or not writes.strip().isdigit() or int(reads) + int(writes) != 100:
        raise argparse.ArgumentTypeError(f"give reads/writes in percent adding up to 100, e.g. 80/20, not {text!r}")
    return int(reads), int(writes)


def add_bench(sub: Any) -> None:
    """The `bench` subcommand."""
    p = sub.add_parser("bench", help="measure recall and remember latency (of a service with --url, or in process)")
    p.add_argument("--project", help="recall from this project (default: a scratch project seeded with "
                                     f"{SEED_MEMORIES} generated memories)")  # fmt: skip
    p.add_argument("--queries", type=Path, help="a file of queries, one a line (default: sampled from the project)")
    p.add_argument("--clients", type=_positive(int), default=1, help="concurrent clients (default 1)")
    how_long = p.add_mutually_exclusive_group()
    how_long.add_argument("--requests", type=_positive(int), help="requests in all (default 200)")
    how_long.add_argument("--duration", type=_positive(float), help="seconds to run, instead of a count")
    p.add_argument("--mix", type=_mix, default=(80, 20), help="recalls/remembers in percent (default 80/20)")
    p.add_argument("-k", type=_positive(int), default=10, help="hits a recall asks for (default 10)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the mix and the query order")
    p.add_argument("--json", dest="json_file", type=Path, help="write the figures to this JSON file")
    p.add_argument("--png", type=Path, help="write a plot to this PNG file (needs agentmem[bench])")


def _read_queries(path: Path) -> list[str]:
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read --queries {path}: {exc}") from None
    queries = [q.strip() for q in lines if q.strip()]
    if not queries:
        raise ValidationError(f"--queries {path} has no queries (one a line)")
    return queries


def _sampled(mem: MemoryAPI, project: str) -> list[str]:
    """The first QUERY_WORDS words of up to SAMPLED current memories of the project."""
    found, _ = mem.list_versions(projects=[project], limit=SAMPLED)
    queries = [" ".join(m.content.split()[:QUERY_WORDS]) for m in found if m.content and m.content.strip()]
    if not queries:
        raise ValidationError(
            f"project {project!r} has no current memories to sample queries from: name another, "
            "leave --project out for a seeded scratch project, or give --queries"
        )
    return queries


_THINGS = ("billing", "search", "checkout", "auth", "reports", "mailer", "gateway", "scheduler")
_FACTS = ("stores its data in {}", "is deployed on {}", "is owned by the {} team", "logs to {}",
          "runs every night on {}")  # fmt: skip
_VALUES = ("PostgreSQL", "Fly.io", "Render", "platform", "Loki", "Kubernetes", "Redis", "S3")


def _seed_texts(n: int) -> list[str]:
    """Distinct, plain statements for a scratch project to recall from."""
    texts = []
    for i in range(n):
        thing, fact = _THINGS[i % len(_THINGS)], _FACTS[(i // len(_THINGS)) % len(_FACTS)]
        texts.append(f"The {thing} service {fact.format(_VALUES[(i * 3) % len(_VALUES)])}")
    return texts


def _preflight(mem: MemoryAPI) -> str:
    """A fresh scratch project name this caller may delete, or an error saying why not."""
    for _ in range(5):
        name = f"bench-{secrets.token_hex(4)}"
        try:
            dry = mem.delete(reason=DELETE_REASON, project=name, dry_run=True)
        except (AccessDeniedError, NotFoundError) as exc:  # 403 no admin, 404 a project the token lacks
            raise AccessDeniedError(
                f"the benchmark writes to a scratch project ({name}) and removes it afterwards with a governance "
                f"delete, which this token may not do ({exc}). Use an admin token of all projects ('*'), or run "
                "read-only on your project: --mix 100/0 --project NAME"
            ) from None
        if dry.versions == 0:
            return name
    raise AgentMemError("could not find an unused scratch project name")


class _Run:
    """The workers' shared state: how many requests are left, the samples, the stop signal."""

    def __init__(self, requests: int | None, deadline: float | None) -> None:
        self.left = requests
        self.deadline = deadline
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.done = 0
        self.ms: dict[str, list[float]] = {"recall": [], "remember": []}
        self.errors: dict[str, int] = {"recall": 0, "remember": 0}
        self.messages: list[str] = []
        self.stages: list[dict[str, float]] = []

    def take(self) -> bool:
        with self.lock:
            if self.stop.is_set() or (self.deadline is not None and time.perf_counter() >= self.deadline):
                return False
            if self.left is not None:
                if self.left <= 0:
                    return False
                self.left -= 1
            return True

    def record(self, op: str, ms: float, error: str | None, stages: dict[str, float] | None) -> None:
        with self.lock:
            self.done += 1
            if error is not None:
                self.errors[op] += 1
                if error not in self.messages and len(self.messages) < 5:
                    self.messages.append(error)
                return
            self.ms[op].append(ms)
            if stages:
                self.stages.append(stages)


def _worker(run: _Run, mem: MemoryAPI, timings: Timings, queries: list[str], project: str, scratch: str | None,
            write_share: float, k: int, rng: random.Random) -> None:  # fmt: skip
    while run.take():
        write = scratch is not None and rng.random() < write_share
        stages = None
        start = time.perf_counter()
        try:
            if write:
                words = " ".join(rng.choice(_VALUES + _THINGS) for _ in range(6))
                mem.remember(f"bench note {rng.getrandbits(48):x}: {words}", project=scratch)
            else:
                stages = timings.recall(mem, rng.choice(queries), project, k)
            error = None
        except Exception as exc:  # counted and shown, and the run goes on: a benchmark reports failures
            error = f"{type(exc).__name__}: {exc}"
        run.record("remember" if write else "recall", (time.perf_counter() - start) * 1000.0, error, stages)


def _figures(name: str, ms: list[float], errors: int, seconds: float) -> Figures:
    p50, p95, p99 = np.percentile(ms, [50, 95, 99]) if ms else (0.0, 0.0, 0.0)
    return Figures(name=name, requests=len(ms), errors=errors, per_second=round(len(ms) / seconds, 2),
                   mean_ms=round(float(np.mean(ms)) if ms else 0.0, 3), p50_ms=round(float(p50), 3),
                   p95_ms=round(float(p95), 3), p99_ms=round(float(p99), 3))  # fmt: skip


def _measure(args: argparse.Namespace, mem: MemoryAPI, timings: Timings, queries: list[str], project: str,
             scratch: str | None) -> tuple[_Run, float]:  # fmt: skip
    writes = args.mix[1]
    requests = None if args.duration else (args.requests or 200)
    for q in queries[:WARM_UP]:
        timings.recall(mem, q, project, args.k)
    start = time.perf_counter()
    run = _Run(requests, start + args.duration if args.duration else None)
    threads = [
        threading.Thread(target=_worker, name=f"bench-{i}", daemon=True,
                         args=(run, mem, timings, queries, project, scratch, writes / 100, args.k,
                               random.Random(args.seed * 1000 + i)))  # fmt: skip
        for i in range(args.clients)
    ]
    from tqdm import tqdm

    quiet = not sys.stdout.isatty()
    total = args.duration if args.duration else requests
    shape = {"bar_format": "{l_bar}{bar}| {n:.1f}/{total:.0f} s{postfix}"} if args.duration else {"unit": "req"}
    with tqdm(total=total, disable=quiet, leave=False, file=sys.stderr, **shape) as bar:  # type: ignore[call-overload]
        for t in threads:
            t.start()
        try:
            while any(t.is_alive() for t in threads):
                time.sleep(0.1)
                if args.duration:
                    bar.n = round(min(time.perf_counter() - start, args.duration), 1)
                    bar.set_postfix_str(f"{run.done} requests", refresh=False)
                else:
                    bar.n = run.done
                bar.refresh()
        except KeyboardInterrupt:
            run.stop.set()
            for t in threads:
                t.join()
            raise
    return run, time.perf_counter() - start


def _report(args: argparse.Namespace, target: str, run: _Run, seconds: float, project: str, scratch: str | None,
            source: str) -> Report:  # fmt: skip
    wanted = [op for op, share in zip(("recall", "remember"), args.mix, strict=True) if share]
    ops = [_figures(op, run.ms[op], run.errors[op], seconds) for op in wanted]
    names = [s for s in STAGES if any(s in st for st in run.stages)]
    names += sorted({s for st in run.stages for s in st} - set(names))
    stages = []
    for name in names:
        f = _figures(name, [st[name] for st in run.stages if name in st], 0, seconds)
        stages.append(Stage(name=name, recalls=f.requests, mean_ms=f.mean_ms, p50_ms=f.p50_ms, p95_ms=f.p95_ms,
                            p99_ms=f.p99_ms))  # fmt: skip
    return Report(target=target, project=project, scratch_project=scratch,
                  queries=source, clients=args.clients, mix=f"{args.mix[0]}/{args.mix[1]}",
                  seconds=round(seconds, 3), operations=ops, stages=stages, error_messages=run.messages)  # fmt: skip


def table(r: Report) -> str:
    """The report as a text table."""
    lines = [f"agentmem bench: {r.target}, project {r.project}, {r.clients} client{'s' * (r.clients > 1)}, "
             f"mix {r.mix}, {r.seconds:.1f} s, queries {r.queries}",  # fmt: skip
             f"{'operation':<14}{'requests':>9}{'errors':>8}{'req/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"]
    for f in r.operations:
        lines.append(f"{f.name:<14}{f.requests:>9}{f.errors:>8}{f.per_second:>9.1f}"
                     f"{f.p50_ms:>9.2f}{f.p95_ms:>9.2f}{f.p99_ms:>9.2f}")  # fmt: skip
    if r.stages:
        lines.append("recall stages, as timed by the engine (ms):")
        for s in r.stages:
            lines.append(f"  {s.name:<12}{s.recalls:>9}{'':>8}{'':>9}{s.p50_ms:>9.2f}{s.p95_ms:>9.2f}{s.p99_ms:>9.2f}")
    lines += [f"error: {m}" for m in r.error_messages]
    return "\n".join(lines)


def _check_png() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ValidationError("--png needs matplotlib: pip install 'agentmem[bench]'") from None


def plot(r: Report, run: _Run, path: Path) -> None:
    """Latency distribution of each operation, and the recall stages' p50 and p95."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for op, ms in run.ms.items():
        if ms:
            xs = np.sort(ms)
            left.plot(xs, np.arange(1, len(xs) + 1) / len(xs), label=f"{op} ({len(xs)})")
    left.set(xlabel="latency (ms)", ylabel="share of requests at most", xscale="log", title="latency")
    left.legend()
    names = [s.name for s in r.stages]
    x = np.arange(len(names))
    right.bar(x - 0.2, [s.p50_ms for s in r.stages], 0.4, label="p50")
    right.bar(x + 0.2, [s.p95_ms for s in r.stages], 0.4, label="p95")
    right.set_xticks(x, names, rotation=30)
    right.set(ylabel="ms", title="recall stages")
    right.legend()
    fig.suptitle(f"agentmem bench: {r.clients} clients, mix {r.mix}, {r.target}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def run_bench(args: argparse.Namespace, mem: MemoryAPI, timings: Timings, target: str) -> int:
    """Seed (if needed), measure, print the table, write --json/--png; the scratch project goes at
    the end. `target` names the service or data directory `mem` is."""
    reads, writes = args.mix
    if args.png:
        _check_png()
    if reads == 0 and args.queries:
        raise ValidationError("--queries has no use with --mix 0/100 (no recalls)")
    user_queries = _read_queries(args.queries) if args.queries else None
    scratch = _preflight(mem) if writes or args.project is None else None
    project = args.project or scratch
    assert project is not None
    try:
        if args.project is None:
            for text in _seed_texts(SEED_MEMORIES):
                mem.remember(text, project=project)
        queries = (user_queries or _sampled(mem, project)) if reads else []
        source = f"{len(queries)} from {args.queries}" if user_queries else f"{len(queries)} sampled from {project}"
        run, seconds = _measure(args, mem, timings, queries, project, scratch)
    finally:
        if scratch is not None:
            try:
                mem.delete(reason=DELETE_REASON, project=scratch)
            except (AgentMemError, KeyboardInterrupt) as exc:
                print(f"agentmem: could not remove the scratch project {scratch} ({exc}); remove it with "
                      f"`agentmem delete --project {scratch} --reason bench`", file=sys.stderr)  # fmt: skip
    report = _report(args, target, run, seconds, project, scratch, source)
    print(msgspec.json.encode(report).decode() if args.json else table(report))  # agentmem --json bench: JSON
    if args.json_file:
        args.json_file.write_bytes(msgspec.json.format(msgspec.json.encode(report)) + b"\n")
    if args.png:
        plot(report, run, args.png)
    return 1 if not any(f.requests for f in report.operations) else 0
