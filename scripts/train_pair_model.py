"""Train the pair model that ships as agentmem/currentness/pair_model.{npz,json}.

    .venv/bin/python scripts/train_pair_model.py            # under a minute: embeds ~4,200 texts
    .venv/bin/python scripts/train_pair_model.py --check    # retrain and compare with the shipped file

Labelled pairs, all hand-written by helpers that had not read the rules (see data/README.md):
data/currentness_train_pairs*.jsonl (replaces / restates / other) and data/supersession_pairs*.jsonl
(update / restate / different). Positive: the newer text replaces the older one; negative: it
restates it or states another fact. Embedded with the packaged MiniLM model on ONNX Runtime; a
logistic regression (scikit-learn, lbfgs, L2) over `agentmem.currentness.pair.features`.

The thresholds come from the training pairs alone, never from an evaluation set: out-of-fold
probabilities (5 folds) give `mark`, the lowest probability at which at most 3% of the "another
fact" pairs are marked at recall, and `order`, the probability that 90% of the replacing pairs
reach (recall puts such pairs newest first, unmarked); `topic` is the cosine below which 5% of the
replacing pairs fall (chosen on the dev half of data/currentness_natural.jsonl: 10% gave 88.3
newer first, 5% 91.7).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentmem.currentness.pair import CARD, WEIGHTS, features  # noqa: E402

SOURCES = {  # file -> (older field, newer field, positive labels, "another fact" labels)
    "data/currentness_train_pairs.jsonl": ("older", "newer", {"replaces"}, {"other"}),
    "data/currentness_train_pairs_a.jsonl": ("older", "newer", {"replaces"}, {"other"}),
    "data/currentness_train_pairs_b.jsonl": ("older", "newer", {"replaces"}, {"other"}),
    "data/supersession_pairs.jsonl": ("old", "new", {"update"}, {"different"}),
    "data/supersession_pairs_test.jsonl": ("old", "new", {"update"}, {"different"}),
}
C = 1.0  # L2 strength, chosen on the dev half of data/currentness_natural.jsonl among 0.1, 0.3, 1, 3
FOLDS = 5
SEED = 7
MARK_FPR, ORDER_RECALL, TOPIC_QUANTILE = 0.03, 0.90, 0.05


def pairs() -> list[tuple[str, str, bool, bool]]:
    """(older, newer, replaces, another fact) for every labelled pair, in file order."""
    out = []
    for name, (old, new, positive, other) in SOURCES.items():
        for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out.append((row[old], row[new], row["label"] in positive, row["label"] in other))
    return out


def train(data: list[tuple[str, str, bool, bool]], vectors: dict[str, np.ndarray]) -> dict[str, object]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    x = np.stack([features(vectors[a], vectors[b], a, b) for a, b, _, _ in data]).astype(np.float64)
    y = np.array([p for _, _, p, _ in data])
    other = np.array([o for *_, o in data])

    def fit(rows: np.ndarray) -> LogisticRegression:
        return LogisticRegression(C=C, max_iter=5000).fit(x[rows], y[rows])

    oof = np.zeros(len(y))
    for tr, te in StratifiedKFold(FOLDS, shuffle=True, random_state=SEED).split(x, y):
        oof[te] = fit(tr).predict_proba(x[te])[:, 1]
    model = fit(np.arange(len(y)))
    negatives = np.sort(oof[other])

    def at_fpr(rate: float) -> float:  # the lowest threshold that marks at most `rate` of "another fact"
        return float(negatives[min(len(negatives) - 1, int(np.floor((1 - rate) * len(negatives))))]) + 1e-6

    mark = at_fpr(MARK_FPR)
    cosines = x[y, 0]
    return {
        "weights": model.coef_[0].astype(np.float32),
        "bias": float(model.intercept_[0]),
        "thresholds": {"mark": round(mark, 4),
                       "order": round(float(np.quantile(oof[y], 1 - ORDER_RECALL)), 4),
                       "topic": round(float(np.quantile(cosines, TOPIC_QUANTILE)), 4)},  # fmt: skip
        "out_of_fold": {
            "replacing_marked": round(float((oof[y] >= mark).mean()), 3),
            "another_fact_ordered": round(float((oof[other] >= np.quantile(oof[y], 1 - ORDER_RECALL)).mean()), 3),
            "another_fact_marked": round(float((oof[other] >= mark).mean()), 3),
        },
        "pairs": {"total": len(y), "replaces": int(y.sum()), "another_fact": int(other.sum())},
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="retrain and compare with the shipped weights")
    args = p.parse_args()
    from indexes.onnx_embed import OnnxEmbedder

    data = pairs()
    texts = sorted({t for a, b, _, _ in data for t in (a, b)})
    embedder = OnnxEmbedder()
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    trained = train(data, vectors)
    card = {
        "model": "logistic regression over agentmem.currentness.pair.features",
        "embedder": embedder.name if hasattr(embedder, "name") else "all-MiniLM-L6-v2 (ONNX)",
        "command": "python scripts/train_pair_model.py",
        "data": {name: hashlib.sha256((ROOT / name).read_bytes()).hexdigest()[:16] for name in SOURCES},
        "C": C,
        "thresholds": trained["thresholds"],
        "out_of_fold": trained["out_of_fold"],
        "pairs": trained["pairs"],
    }
    if args.check:
        with np.load(WEIGHTS) as npz:
            drift = float(np.abs(npz["weights"] - trained["weights"]).max())
        same = drift < 1e-3 and json.loads(CARD.read_text())["thresholds"] == card["thresholds"]
        print(f"max weight difference {drift:.2e}; thresholds {'equal' if same else 'differ'}")
        return 0 if same else 1
    np.savez(WEIGHTS, weights=trained["weights"], bias=np.float32(trained["bias"]))
    CARD.write_text(json.dumps(card, indent=2) + "\n")
    print(json.dumps(card, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
