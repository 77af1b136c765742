"""How far each explanation agrees with occlusion, and with a demo's gold alignment.

For one input: per method (and per layer's raw cross-attention, heads averaged), the Spearman rank correlation
of its row with occlusion's row for each output token, averaged over the output tokens; and, where the demo's
gold alignment is known for the output, the share of output tokens whose highest-scored source token is a gold
one. Over fresh examples of a demo task: the same numbers averaged over the examples.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..interventions import NONE, Interventions
from .attribution import METHODS, Attribution, attention_over_source, attribute
from .attribution_graph import head_mean
from .capture import capture

REFERENCE = "occlusion"


def ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1 of a 1-D array, ties sharing their average rank."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    out = np.empty(len(values))
    start = 0
    for end in range(1, len(values) + 1):
        if end == len(values) or sorted_values[end] != sorted_values[start]:
            out[order[start:end]] = (start + end - 1) / 2
            start = end
    return out


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation of two 1-D arrays (Pearson's on the ranks); nan when either is constant."""
    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denominator = np.sqrt((ra**2).sum() * (rb**2).sum())
    return float((ra * rb).sum() / denominator) if denominator > 0 else float("nan")


def mean_spearman(scores: np.ndarray, reference: np.ndarray) -> float:
    """The mean over output rows of spearman(scores[t], reference[t]), rows where it is defined; nan if none."""
    values = [spearman(a, b) for a, b in zip(scores, reference)]
    values = [v for v in values if not np.isnan(v)]
    return float(np.mean(values)) if values else float("nan")


def gold_share(scores: np.ndarray, pairs: Sequence[tuple[int, int]] | None) -> float:
    """Share of output tokens with a gold link whose highest-scored source token is linked to them; nan if none.

    pairs: (source index, target index) of the gold alignment; target index t is output row t."""
    links: dict[int, set[int]] = {}
    for s, t in pairs or ():
        links.setdefault(int(t), set()).add(int(s))
    rows = [t for t in sorted(links) if t < len(scores)]
    if not rows:
        return float("nan")
    return sum(int(np.argmax(scores[t])) in links[t] for t in rows) / len(rows)


@dataclass
class Agreement:
    """One table: a row per method and per layer's raw cross-attention (names: METHODS, then "cross_<layer>")."""

    names: list[str]
    spearman: list[float]  # mean rank correlation with occlusion (1.0 for occlusion itself)
    gold: list[float]  # share of output tokens whose top source token is the gold one (nan: not known)
    examples: int = 1  # how many inputs the numbers average over


def agreement(
    results: dict[str, Attribution], cross: np.ndarray, pairs: Sequence[tuple[int, int]] | None = None
) -> Agreement:
    """The table for one input. results: method -> Attribution (occlusion among them); cross: (L, H, T_in, S)."""
    if REFERENCE not in results:
        raise ValueError("the agreement table needs the occlusion scores")
    reference = results[REFERENCE].scores
    rows = len(reference)
    matrices = {m: r.scores for m, r in results.items()}
    for layer, a in enumerate(head_mean(cross)):  # (T_in, S) per layer
        matrices[f"cross_{layer}"] = a[:rows]
    names = list(matrices)
    return Agreement(
        names,
        [mean_spearman(matrices[n], reference) for n in names],
        [gold_share(matrices[n], pairs) for n in names],
    )


def average(tables: Sequence[Agreement]) -> Agreement:
    """The tables' numbers averaged per row (nan entries left out)."""
    names = tables[0].names

    def mean(values: list[float]) -> float:
        kept = [v for v in values if not np.isnan(v)]
        return float(np.mean(kept)) if kept else float("nan")

    return Agreement(
        names,
        [mean([t.spearman[i] for t in tables]) for i in range(len(names))],
        [mean([t.gold[i] for t in tables]) for i in range(len(names))],
        examples=sum(t.examples for t in tables),
    )


def agreement_over(
    model,
    tokenizer,
    examples: Sequence,
    methods: Sequence[str] = METHODS,
    interventions: Interventions = NONE,
    progress: Callable[[int, int], None] | None = None,
    plans: dict | None = None,
    **settings,
) -> Agreement:
    """The table averaged over examples (tasks/tasks.py Examples: source, target, alignment), each read with the
    model's own greedy output; the gold share only where that output is the example's target. plans: {method:
    budget.Plan} for one example (model.analysis.attribution.plans), counted before the work starts."""
    if not examples:
        raise ValueError("no examples to average over")
    tables = []
    for i, ex in enumerate(examples):
        results = {m: attribute(model, tokenizer, ex.source, method=m, interventions=interventions,
                                plan=(plans or {}).get(m), **settings)
                   for m in methods}  # fmt: skip
        written = tokenizer.target.detokenize(results[REFERENCE].output_tokens)
        # a decoder-only model reads the prompt and its continuation (without </s>) as one sequence
        continuation = tokenizer.target.detokenize(
            results[REFERENCE].target_tokens[len(results[REFERENCE].source_tokens) :]
        )
        cap = capture(model, tokenizer, ex.source, None if model.config.has_encoder else continuation,
                      interventions=interventions)  # fmt: skip
        pairs = [tuple(p) for p in ex.alignment] if written == ex.target else None
        tables.append(agreement(results, attention_over_source(cap, len(results[REFERENCE].source_tokens))[1], pairs))
        if progress is not None:
            progress(i + 1, len(examples))
    return average(tables)
