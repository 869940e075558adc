"""Train the pair model that ships as agentmem/currentness/pair_model.{npz,json}.

    .venv/bin/python scripts/train_pair_model.py            # under a minute: embeds ~4,200 texts
    .venv/bin/python scripts/train_pair_model.py --check    # retrain and compare with the shipped file

Labelled pairs, all hand-written by helpers that had not read the rules (see data/README.md):
data/currentness_train_pairs*.jsonl (replaces / restates / other) and data/supersession_pairs*.jsonl
(update / restate / different). Positive: the newer text replaces the older one; negative: it
restates it or states another fact. Embedded with the packaged MiniLM model on ONNX Runtime; a
logistic regression (scikit-learn, lbfgs, L2) over `agentmem.currentness.pair.features` and
`word_features` (one input per added or dropped word seen in training; only words with a weight ship).

The thresholds come from the training pairs alone, never from an evaluation set: out-of-fold
probabilities (5 folds) give `mark`, the lowest probability at which at most 3% of the "another
fact" pairs are marked at recall, and `order`, the probability that 90% of the replacing pairs
reach (recall puts such pairs newest first, unmarked); `topic` is the cosine below which 5% of the
replacing pairs fall (chosen on the dev half of data/currentness_natural.jsonl: 10% gave 88.3
newer first, 5% 91.7); `beside` is the sum of the marking head's word weights (out of fold) under
which 1% of the replacing pairs fall: words that say a fact is added beside the older one ("also"),
which the write-time rules heed before they retire a memory.
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

from agentmem.currentness.pair import CARD, WEIGHTS, features, word_features  # noqa: E402

SOURCES = {  # file -> (older field, newer field, positive labels, "another fact" labels)
    "data/currentness_train_pairs.jsonl": ("older", "newer", {"replaces"}, {"other"}),
    "data/currentness_train_pairs_a.jsonl": ("older", "newer", {"replaces"}, {"other"}),
    "data/currentness_train_pairs_b.jsonl": ("older", "newer", {"replaces"}, {"other"}),
    "data/currentness_train_pairs_c.jsonl": ("older", "newer", {"replaces"}, {"other"}),
    "data/supersession_pairs.jsonl": ("old", "new", {"update"}, {"different"}),
    "data/supersession_pairs_test.jsonl": ("old", "new", {"update"}, {"different"}),
}
C = 1.0  # L2 strength, chosen on the dev half of data/currentness_natural.jsonl among 0.1, 0.3, 1, 3
FOLDS = 5
SEED = 7
MARK_FPR, ORDER_RECALL, TOPIC_QUANTILE = 0.03, 0.90, 0.05
BESIDE_LOSS = 0.01  # the replacing pairs whose words alone would keep the write-time rules from retiring the older
WORD_SCALE = 0.3  # the marking head's word inputs, against its vector inputs (dev half: 0, 0.1 ... 1)


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
    """Both heads, their thresholds and their out-of-fold figures; `arrays` is what the .npz holds."""
    from scipy.sparse import csr_matrix, hstack
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    dense = np.stack([features(vectors[a], vectors[b], a, b) for a, b, _, _ in data]).astype(np.float64)
    vocabulary = DictVectorizer()
    said = vocabulary.fit_transform([dict.fromkeys(word_features(a, b), 1.0) for a, b, _, _ in data])
    y = np.array([p for _, _, p, _ in data])
    other = np.array([o for *_, o in data])
    folds = list(StratifiedKFold(FOLDS, shuffle=True, random_state=SEED).split(dense, y))
    arrays: dict[str, np.ndarray] = {}
    said_oof = np.zeros(len(y))

    def head(name: str, x: object, scale: float) -> np.ndarray:
        """Fit one head on `x` (its word inputs weighed by `scale`); store it; its out-of-fold scores."""

        def fit(rows: np.ndarray) -> LogisticRegression:
            return LogisticRegression(C=C, max_iter=5000).fit(x[rows], y[rows])  # type: ignore[index]

        oof = np.zeros(len(y))
        for tr, te in folds:
            fold = fit(tr)
            oof[te] = fold.predict_proba(x[te])[:, 1]  # type: ignore[index]
            if scale:  # what the word inputs alone add up to, out of fold
                said_oof[te] = (said[te] * scale) @ fold.coef_[0][dense.shape[1] :]
        model = fit(np.arange(len(y)))
        coef = model.coef_[0]
        names = vocabulary.get_feature_names_out() if scale else []
        kept = [(w, float(c) * scale) for w, c in zip(names, coef[dense.shape[1] :], strict=True) if abs(c) >= 1e-6]
        arrays[f"{name}_weights"] = coef[: dense.shape[1]].astype(np.float32)
        arrays[f"{name}_bias"] = np.float32(model.intercept_[0])
        arrays[f"{name}_words"] = np.array([w for w, _ in kept], dtype=str)
        arrays[f"{name}_word_weights"] = np.array([c for _, c in kept], dtype=np.float32)
        return oof

    ordering = head("orders", dense, 0.0)
    marking = head("marks", hstack([csr_matrix(dense), said * WORD_SCALE]).tocsr(), WORD_SCALE)
    negatives = np.sort(marking[other])
    mark = float(negatives[min(len(negatives) - 1, int(np.floor((1 - MARK_FPR) * len(negatives))))]) + 1e-6
    order = float(np.quantile(ordering[y], 1 - ORDER_RECALL))
    ordered = (ordering >= order) | (marking >= mark)
    beside = round(float(np.quantile(said_oof[y], BESIDE_LOSS)), 4)
    return {
        "arrays": arrays,
        "thresholds": {
            "mark": round(mark, 4),
            "order": round(order, 4),
            "topic": round(float(np.quantile(dense[y, 0], TOPIC_QUANTILE)), 4),
            "beside": beside,
        },
        "out_of_fold": {
            "replacing_marked": round(float((marking[y] >= mark).mean()), 3),
            "replacing_ordered": round(float(ordered[y].mean()), 3),
            "another_fact_ordered": round(float(ordered[other].mean()), 3),
            "another_fact_marked": round(float((marking[other] >= mark).mean()), 3),
            "another_fact_beside": round(float((said_oof[other] < beside).mean()), 3),
        },
        "pairs": {"total": len(y), "replaces": int(y.sum()), "another_fact": int(other.sum())},
        "words": len(arrays["marks_words"]),
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
        "model": "two logistic regressions: orders over agentmem.currentness.pair.features, marks over "
        "features and word_features",
        "embedder": embedder.name if hasattr(embedder, "name") else "all-MiniLM-L6-v2 (ONNX)",
        "command": "python scripts/train_pair_model.py",
        "data": {name: hashlib.sha256((ROOT / name).read_bytes()).hexdigest()[:16] for name in SOURCES},
        "C": C,
        "word_scale": WORD_SCALE,
        "thresholds": trained["thresholds"],
        "out_of_fold": trained["out_of_fold"],
        "pairs": trained["pairs"],
        "words": trained["words"],
    }
    arrays: dict[str, np.ndarray] = trained["arrays"]  # type: ignore[assignment]
    if args.check:
        with np.load(WEIGHTS) as npz:
            same_names = sorted(npz.files) == sorted(arrays)
            same = same_names and all(
                npz[k].tolist() == v.tolist() if v.dtype.kind == "U" else np.allclose(npz[k], v, atol=1e-3)
                for k, v in arrays.items()
            )
        same = same and json.loads(CARD.read_text())["thresholds"] == card["thresholds"]
        print(f"shipped weights and thresholds {'equal' if same else 'differ'} from a fresh training")
        return 0 if same else 1
    np.savez_compressed(WEIGHTS, **arrays)
    CARD.write_text(json.dumps(card, indent=2) + "\n")
    print(json.dumps(card, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
