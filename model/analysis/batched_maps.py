"""Attention maps of many inputs of a one-stack model, read in batched passes: what the head atlas scores.

Inputs of the same length are run together, BATCH_TOKENS tokens a pass, on the fused attention path of a lazy record
(record(model, lazy=True, qkv=True)); nothing is computed past the last attention: the pass stops once the last
attention module has handed over its queries and keys (no W^O and feed-forward block of the last layer, no output
layer).
Each input's maps are then computed from its own queries and keys by the lazy capture's score function
(LazyCapture.layer_maps: the numbers capture() gives for that input alone), one input at a time, and handed to a
function whose small answer is kept. An encoder-decoder model's inputs (its decoder reads its own greedy output) and
inputs with padding ids (whose mask is their own) are read one at a time by capture().
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
import torch
from torch import nn

from ..network.recording import record
from ..text.inputs import device_of, prepare_sequence, prepare_source, require_eval
from ..text.tokenizer import Tokenizer
from .capture import capture
from .lazy_capture import LazyCapture

Item = str | Sequence[int]  # a text, or the ids of one input


def end_ids(model: nn.Module, tokenizer: Tokenizer) -> list[int]:
    """What the model's reading puts after a text's ids: </s> (and mBART's language code) on an encoder's side,
    nothing on a decoder-only model's."""
    if model.config.shape == "decoder-only":
        return []
    vocab = tokenizer.source
    return [vocab.eos_id, *getattr(vocab, "after_eos", ())]


class GivenIds:
    """A vocabulary whose encode() gives the ids of an input made of ids (random tokens repeated): capture() reads
    them as its text. Everything else is the vocabulary's."""

    def __init__(self, vocab, ids) -> None:
        self._vocab, self._ids = vocab, list(ids)

    def encode(self, text: str) -> list[int]:
        return list(self._ids)

    def __getattr__(self, name: str):
        return getattr(self._vocab, name)


def item_tokenizer(model: nn.Module, tokenizer: Tokenizer, item: Item) -> tuple[Tokenizer, str]:
    """(tokenizer, text) that make capture() read `item`: a text as it is; ids through a vocabulary that gives them
    (on an encoder's side without the end that the reading appends again: end_ids)."""
    if isinstance(item, str):
        return tokenizer, item
    ids, end = [int(i) for i in item], end_ids(model, tokenizer)
    if end and ids[-len(end) :] == end:
        ids = ids[: -len(end)]
    return Tokenizer(GivenIds(tokenizer.source, ids), tokenizer.target), ""


def head_maps(model: nn.Module, tokenizer: Tokenizer, item: Item, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(ids of the side that `kind`'s queries read (T,), its maps (L, H, T, Tk)) of one input. cross: the decoder's
    ids, its keys the source's."""
    tok, text = item_tokenizer(model, tokenizer, item)
    cap = capture(model, tok, text)
    ids = cap.source_ids if kind == "encoder_self" else cap.target_ids
    return np.asarray(ids), getattr(cap, kind)


BATCH_TOKENS = 1024  # tokens of one batched pass (batch items x their length)
Answer = TypeVar("Answer")


class LastAttention(Exception):
    """Raised inside a pass once its last attention module has handed over its queries and keys (stop_at)."""


def stop_at(n_attention: int) -> Callable[[int], None]:
    """A lazy record's progress that stops the pass when its n_attention-th attention module is kept: the rest of
    that layer (W^O, the feed-forward block) and the output side are not computed."""

    def progress(done: int) -> None:
        if done >= n_attention:
            raise LastAttention

    return progress


def item_ids(model: nn.Module, tokenizer: Tokenizer, item) -> list[int]:
    """The ids capture() reads for one input (a text, or ids given): the sequence of a decoder-only model, the
    source (with its </s>) of an encoder-only one."""
    tok, text = item_tokenizer(model, tokenizer, item)
    if model.config.shape == "decoder-only":
        return list(prepare_sequence(model, tok, text).ids)
    return list(prepare_source(model, tok, text).ids)


def batches(lengths: Sequence[int], alone: Sequence[bool], tokens: int = BATCH_TOKENS) -> list[list[int]]:
    """Indices of the inputs in passes: equal lengths together, at most `tokens` tokens a pass (at least one input),
    an input marked alone by itself; passes in the order of their first input."""
    groups: dict[object, list[int]] = {}
    for i, (n, lone) in enumerate(zip(lengths, alone)):
        groups.setdefault(("alone", i) if lone else n, []).append(i)
    out = []
    for members in groups.values():
        size = max(1, tokens // max(1, lengths[members[0]]))
        out += [members[s : s + size] for s in range(0, len(members), size)]
    return sorted(out, key=lambda b: b[0])


@torch.no_grad()
def map_each(
    model: nn.Module,
    tokenizer: Tokenizer,
    items: Sequence,
    kind: str,
    answer: Callable[[np.ndarray, np.ndarray], Answer],
    tokens: int = BATCH_TOKENS,
    progress: Callable[[int, int], None] | None = None,
) -> list[Answer]:
    """[answer(ids (T,), maps (L, H, T, T) float32) for each input], in the inputs' order: `kind`'s maps of every
    input as capture() gives them, computed in batched passes (see the module's docstring); progress(done, total)
    after each pass."""
    require_eval(model)
    cfg = model.config
    if cfg.shape == "encoder-decoder":
        out = []
        for item in items:
            out.append(answer(*head_maps(model, tokenizer, item, kind)))
            if progress is not None:
                progress(len(out), len(items))
        return out
    ids = [item_ids(model, tokenizer, item) for item in items]
    n_layers = cfg.n_decoder_layers if cfg.shape == "decoder-only" else cfg.n_encoder_layers
    pad = cfg.pad_id
    alone = [cfg.shape == "encoder-only" and pad in seq for seq in ids]
    out: list = [None] * len(items)
    done = 0
    for members in batches([len(s) for s in ids], alone, tokens):
        batch = torch.tensor([ids[i] for i in members], dtype=torch.long, device=device_of(model))
        try:
            with record(model, lazy=True, qkv=True, progress=stop_at(n_layers)) as rec:
                if cfg.shape == "decoder-only":
                    model.decode(batch, hidden=True)
                else:
                    model.encode(batch)
        except LastAttention:  # the pass stopped once the last attention was kept: nothing after it is needed
            pass
        layers = sorted(layer for k, layer in rec.lazy_records if k == kind)
        for b, i in enumerate(members):
            records = {
                (kind, layer): dataclasses.replace(
                    rec.lazy_records[(kind, layer)][-1],
                    q=rec.vectors[(kind, layer, "q")][-1][b],
                    k=rec.vectors[(kind, layer, "k")][-1][b],
                )
                for layer in layers
            }
            lazy = LazyCapture(records, cfg.n_heads, {}, None, None, [])
            maps = np.stack([lazy.layer_maps(kind, layer) for layer in layers])
            out[i] = answer(np.asarray(ids[i]), maps)
        done += len(members)
        if progress is not None:
            progress(done, len(items))
    return out
