"""How often the supersession rule fires on SICK sentence pairs: a check against false kills.

    python -m benchmarks.sick           # about a minute (embeds 9,000 sentences once, then cached)

SICK (sick2014_train.tsv, read in place from the shared data folder) pairs two sentences
and judges whether A entails B, contradicts it, or neither (NEUTRAL). For agentmem a
NEUTRAL pair is two different claims: if remembering B after A supersedes A, a live fact
was killed (a false kill). ENTAILMENT pairs say the same thing (firing is harmless),
CONTRADICTION pairs are the kind of change supersession is for.

Each pair goes through the product's own `agentmem.supersede.decide()`: A is the only
current candidate, B the new memory (kind "fact", no key, no triple), and the cosine
of their MiniLM embeddings is passed as the real path passes it (`cosines`, what the
vector index returns). The rule "fires" when the outcome is "superseded". The previous
rule (Jaccard >= 0.7 alone) is measured by loading agentmem/supersede.py as committed at
BASE_COMMIT, not by a reimplementation.

Reported: fire rates by judgment at the default thresholds, the previous rule, each of
the two new rules alone, and sweeps over the thresholds. Results: sick.json / .md / .png.
"""

from __future__ import annotations

import csv
import functools
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from agentmem.currentness import pair
from agentmem.records import MemoryVersion
from agentmem.supersede import Thresholds
from agentmem.supersede import decide as supersede_decide
from benchmarks.embedding import add_arguments, cache_name, info, kind_of, model_embedder
from benchmarks.harness.cli import parser, progress, say
from benchmarks.harness.embedder import cached_embeddings
from benchmarks.harness.machine import machine_info
from benchmarks.harness.paths import DEFAULT_DATA, REPO_ROOT
from benchmarks.harness.report import pyplot, save_figure, write_results
from benchmarks.harness.tables import table

FILE = "sick2014_train.tsv"
LABELS = ("NEUTRAL", "ENTAILMENT", "CONTRADICTION")
BASE_COMMIT = "6b824ca"  # the rule before this work: Jaccard >= 0.7
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def load_pairs(data_dir: Path) -> list[dict[str, str]]:
    path = data_dir / FILE
    if not path.exists():
        raise SystemExit(f"{path} not found (use --data)")
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [r for r in rows if r.get("entailment_judgment") in LABELS]


def memory(text: str) -> MemoryVersion:
    return MemoryVersion(
        id=1, lineage_id=1, version=1, parent_id=None, is_latest=True, status="active", content=text,
        tier="semantic", kind="fact", project="p", source="api", salience=0.5, confidence=0.7,
        created_at=T0, valid_from=T0, last_reinforced_at=T0,
    )  # fmt: skip


def fires(decide_fn: Callable[..., Any], a: str, b: str, cos: float | None, thresholds: Any) -> str | None:
    """The reason `decide` supersedes A when B arrives, or None when it does not."""
    kwargs: dict[str, Any] = {} if cos is None else {"cosines": {1: cos}}
    d = decide_fn(
        kind="fact", content=b, triple_object=None, keyed=None, slotted=None, exact=None,
        candidates=[memory(a)], thresholds=thresholds, **kwargs,
    )  # fmt: skip
    return d.reason if d.outcome == "superseded" else None


def rates(
    pairs: list[dict[str, str]],
    cos: np.ndarray,
    decide_fn: Callable[..., Any],
    thresholds: Any,
    with_cos: bool = True,
    labels: Sequence[str] = LABELS,
) -> dict[str, Any]:
    """Per label: pairs, how many fired, the rate, and the reasons (B remembered after A)."""
    out: dict[str, Any] = {}
    for label in labels:
        idx = [i for i, p in enumerate(pairs) if p["entailment_judgment"] == label]
        reasons = [
            fires(decide_fn, pairs[i]["sentence_A"], pairs[i]["sentence_B"], float(cos[i]) if with_cos else None,
                  thresholds)
            for i in idx
        ]  # fmt: skip
        n_fire = sum(r is not None for r in reasons)
        out[label] = {
            "pairs": len(idx),
            "fired": n_fire,
            "rate": round(n_fire / len(idx), 4) if idx else None,
            "by_reason": {r: reasons.count(r) for r in sorted({r for r in reasons if r})},
        }
    return out


def decide_at(commit: str) -> Callable[..., Any] | None:
    """`decide` from agentmem/supersede.py as committed at `commit` (None if git cannot show it).
    Rules that knew no cosines are called without them."""
    try:
        src = subprocess.run(
            ["git", "show", f"{commit}:agentmem/supersede.py"], cwd=REPO_ROOT, capture_output=True, text=True,
            check=True, timeout=30,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(f"agentmem_supersede_{commit}", f.name)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    if "cosines" in mod.decide.__code__.co_varnames:
        return lambda **kw: mod.decide(**{**kw, "thresholds": mod.Thresholds()})
    return lambda **kw: mod.decide(**{k: v for k, v in kw.items() if k != "cosines"})


def examples(
    pairs: list[dict[str, str]],
    cos: np.ndarray,
    thresholds: Thresholds,
    label: str,
    decide: Callable[..., Any],
    n: int = 12,
) -> list:
    out = []
    for i, p in enumerate(pairs):
        if p["entailment_judgment"] != label:
            continue
        r = fires(decide, p["sentence_A"], p["sentence_B"], float(cos[i]), thresholds)
        if r:
            out.append({"A": p["sentence_A"], "B": p["sentence_B"], "reason": r, "cosine": round(float(cos[i]), 3)})
        if len(out) >= n:
            break
    return out


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5), sharey=True)
    styles = {"NEUTRAL": "tab:red", "ENTAILMENT": "tab:green", "CONTRADICTION": "tab:blue"}
    ax = axes[0]
    for rc, dash in zip(results["sweep_restate"]["restate_cosines"], ("-", "--", ":", "-."), strict=False):
        pts = [p for p in results["sweep_restate"]["points"] if p["restate_cosine"] == rc]
        for label in LABELS:
            ax.plot([p["supersede"] for p in pts], [p["rates"][label]["rate"] for p in pts], dash,
                    color=styles[label], label=f"{label}, cosine >= {rc}")  # fmt: skip
    ax.axvline(results["defaults"]["supersede"], color="grey", lw=0.8)
    ax.set_xlabel("Jaccard threshold `supersede`")
    ax.set_ylabel("share of pairs where B supersedes A")
    ax.set_title("restatement rule alone")
    ax.legend(fontsize=6)
    ax = axes[1]
    pts = results["sweep_value"]["points"]
    for label in LABELS:
        ax.plot([p["value_cosine"] for p in pts], [p["rates"][label]["rate"] for p in pts], color=styles[label],
                label=label)  # fmt: skip
    ax.axvline(results["defaults"]["value_cosine"], color="grey", lw=0.8)
    ax.set_xlabel("`value_cosine`")
    ax.set_title("same-slot new-value rule alone")
    ax.legend(fontsize=7)
    ax = axes[2]
    pts = results["sweep_jaccard_only"]["points"]
    for label in LABELS:
        ax.plot([p["supersede"] for p in pts], [p["rates"][label]["rate"] for p in pts], color=styles[label],
                label=label)  # fmt: skip
    ax.axvline(0.7, color="grey", lw=0.8)
    ax.set_xlabel("Jaccard threshold (previous rule, Jaccard alone)")
    ax.set_title(f"previous rule (at {BASE_COMMIT})")
    ax.legend(fontsize=7)
    fig.suptitle(f"SICK train ({results['pairs']} pairs): how often the supersession rule fires, by judgment")
    save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser("sick", __doc__, data=DEFAULT_DATA)
    add_arguments(p)
    args = p.parse_args(argv)
    started = time.perf_counter()
    pairs = load_pairs(args.data)
    kind = kind_of(args)
    emb = model_embedder(kind, batch_size=128)
    texts = list(dict.fromkeys(s for p in pairs for s in (p["sentence_A"], p["sentence_B"])))
    vecs = cached_embeddings(
        texts, len(texts), emb.embed, cache_name(kind, emb.name), emb.dim, cache_dir=args.cache_dir
    )
    row = {t: i for i, t in enumerate(texts)}
    a = vecs[[row[p["sentence_A"]] for p in pairs]]
    b = vecs[[row[p["sentence_B"]] for p in pairs]]
    cos = (a * b).sum(axis=1)
    embed_s = time.perf_counter() - started
    # as a write decides: the pair model's word weights may keep a fact added beside A current
    judge = pair.for_embedder(emb.name)
    decide = functools.partial(supersede_decide, beside=judge.adds_beside if judge is not None else None)
    defaults = Thresholds()
    d = {f: getattr(defaults, f) for f in defaults.__struct_fields__}
    say(f"{len(pairs)} pairs; rates at the defaults {d}")
    results: dict[str, Any] = {"benchmark": "sick", "file": FILE, "pairs": len(pairs), "defaults": d}
    results["counts"] = {lbl: sum(p["entailment_judgment"] == lbl for p in pairs) for lbl in LABELS}
    results["at_defaults"] = rates(pairs, cos, decide, defaults)
    results["at_defaults_without_cosines"] = rates(pairs, cos, decide, defaults, with_cos=False)
    results["restatement_only"] = rates(pairs, cos, decide, Thresholds(value_rule=False))
    results["new_value_only"] = rates(pairs, cos, decide, Thresholds(supersede=1.0, restate_cosine=1.0))
    old = decide_at(BASE_COMMIT)
    if old is not None:
        results["previous_rule"] = rates(pairs, cos, old, Thresholds())
    results["false_kill_examples_at_defaults"] = examples(pairs, cos, defaults, "NEUTRAL", decide)
    results["contradiction_fires_at_defaults"] = examples(pairs, cos, defaults, "CONTRADICTION", decide, 6)
    grid = [round(x, 2) for x in np.arange(0.4, 1.001, 0.05)]
    rcs = [0.0, 0.7, 0.8, 0.9]
    points = []
    for rc in progress(rcs, desc="restatement sweep"):
        for s in grid:
            th = Thresholds(supersede=s, hint=min(0.4, s), restate_cosine=rc, value_rule=False)
            points.append({"supersede": s, "restate_cosine": rc, "rates": rates(pairs, cos, decide, th)})
    results["sweep_restate"] = {"restate_cosines": rcs, "points": points}
    vpoints = []
    for vc in progress([round(x, 2) for x in np.arange(0.0, 0.951, 0.05)], desc="value sweep"):
        th = Thresholds(supersede=1.0, restate_cosine=1.0, value_cosine=vc)
        vpoints.append({"value_cosine": vc, "rates": rates(pairs, cos, decide, th)})
    results["sweep_value"] = {"points": vpoints}
    if old is not None:
        jpoints = []
        for s in progress(grid, desc="previous-rule sweep"):
            jpoints.append({"supersede": s, "rates": rates(pairs, cos, old, Thresholds(supersede=s, hint=min(0.4, s)))})
        results["sweep_jaccard_only"] = {"points": jpoints}
    results["seconds"] = {"embed_and_load": round(embed_s, 1), "total": round(time.perf_counter() - started, 1)}
    results["embedder"] = info(kind, emb)
    results["machine"] = machine_info(info(kind, emb))

    def line(name: str, r: dict[str, Any]) -> list[str]:
        return [name, *(f"{100 * r[lbl]['rate']:.1f}% ({r[lbl]['fired']}/{r[lbl]['pairs']})" for lbl in LABELS)]

    rules = [("new, defaults", "at_defaults"), ("new, defaults, no cosines known", "at_defaults_without_cosines"),
             ("new: restatement rule alone", "restatement_only"), ("new: same-slot new-value rule alone",
             "new_value_only")]  # fmt: skip
    if "previous_rule" in results:
        rules.insert(0, (f"previous: Jaccard >= 0.7 (at {BASE_COMMIT})", "previous_rule"))
    rule_table = table(["rule", "NEUTRAL (false kill)", "ENTAILMENT", "CONTRADICTION"],
                       (line(name, results[key]) for name, key in rules))  # fmt: skip

    def swept(s: float, rc: float) -> str:
        pt = next(p for p in points if p["supersede"] == s and p["restate_cosine"] == rc)["rates"]
        return " / ".join(f"{100 * pt[lbl]['rate']:.1f}%" for lbl in LABELS)

    sweep = table(["supersede (Jaccard)", *(f"cos>={rc}: NEUTRAL / ENTAIL / CONTRA" for rc in rcs)],
                  ([s, *(swept(s, rc) for rc in rcs)] for s in grid))  # fmt: skip
    vs = table(["value_cosine", *LABELS], ([pt["value_cosine"], *(f"{100 * pt['rates'][lbl]['rate']:.2f}%"
                                                                   for lbl in LABELS)] for pt in vpoints))  # fmt: skip
    md = (
        f"# SICK: how often the supersession rule fires\n\n{len(pairs)} pairs of {FILE} "
        f"({results['counts']}); B is remembered after A, through `agentmem.supersede.decide()` with the "
        f"pair's MiniLM cosine. Defaults: {d}. Command: `python -m benchmarks.sick`; "
        f"{results['seconds']['total']} s.\n\n"
        + "\n".join(rule_table)
        + "\n\n## Restatement rule alone, swept\n\n"
        + "\n".join(sweep)
        + "\n\n## Same-slot new-value rule alone, swept\n\n"
        + "\n".join(vs)
        + "\n"
    )
    write_results(args.out, "sick", results, md)
    plot(results, args.out / "sick.png")
    print("\n".join(rule_table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
