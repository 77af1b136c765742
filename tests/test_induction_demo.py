"""The induction demo (checkpoints/induction, tasks/induction.py) against the targets, on sequences this test draws
itself (random letters of the model's vocabulary, 15-25 long, repeated twice) and an induction detector written here
(loops over rows and keys, TransformerLens's definition); its card's numbers agree; its snapshots show the change."""

from __future__ import annotations

import random

import numpy as np
import pytest

from model import capture, load_checkpoint
from model.checkpoints.checkpoint import load_card
from model.checkpoints.demos import CHECKPOINTS
from model.checkpoints.snapshots import list_snapshots
from tests.apptest_helpers import charts, open_page
from ui.views.training_snapshots import SCORE_TITLES

FOLDER = CHECKPOINTS / "induction"
pytestmark = pytest.mark.skipif(not FOLDER.is_dir(), reason="the induction demo is not shipped")
N = 60
SIZE_LIMIT = 950_000  # bytes: the checkpoint and its 8 snapshots


@pytest.fixture(scope="module")
def demo():
    model, tok = load_checkpoint(FOLDER)
    rng = random.Random(20240)
    letters = [t for t in tok.source.tokens if len(t) == 1 and t.isalpha()]
    texts = []
    for _ in range(N):
        half = "".join(rng.choice(letters) for _ in range(rng.randint(15, 25)))
        texts.append(half + half)
    return model, tok, texts


def induction_pattern(ids) -> np.ndarray:
    """1 at (i, j) when j <= i, j >= 1 and the token before key j equals the token at i (an earlier position)."""
    n = len(ids)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(1, i + 1):
            if j - 1 != i and ids[j - 1] == ids[i]:
                out[i, j] = 1
    return out


def measure(model, tok, texts, ablate=None):
    """(mean induction score per head (L, H), perfect score, first-half accuracy, repeated-half accuracy, mean
    previous-token score per head (L, H))."""
    scores, previous, perfect, right, total = [], [], [], np.zeros(2), np.zeros(2)
    for text in texts:
        cap = capture(model, tok, text, ablate=ablate)
        ids, maps = list(cap.target_ids), cap.decoder_self
        pattern = induction_pattern(ids)
        scores.append([[float((m * pattern).sum() / m.sum()) for m in layer] for layer in maps])
        before = np.eye(len(ids), k=-1)  # row i on key i - 1
        previous.append([[float((m * before).sum() / m.sum()) for m in layer] for layer in maps])
        perfect.append(float((pattern.sum(1) > 0).mean()))
        predicted, half = cap.log_probs.argmax(-1), len(ids) // 2
        for part, rows in enumerate((range(0, half - 1), range(half, len(ids) - 1))):
            right[part] += sum(int(predicted[p] == ids[p + 1]) for p in rows)
            total[part] += len(rows)
    return np.mean(scores, axis=0), float(np.mean(perfect)), *(right / total), np.mean(previous, axis=0)


def test_the_demo_meets_its_targets_on_fresh_sequences(demo):
    model, tok, texts = demo
    cfg = model.config
    assert cfg.shape == "decoder-only" and cfg.n_decoder_layers == 2 and not cfg.feed_forward
    assert all(layer.ff is None for layer in model.decoder.layers)
    scores, perfect, first, repeated, previous = measure(model, tok, texts)
    best = np.unravel_index(int(np.argmax(scores)), scores.shape)
    assert scores[best] >= 0.5 * perfect
    assert repeated >= 0.9 and first <= 3 / 52
    _, _, _, without_best, _ = measure(model, tok, texts, ablate=[("decoder_self", int(best[0]), int(best[1]))])
    assert repeated - without_best >= 0.4
    other = 1 - int(best[0])
    reader = int(np.argmax(previous[other]))  # the previous-token head the induction head reads: part of the circuit
    assert other == 0 and previous[other, reader] >= 0.4
    low = min((h for h in range(cfg.n_heads) if h != reader), key=lambda h: scores[other, h])
    _, _, _, without_low, _ = measure(model, tok, texts, ablate=[("decoder_self", other, low)])
    assert repeated - without_low <= 0.1  # a head outside the circuit: induction does not lean on it
    card = load_card(FOLDER)["induction"]
    assert card["best_induction_head"] == [int(best[0]), int(best[1])]
    assert card["accuracy_repeated_half"] == pytest.approx(repeated, abs=0.03)
    assert card["best_induction_share"] == pytest.approx(scores[best] / perfect, abs=0.05)


def test_the_snapshots_show_the_change_and_the_training_page_draws_them(demo):
    snaps = list_snapshots(FOLDER)
    shares = [dict(s.scores)["induction_share"] for s in snaps.items]
    assert shares[0] < 0.2 and shares[-1] >= 0.5
    assert sum(f.stat().st_size for f in FOLDER.rglob("*") if f.is_file()) <= SIZE_LIMIT
    at = open_page("training", "demo:induction", text=demo[2][0])
    assert not at.exception and not at.error
    traces = {t.get("name"): t for c in charts(at) for t in c["data"]}
    drawn = traces[SCORE_TITLES["induction_share"]]["y"]  # the curve of the run's own score, one point a snapshot
    np.testing.assert_allclose(np.asarray(drawn, dtype=float), shares, atol=1e-9)
