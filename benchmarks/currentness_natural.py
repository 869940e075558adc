"""Currentness on natural writing: does the newer statement win, and do look-alike facts both stay?

    python -m benchmarks.currentness_natural                    # dev half, this tree against main
    python -m benchmarks.currentness_natural --half confirm     # the confirming half: run once, never tune on it
    python -m benchmarks.currentness_natural --against 2e7933b  # another baseline

data/currentness_natural.jsonl holds 180 pairs written by a helper that had not read the code
or its rules: 120 updates in six styles (explicit, implicit, number, preference, retraction,
handover) and 60 look-alike pairs that are both true (parallel, coexisting, near topic), each
with a question, split into a `dev` and a `confirm` half. Each pair is written through
`Memory.remember` into a project of its own (the older statement, then the newer a month later)
and recalled with its question at k=5, plain and with 20 unrelated memories
(data/currentness_distractors.jsonl) written first. Side by side in one run, each in a process
of its own with its tree alone on PYTHONPATH (benchmarks/currentness_natural_side.py): this tree,
the baseline (a `git worktree` of `--against`), and plain cosine over the same MiniLM vectors.

Reported per system, half and setting: updates whose newer statement ranks first; updates whose
older statement is still in the top 5 and is marked `older_than` there (or superseded at write);
look-alike pairs with both in the top 5, marked, or superseded. Results: currentness_natural.json /
.md / .png in --out.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness.cli import command_line, parser, say
from benchmarks.harness.machine import machine_info
from benchmarks.harness.paths import REPO_ROOT
from benchmarks.harness.report import publish, pyplot, save_figure
from benchmarks.harness.tables import table

PAIRS = REPO_ROOT / "data" / "currentness_natural.jsonl"
DISTRACTORS = REPO_ROOT / "data" / "currentness_distractors.jsonl"
SIDE = Path(__file__).resolve().parent / "currentness_natural_side.py"
WORKTREES = Path(__file__).resolve().parent / ".cache" / "currentness_natural"
NAME = "currentness_natural"
DEFAULT_AGAINST = "2e7933b"  # main before this benchmark's issue (the rules of 2026-12)
SEED = 20261204


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def worktree(ref: str) -> Path:
    """A detached `git worktree` of `ref`, made once and kept under benchmarks/.cache."""
    sha = subprocess.run(["git", "rev-parse", "--short", ref], cwd=REPO_ROOT, check=True, capture_output=True,
                         text=True).stdout.strip()  # fmt: skip
    path = WORKTREES / sha
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "worktree", "add", "--detach", str(path), sha], cwd=REPO_ROOT, check=True,
                       capture_output=True)  # fmt: skip
    return path


def run_side(tree: Path, spec: dict[str, Any], cosine: bool = False) -> list[dict[str, Any]]:
    """The rows one tree's side produced; it must have imported agentmem from that tree."""
    cmd = [sys.executable, str(SIDE), *(["--cosine"] if cosine else [])]
    env = {**_environ(), "PYTHONPATH": str(tree)}
    done = subprocess.run(cmd, input=json.dumps(spec), capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"side {tree} failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout)
    if Path(out["imported_from"]) != tree.resolve():
        raise RuntimeError(f"side {tree} imported agentmem from {out['imported_from']}")
    rows: list[dict[str, Any]] = out["rows"]
    return rows


def _environ() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def pct(n: int, d: int) -> float | None:
    return None if d == 0 else round(100.0 * n / d, 1)


def score(rows: list[dict[str, Any]], items: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The figures of one system over one half and setting."""
    up = [r for r in rows if items[r["id"]]["type"] == "update"]
    look = [r for r in rows if items[r["id"]]["type"] == "lookalike"]
    stale_in = [r for r in up if r["older_rank"] is not None]
    by_style: dict[str, list[dict[str, Any]]] = {}
    for r in up:
        by_style.setdefault(items[r["id"]]["style"], []).append(r)
    return {
        "updates": len(up),
        "newer_first": pct(sum(r["newer_rank"] == 1 for r in up), len(up)),
        "stale_in_top5": pct(len(stale_in), len(up)),
        "stale_marked_when_shown": pct(sum(r["older_marked"] for r in stale_in), len(stale_in)),
        "stale_unmarked_in_top5": pct(sum(not r["older_marked"] for r in stale_in), len(up)),
        "superseded_at_write": pct(sum(r["superseded"] for r in up), len(up)),
        "lookalikes": len(look),
        "lookalike_both_top5": pct(
            sum(r["older_rank"] is not None and r["newer_rank"] is not None for r in look), len(look)
        ),
        "lookalike_marked": pct(sum(r["older_marked"] for r in look), len(look)),
        "lookalike_superseded": pct(sum(r["superseded"] for r in look), len(look)),
        "newer_first_by_style": {s: pct(sum(r["newer_rank"] == 1 for r in rs), len(rs)) for s, rs in by_style.items()},
        "marked_by": _count(r["reason"] for r in up if r["older_marked"]),
        "lookalike_marked_by": _count(r["reason"] for r in look if r["older_marked"]),
        "misses": sorted(r["id"] for r in up if r["newer_rank"] != 1),
        "lookalike_hurt": sorted(
            f"{r['id']}:{r['reason'] or ('superseded' if r['superseded'] else 'out of top 5')}"
            for r in look
            if r["older_marked"] or r["superseded"] or r["older_rank"] is None
        ),
    }


def _count(reasons: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in reasons:
        out[str(r)] = out.get(str(r), 0) + 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(NAME, __doc__)
    p.add_argument("--half", choices=("dev", "confirm", "all"), default="dev")
    p.add_argument("--against", default=DEFAULT_AGAINST, help="baseline commit (a git worktree of it is used)")
    p.add_argument("--noise", type=int, nargs="+", default=[0, 20], help="unrelated memories per project")
    p.add_argument("--pairs", type=Path, default=PAIRS)
    args = p.parse_args(argv)
    items = [i for i in load(args.pairs) if args.half == "all" or i["half"] == args.half]
    distractors = [d["text"] for d in load(DISTRACTORS)]
    spec = {"items": items, "distractors": distractors, "noise": args.noise, "seed": SEED}
    sides = {"new": REPO_ROOT, "baseline": worktree(args.against)}
    by_id = {i["id"]: i for i in items}
    results: dict[str, Any] = {"command": command_line(NAME, argv), "half": args.half, "against": args.against,
                               "pairs": len(items), "machine": machine_info(), "systems": {}}  # fmt: skip
    runs = {name: (tree, False) for name, tree in sides.items()} | {"cosine": (REPO_ROOT, True)}
    for name, (tree, cosine) in runs.items():
        say(f"{name}: {len(items)} pairs x settings {args.noise} ...")
        rows = run_side(tree, spec, cosine=cosine)
        results["systems"][name] = {
            str(n): score([r for r in rows if r["noise"] == n], by_id) for n in args.noise
        }
    name = NAME if args.half == "dev" else f"{NAME}_{args.half}"
    publish(results, args.out, name, render, plot)
    return 0


ROWS = [
    ("newer_first", "updates: the newer statement ranks first", ">= 90"),
    ("stale_marked_when_shown", "updates: the older one, when still in the top 5, is marked", ">= 90"),
    ("stale_unmarked_in_top5", "updates: the older one unmarked in the top 5 (of all updates)", ""),
    ("superseded_at_write", "updates superseded at write", ""),
    ("lookalike_both_top5", "look-alikes: both in the top 5", ">= 95"),
    ("lookalike_marked", "look-alikes: marked older (soft false kill)", "<= 3"),
    ("lookalike_superseded", "look-alikes: superseded at write (false kill)", "<= 2"),
]


def render(results: dict[str, Any]) -> str:
    systems = list(results["systems"])
    noises = list(next(iter(results["systems"].values())))
    lines = [f"## Currentness on natural writing: {results['half']} half, {results['pairs']} pairs (k=5)", ""]
    cols = ["%", "target", *(f"{s} ({n} noise)" for n in noises for s in systems)]
    rows = ([label, target, *(_fmt(results["systems"][s][n][key]) for n in noises for s in systems)]
            for key, label, target in ROWS)  # fmt: skip
    lines += table(cols, rows, "l" + "r" * (len(cols) - 1))
    by_style = {s: results["systems"][s][noises[0]]["newer_first_by_style"] for s in systems}
    lines += ["", "Newer first by style (no noise):", ""]
    lines += table(["style", *systems], ([style, *(_fmt(by_style[s].get(style)) for s in systems)]
                                         for style in by_style[systems[0]]), "l" + "r" * len(systems))  # fmt: skip
    for s in systems:
        got = results["systems"][s][noises[0]]
        lines.append(f"- {s}: updates marked by {got['marked_by']}; look-alikes marked by {got['lookalike_marked_by']}")
    lines += ["", f"Baseline: {results['against']}. Misses of `new` (no noise): "
              + ", ".join(results["systems"]["new"][noises[0]]["misses"]), ""]  # fmt: skip
    return "\n".join(lines)


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.1f}"


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    systems = list(results["systems"])
    noises = list(next(iter(results["systems"].values())))
    keys = [k for k, _, _ in ROWS if k not in ("stale_unmarked_in_top5",)]
    fig, axes = plt.subplots(1, len(noises), figsize=(6 * len(noises), 4.5), squeeze=False)
    for ax, n in zip(axes[0], noises, strict=True):
        width = 0.8 / len(systems)
        for s_i, s in enumerate(systems):
            vals = [results["systems"][s][n][k] or 0 for k in keys]
            ax.bar([x + s_i * width for x in range(len(keys))], vals, width, label=s)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(keys))], keys, rotation=35, ha="right", fontsize=7)
        ax.set_ylim(0, 100)
        ax.set_title(f"{results['half']} half, {n} unrelated memories")
        ax.legend(fontsize=7)
    save_figure(fig, path)


if __name__ == "__main__":
    sys.exit(main())
