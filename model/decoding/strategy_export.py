"""Beam searches, sampling distributions, two-model comparisons and training snapshots as downloadable files.

JSON keeps everything (attention rows included, rounded); CSV is one row per hypothesis, candidate or
snapshot, for a spreadsheet. Companion of model/analysis/export.py (captures and greedy traces).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from .beam import BeamTrace, Hypothesis
from .trace import Trace


def _rounded(a: np.ndarray, decimals: int) -> list:
    return np.round(np.asarray(a, dtype=np.float64), decimals).tolist()


def _csv(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def _hypothesis(h: Hypothesis, decimals: int) -> dict[str, Any]:
    return {
        "tokens": h.tokens,
        "ids": list(h.output_ids),
        "rank": h.rank,
        "parent": h.parent,
        "log_prob": round(h.log_prob, decimals),
        "score": round(h.score, decimals),
        "cross": _rounded(h.cross, decimals),  # (L, H, S)
    }


def beam_json(trace: BeamTrace, decimals: int = 5) -> str:
    """A beam search as JSON: its settings, the best hypothesis, and every step's live, finished and pruned
    hypotheses (tokens, log-probability, penalised score, parent in the step before, cross-attention row)."""
    best = trace.best
    data = {
        "source_tokens": trace.source_tokens,
        "beam_size": trace.beam_size,
        "length_penalty": trace.length_penalty,
        "score": "score = log_prob / ((5 + length) / 6) ** length_penalty",
        "text": trace.text,
        "stop_reason": trace.stop_reason,
        "best": None if best is None else {**_hypothesis(best, decimals), "cross": None},
        "best_cross": _rounded(trace.cross_alignment(), decimals),  # (L, H, T, S)
        "steps": [
            {
                "index": step.index,
                **{
                    status: [_hypothesis(h, decimals) for h in getattr(step, status)]
                    for status in ("live", "finished", "pruned")
                },
            }
            for step in trace.steps
        ],
    }
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def beam_csv(trace: BeamTrace, decimals: int = 6) -> str:
    """One row per hypothesis of every step: step, rank, status, parent row, token, hypothesis (its tokens joined by
    spaces), log_prob, score, on the best path (0/1)."""
    tree = trace.tree()
    rows = [
        [
            int(tree["step"][i]) + 1,
            int(tree["rank"][i]),
            tree["status"][i],
            int(tree["parent"][i]),
            tree["token"][i],
            " ".join(tree["tokens"][i]),
            round(float(tree["log_prob"][i]), decimals),
            round(float(tree["score"][i]), decimals),
            int(bool(tree["best"][i])),
        ]
        for i in range(len(tree["step"]))
    ]
    header = ["step", "rank", "status", "parent_row", "token", "hypothesis", "log_prob", "score", "on_best_path"]
    return _csv(header, rows)


def sampling_json(trace: Trace, settings: dict[str, Any], decimals: int = 5) -> str:
    """A sampled decoding as JSON: the settings (temperature, top_k, top_p, seed) and for every step the drawn
    token with its probability and the most probable candidates of the distribution it was drawn from."""
    steps = [
        {
            "index": s.index,
            "drawn": s.token,
            "drawn_id": s.token_id,
            "drawn_prob": round(s.prob, decimals),
            "candidates": s.top_tokens,
            "candidate_ids": s.top_ids.tolist(),
            "candidate_probs": _rounded(s.top_probs, decimals),
            "cross": _rounded(s.cross, decimals),
        }
        for s in trace.steps
    ]
    data = {"settings": settings, "source_tokens": trace.source_tokens, "text": trace.text, "steps": steps}
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def sampling_csv(trace: Trace, decimals: int = 6) -> str:
    """One row per step and candidate: step, rank, token, probability after temperature/top-k/top-p, drawn (0/1);
    a drawn token outside the candidates shown gets its own row with rank 0."""
    rows = []
    for s in trace.steps:
        for rank, (token, p, i) in enumerate(zip(s.top_tokens, s.top_probs, s.top_ids), start=1):
            rows.append([s.index + 1, rank, token, round(float(p), decimals), int(int(i) == s.token_id)])
        if s.token_id not in s.top_ids:
            rows.append([s.index + 1, 0, s.token, round(s.prob, decimals), 1])
    return _csv(["step", "rank", "token", "prob", "drawn"], rows)


def comparison_npz(arrays: dict[str, np.ndarray], **tokens: Sequence[str]) -> bytes:
    """Named arrays (a, b, and a_minus_b when they line up) and token lists, in one compressed .npz."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays, **{k: np.array(list(v), dtype=str) for k, v in tokens.items()})
    return buf.getvalue()


def comparison_json(arrays: dict[str, np.ndarray], settings: dict[str, Any], decimals: int = 5, **tokens) -> str:
    """The same as JSON: settings (models, kind, layer, head), token lists, shapes and rounded values."""
    data = {
        "settings": settings,
        **{k: list(v) for k, v in tokens.items()},
        "shapes": {k: list(v.shape) for k, v in arrays.items()},
        **{k: _rounded(v, decimals) for k, v in arrays.items()},
    }
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def snapshots_csv(
    steps: Sequence[int],
    exact_match: Sequence[float | None],
    alignment: Sequence[float | None],
    input_alignment: Sequence[float | None] | None = None,
) -> str:
    """One row per training snapshot: step, held-out exact match, held-out alignment, and this input's alignment."""
    extra = input_alignment if input_alignment is not None else [None] * len(steps)
    rows = [[s, "" if e is None else e, "" if a is None else a, "" if i is None else round(i, 4)]
            for s, e, a, i in zip(steps, exact_match, alignment, extra)]  # fmt: skip
    return _csv(["step", "held_out_exact_match", "held_out_alignment", "input_alignment"], rows)
