"""Two checkpoints on the same input: whether their attention maps line up, and the maps and their difference.

    capture(A, source) , capture(B, source, target=A's decoder input) --mismatches--> [] or what differs
                                                                    --difference--> (A, B, A - B), each (Tq, Tk)

Two maps of one kind can be subtracted when both models have the same number of layers and heads for that
kind and read the same tokens: the same source tokens, and for the decoder's kinds the same decoder input
(feed B the decoder input A read, as `capture(..., target=...)` does, so their rows are the same positions).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .capture import Capture

KINDS = ("encoder_self", "decoder_self", "cross")


@dataclass(frozen=True)
class Mismatch:
    """One reason the two captures' maps of a kind cannot be subtracted: what differs, and its value in A and B."""

    what: str  # "layers", "heads", "source_tokens" or "target_tokens"
    a: object
    b: object


def decoder_input_text(capture: Capture, detokenize) -> str:
    """The text of a capture's decoder input without <s>, to feed another model the same rows (target=...)."""
    return detokenize(capture.target_tokens[1:])


def mismatches(a: Capture, b: Capture, kind: str) -> list[Mismatch]:
    """What keeps the two captures' `kind` maps from lining up cell by cell ([] when they do)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    wa, wb = getattr(a, kind), getattr(b, kind)  # (L, H, Tq, Tk) each
    out = []
    if wa.shape[0] != wb.shape[0]:
        out.append(Mismatch("layers", wa.shape[0], wb.shape[0]))
    if wa.shape[1] != wb.shape[1]:
        out.append(Mismatch("heads", wa.shape[1], wb.shape[1]))
    if list(a.source_tokens) != list(b.source_tokens):
        out.append(Mismatch("source_tokens", list(a.source_tokens), list(b.source_tokens)))
    if kind != "encoder_self" and list(a.target_tokens) != list(b.target_tokens):
        out.append(Mismatch("target_tokens", list(a.target_tokens), list(b.target_tokens)))
    return out


def attention_map(capture: Capture, kind: str, layer: int, head: int | None) -> np.ndarray:
    """(Tq, Tk) one head's map of a layer, or the mean over heads when head is None."""
    weights = getattr(capture, kind)  # (L, H, Tq, Tk)
    if not 0 <= layer < weights.shape[0] or (head is not None and not 0 <= head < weights.shape[1]):
        raise ValueError(f"layer {layer}, head {head} is outside this {kind} map of shape {weights.shape}")
    return weights[layer].mean(axis=0) if head is None else weights[layer, head]


def difference(
    a: Capture, b: Capture, kind: str, layer: int, head: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A, B, A - B), each (Tq, Tk): the two models' maps of one kind, layer and head (None: head average).

    ValueError naming what differs when the maps do not line up (see `mismatches`).
    """
    problems = mismatches(a, b, kind)
    if problems:
        raise ValueError("the two maps do not line up: " + ", ".join(p.what for p in problems) + " differ")
    ma, mb = attention_map(a, kind, layer, head), attention_map(b, kind, layer, head)
    return ma, mb, ma - mb
