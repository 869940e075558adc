"""The shipped pair model on labelled pairs it never saw: what it orders and marks, by style.

    python -m benchmarks.pair_heldout        # under a minute (embeds ~2,400 short texts once, then cached)

data/currentness_pairs_heldout.jsonl holds 1,202 pairs (`older`, then `newer`) labelled
`replaces`, `restates` or `other` (both stay true), written by hand by a helper that had read
neither the code, the evaluation sets nor the training pairs, after the model was trained. It is
not training data: the figures say how `agentmem.currentness.pair` does on writing it was not
fitted to, beside the out-of-fold figures its card reports. Recall puts the newer text first when
a pair is `ordered`, and marks the older one `older_than` when it is `marked`.

Side by side in one run: the shipped model; its ordering head alone (the sentence vectors, no
words); and newer first for any two texts about one topic (cosine >= the model's `topic`),
which is what plain "newest first" would do. Results: pair_heldout.json / .md / .png in --out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agentmem.currentness.pair import shipped
from benchmarks.embedding import add_arguments, cache_name, info, kind_of, model_embedder
from benchmarks.harness.cli import command_line, parser, say
from benchmarks.harness.embedder import cached_embeddings
from benchmarks.harness.machine import machine_info
from benchmarks.harness.paths import REPO_ROOT
from benchmarks.harness.report import pyplot, save_figure, write_results
from benchmarks.harness.tables import table

NAME = "pair_heldout"
DATA = REPO_ROOT / "data" / "currentness_pairs_heldout.jsonl"
LABELS = ("replaces", "other", "restates")
SYSTEMS = ("pair model", "ordering head alone", "topic cosine alone")


def load(path: Path, limit: int | None = None) -> list[dict[str, str]]:
    pairs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    bad = [p for p in pairs if p.get("label") not in LABELS or not p.get("older") or not p.get("newer")]
    if bad:
        raise SystemExit(f"{path}: {len(bad)} pairs without older, newer or a known label, e.g. {bad[0]}")
    return pairs[:limit]


def verdicts(pairs: list[dict[str, str]], older: np.ndarray, newer: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """Per system: which pairs it orders newer first, and which it marks."""
    model = shipped()
    a, b = [p["older"] for p in pairs], [p["newer"] for p in pairs]
    ordered, marked = model.judge_each(older, newer, a, b)
    alone = model.orders.each(older, newer, a, b, model.vocabulary) >= model.order
    topic = np.einsum("ij,ij->i", older, newer) >= model.topic
    none = np.zeros(len(pairs), dtype=bool)
    return {
        "pair model": {"ordered": ordered, "marked": marked},
        "ordering head alone": {"ordered": alone, "marked": none},
        "topic cosine alone": {"ordered": topic, "marked": none},
    }


def shares(pairs: list[dict[str, str]], said: dict[str, np.ndarray]) -> dict[str, Any]:
    """Per label and per (label, style): pairs, and the percent ordered and marked."""

    def of(mask: np.ndarray) -> dict[str, Any]:
        n = int(mask.sum())
        pct = {k: round(100 * float(v[mask].mean()), 1) if n else None for k, v in said.items()}
        return {"pairs": n, **pct}

    labels = np.array([p["label"] for p in pairs])
    styles = np.array([p.get("style", "") for p in pairs])
    by_style = {f"{lbl}/{s}": of((labels == lbl) & (styles == s))
                for lbl in LABELS for s in sorted(set(styles[labels == lbl]))}  # fmt: skip
    return {"by_label": {lbl: of(labels == lbl) for lbl in LABELS}, "by_style": by_style}


def markdown(results: dict[str, Any]) -> str:
    cols = ["system", "replaces: ordered", "replaces: marked", "other: ordered", "other: marked (false mark)",
            "restates: ordered"]  # fmt: skip
    cells = (("replaces", "ordered"), ("replaces", "marked"), ("other", "ordered"), ("other", "marked"),
             ("restates", "ordered"))  # fmt: skip
    by_label = {name: results["systems"][name]["by_label"] for name in SYSTEMS}
    lines = table(cols, ([name, *(r[a][b] for a, b in cells)] for name, r in by_label.items()), "lrrrrr")
    card = results["out_of_fold"]
    lines += ["", "The model's card, out of fold on its training pairs: replaces marked "
              f"{100 * card['replacing_marked']:.1f}, ordered {100 * card['replacing_ordered']:.1f}; other marked "
              f"{100 * card['another_fact_marked']:.1f}, ordered {100 * card['another_fact_ordered']:.1f}.", ""]
    by_style = results["systems"]["pair model"]["by_style"].items()
    lines += table(["label / style (pair model)", "pairs", "ordered", "marked"],
                   ([key, r["pairs"], r["ordered"], r["marked"]] for key, r in by_style), "lrrr")  # fmt: skip
    return "\n".join(lines)


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    rows = results["systems"]["pair model"]["by_style"]
    keys = list(rows)
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(keys) + 1.2))
    y = np.arange(len(keys))
    ax.barh(y - 0.2, [rows[k]["ordered"] for k in keys], height=0.4, label="ordered newer first")
    ax.barh(y + 0.2, [rows[k]["marked"] for k in keys], height=0.4, label="older marked")
    ax.set_yticks(y, [f"{k} ({rows[k]['pairs']})" for k in keys], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("percent of pairs")
    ax.set_title("The shipped pair model on held-out pairs, by style")
    ax.legend(fontsize=7)
    save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(NAME, __doc__, data=DATA)
    p.add_argument("--limit", type=int, default=None, help="only the first N pairs")
    add_arguments(p)
    args = p.parse_args(argv)
    started = time.perf_counter()
    pairs = load(args.data, args.limit)
    kind = kind_of(args)
    emb = model_embedder(kind)
    texts = list(dict.fromkeys(t for q in pairs for t in (q["older"], q["newer"])))
    say(f"{len(pairs)} pairs, {len(texts)} texts")
    vecs = cached_embeddings(texts, len(texts), emb.embed, cache_name(kind, emb.name), emb.dim,
                             cache_dir=args.cache_dir)  # fmt: skip
    row = {t: i for i, t in enumerate(texts)}
    older = vecs[[row[q["older"]] for q in pairs]].astype(np.float32)
    newer = vecs[[row[q["newer"]] for q in pairs]].astype(np.float32)
    card = json.loads((REPO_ROOT / "agentmem" / "currentness" / "pair_model.json").read_text())
    results = {
        "benchmark": NAME,
        "command": command_line(NAME, argv),
        "data": str(args.data.relative_to(REPO_ROOT)) if args.data.is_relative_to(REPO_ROOT) else str(args.data),
        "pairs": len(pairs),
        "thresholds": card["thresholds"],
        "out_of_fold": card["out_of_fold"],
        "systems": {name: shares(pairs, said) for name, said in verdicts(pairs, older, newer).items()},
        "seconds": round(time.perf_counter() - started, 2),
        "embedder": info(kind, emb),
        "machine": machine_info(info(kind, emb)),
    }
    table = markdown(results)
    header = (f"# The pair model on held-out pairs\n\n{len(pairs)} pairs of `{results['data']}`, never trained on. "
              f"Percent of pairs. Command: `{results['command']}`; {results['seconds']} s.\n\n")  # fmt: skip
    write_results(args.out, NAME, results, header + table + "\n")
    plot(results, args.out / f"{NAME}.png")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
