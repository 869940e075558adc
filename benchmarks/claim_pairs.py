"""Supersession decisions on hand-written claim pairs: how many real updates the rules catch, and at what cost.

    python -m benchmarks.claim_pairs        # under a minute (embeds ~550 sentences once, then cached)

data/supersession_pairs*.jsonl hold pairs of claims (`old`, said first, then `new`),
labelled `update` (the same fact, a new value: the old one should be superseded),
`restate` (the same value in other words: superseding or reinforcing is right) and
`different` (another fact: both stay true, so firing kills a live fact). They were written
by someone who was not shown the rules, in the many ways people state a change, so the
figures say how the rules do on phrasing they were not built from, unlike the generated
changing-facts scenario. There are two sets by two writers: `dev`
(data/supersession_pairs.jsonl, 278 pairs), which was looked at while the rules and
thresholds were chosen, and `test` (data/supersession_pairs_test.jsonl, 212 pairs), which
was run only after they were fixed.

Each pair goes through `agentmem.supersede.decide()` exactly as in benchmarks.sick: the
old claim is the only current candidate, the new one arrives with the pair's MiniLM
cosine. Reported, side by side in one run: the rules now, the rules as committed before
this benchmark existed (PREVIOUS_COMMIT), the Jaccard-only rule (sick.BASE_COMMIT), and a
sweep over `value_cosine`. Results: claim_pairs.json / .md / .png in --out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentmem.supersede import Thresholds, decide
from benchmarks import sick
from benchmarks.embedding import add_arguments, cache_name, info, kind_of, model_embedder
from benchmarks.harness.cli import parser, say
from benchmarks.harness.embedder import cached_embeddings
from benchmarks.harness.machine import machine_info
from benchmarks.harness.paths import REPO_ROOT
from benchmarks.harness.report import pyplot, save_figure, write_results
from benchmarks.harness.tables import table
from benchmarks.sick import BASE_COMMIT, decide_at, fires

# dev: looked at while the rules and thresholds were chosen; test: run only once they were fixed
SETS = {"dev": REPO_ROOT / "data" / "supersession_pairs.jsonl",
        "test": REPO_ROOT / "data" / "supersession_pairs_test.jsonl"}  # fmt: skip
LABELS = ("update", "restate", "different")
PREVIOUS_COMMIT = "e30eae6"  # the rules before the value-rule work of this benchmark
SWEEP = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8)


def load(path: Path) -> list[dict[str, str]]:
    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    bad = [p for p in pairs if p.get("label") not in LABELS or not p.get("old") or not p.get("new")]
    if bad:
        raise SystemExit(f"{path}: {len(bad)} pairs without old, new and a label in {LABELS}")
    return pairs


def rates(pairs: list[dict[str, str]], cos: np.ndarray, decide_fn: Callable[..., Any], th: Any) -> dict[str, Any]:
    """Per label: pairs, how many fired, the rate, and the reasons (sick.rates over these pairs)."""
    rows = [{"entailment_judgment": p["label"], "sentence_A": p["old"], "sentence_B": p["new"]} for p in pairs]
    return sick.rates(rows, cos, decide_fn, th, labels=LABELS)


def listing(pairs: list[dict[str, str]], cos: np.ndarray, label: str, want: bool) -> list[dict[str, Any]]:
    """The pairs of `label` where the rules now fire (want=True) or do not (want=False)."""
    out = []
    for p, c in zip(pairs, cos, strict=True):
        if p["label"] == label and (fires(decide, p["old"], p["new"], float(c), Thresholds()) is not None) is want:
            out.append({"old": p["old"], "new": p["new"], "cosine": round(float(c), 3)})
    return out


def markdown(results: dict[str, Any]) -> str:
    def cell(r: dict[str, Any]) -> str:
        return f"{100 * r['rate']:.1f}% ({r['fired']}/{r['pairs']})"

    sets = results["sets"].items()
    lines = table(["rule", "pairs", "update: caught", "restate: fired", "different: false kill"],
                  ([name, set_name, *(cell(r[lbl]) for lbl in LABELS)]
                   for set_name, res in sets for name, r in res["systems"].items()))  # fmt: skip
    lines += ["", *table(["value_cosine", "pairs", "update", "restate", "different"],
                         ([pt["value_cosine"], set_name, *(cell(pt["rates"][lbl]) for lbl in LABELS)]
                          for set_name, res in sets for pt in res["sweep_value_cosine"]))]  # fmt: skip
    return "\n".join(lines)


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    colors = dict(zip(LABELS, ("tab:blue", "tab:green", "tab:red"), strict=True))
    top = 0.5
    for set_name, style in zip(results["sets"], ("-o", "--s"), strict=False):
        pts = results["sets"][set_name]["sweep_value_cosine"]
        xs = [p["value_cosine"] for p in pts]
        for label in LABELS:
            ys = [p["rates"][label]["rate"] for p in pts]
            top = max(top, *ys)
            ax.plot(xs, ys, style, color=colors[label], label=f"{label} ({set_name})")
    ax.axvline(results["defaults"]["value_cosine"], color="grey", lw=0.8)
    ax.set_xlabel("value_cosine (marked_cosine kept at its default)")
    ax.set_ylabel("share of pairs where the rule fires")
    ax.set_ylim(0, top + 0.05)
    ax.set_title("Hand-written claim pairs: supersession by value_cosine")
    ax.legend(fontsize=7, ncol=2)
    save_figure(fig, path)


def evaluate(pairs: list[dict[str, str]], cos: np.ndarray) -> dict[str, Any]:
    defaults = Thresholds()
    systems: dict[str, Any] = {"agentmem now": rates(pairs, cos, decide, defaults)}
    for name, commit in ((f"agentmem at {PREVIOUS_COMMIT}", PREVIOUS_COMMIT), (f"Jaccard >= 0.7 ({BASE_COMMIT})",
                                                                               BASE_COMMIT)):
        old = decide_at(commit)
        if old is not None:
            systems[name] = rates(pairs, cos, old, defaults)
    return {
        "pairs": len(pairs),
        "counts": {lbl: sum(p["label"] == lbl for p in pairs) for lbl in LABELS},
        "systems": systems,
        "sweep_value_cosine": [
            {"value_cosine": vc, "rates": rates(pairs, cos, decide, Thresholds(value_cosine=vc))} for vc in SWEEP
        ],
        "false_kills": listing(pairs, cos, "different", True),
        "missed_updates": listing(pairs, cos, "update", False),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = parser("claim_pairs", __doc__)
    p.add_argument("--data-file", type=Path, action="append", help="a JSON Lines file of pairs (repeatable); "
                   "default: the dev and test sets in data/")  # fmt: skip
    add_arguments(p)
    args = p.parse_args(argv)
    started = time.perf_counter()
    files = {f.stem: f for f in args.data_file} if args.data_file else SETS
    loaded = {name: load(path) for name, path in files.items()}
    kind = kind_of(args)
    emb = model_embedder(kind)
    texts = list(dict.fromkeys(s for pairs in loaded.values() for p in pairs for s in (p["old"], p["new"])))
    vecs = cached_embeddings(
        texts, len(texts), emb.embed, cache_name(kind, emb.name), emb.dim, cache_dir=args.cache_dir
    )
    row = {t: i for i, t in enumerate(texts)}
    sets = {}
    for name, pairs in loaded.items():
        say(f"{name}: {len(pairs)} pairs")
        cos = (vecs[[row[p["old"]] for p in pairs]] * vecs[[row[p["new"]] for p in pairs]]).sum(axis=1)
        sets[name] = {"file": _shown(files[name]), **evaluate(pairs, cos)}
    defaults = Thresholds()
    results = {
        "benchmark": "claim_pairs",
        "defaults": {f: getattr(defaults, f) for f in defaults.__struct_fields__},
        "sets": sets,
        "seconds": round(time.perf_counter() - started, 2),
        "embedder": info(kind, emb),
        "machine": machine_info(info(kind, emb)),
    }
    table = markdown(results)
    header = (
        "# Supersession on hand-written claim pairs\n\n"
        + "; ".join(f"{name}: {r['pairs']} pairs {r['counts']} in `{r['file']}`" for name, r in sets.items())
        + ". The old claim is the only candidate, the new one arrives with the pair's MiniLM cosine. "
        f"Command: `python -m benchmarks.claim_pairs`; {results['seconds']} s.\n\n"
    )
    kills = [f"- ({name}) {k['old']} -> {k['new']} (cosine {k['cosine']})" for name, r in sets.items()
             for k in r["false_kills"]]  # fmt: skip
    listed = "\n".join(kills) or "- none"
    write_results(args.out, "claim_pairs", results, f"{header}{table}\n\nFalse kills now:\n\n{listed}\n")
    plot(results, args.out / "claim_pairs.png")
    print(table)
    return 0


def _shown(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


if __name__ == "__main__":
    raise SystemExit(main())
