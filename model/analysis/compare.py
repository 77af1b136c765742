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


def decoder_input_text(capture: Capture, detokenize, prompt: int = 0) -> str:
    """The text of a capture's decoder input without <s>, to feed another model the same rows (target=...). A
    decoder-only capture's one sequence: its continuation after the prompt's first `prompt` tokens (the other model
    reads the prompt itself, then this as its continuation)."""
    if not len(capture.source_tokens):
        return detokenize(capture.target_tokens[prompt:])
    return detokenize(capture.target_tokens[1:])


def read_tokens(capture: Capture) -> list[str]:
    """The tokens of the input a capture's model read: its encoder's source, or a one-sequence model's whole
    sequence (a decoder-only model reads its prompt and continuation as one)."""
    return list(capture.source_tokens) if len(capture.source_tokens) else list(capture.target_tokens)


def decoder_inputs(capture: Capture) -> list[str]:
    """A capture's decoder inputs after the start token an encoder-decoder's decoder begins with (<s>); a
    decoder-only model's whole sequence (it begins with the prompt's first token)."""
    return list(capture.target_tokens[1:]) if len(capture.source_tokens) else list(capture.target_tokens)


def mismatches(a: Capture, b: Capture, kind: str) -> list[Mismatch]:
    """What keeps the two captures' `kind` maps from lining up cell by cell ([] when they do). The inputs read
    (read_tokens) are compared unless both models read one sequence (then their decoder inputs say it all); the
    decoder inputs (decoder_inputs, without a start token) for the decoder's kinds."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    wa, wb = getattr(a, kind), getattr(b, kind)  # (L, H, Tq, Tk) each
    out = []
    if wa.shape[0] != wb.shape[0]:
        out.append(Mismatch("layers", wa.shape[0], wb.shape[0]))
    if wa.shape[1] != wb.shape[1]:
        out.append(Mismatch("heads", wa.shape[1], wb.shape[1]))
    one_sequence = not len(a.source_tokens) and not len(b.source_tokens)
    if not one_sequence and read_tokens(a) != read_tokens(b):
        out.append(Mismatch("source_tokens", read_tokens(a), read_tokens(b)))
    if kind != "encoder_self" and list(a.target_tokens) != list(b.target_tokens):
        out.append(Mismatch("target_tokens", decoder_inputs(a), decoder_inputs(b)))
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
