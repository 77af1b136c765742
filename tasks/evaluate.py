"""Batched evaluation of a trained model: greedy outputs, exact match, and how well attention aligns.

Used by the training command's report (python -m model.train) and by the tests of the shipped demo
checkpoints. Everything here gives the same answers as the one-at-a-time tools the app uses
(`greedy_decode`, `capture`), only for many sources at once:

    sources --prepare_source--> padded (B, S) ids --decoding.greedy_ids (the one decoding core,
            one cached step for the whole batch)--> outputs (stop when all said </s> or reached the limit)
    outputs --one teacher-forced pass with recording--> cross-attention (L, B, H, T, S)

The attention measure ("does the model look where the gold alignment says?"): take the greedy output;
output token j (0-based) is produced by decoder position j, whose input is <s> for j = 0 and y_j
otherwise, i.e. row j of `capture(model, tokenizer, source).cross`. Average that row over heads; its
argmax over source positions (</s> included) must be one of the source positions the gold alignment
links to target token j (for reverse that is the mirrored position n-1-j). Output tokens beyond the
gold target's length, the final </s>, and target tokens without any gold link are not counted.
The accuracy is reported for each decoder layer separately.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from model.decoding import greedy_ids, pad_batch
from model.network.recording import record
from model.text.inputs import device_of, prepare_sequence, prepare_source, require_eval
from model.text.tokenizer import Tokenizer

from .tasks import Example


def source_ids(model: nn.Module, tokenizer: Tokenizer, sources: Sequence[str]) -> list[list[int]]:
    """Each source as the app feeds it: tokens + </s>, cut to the model's max_len (a decoder-only model: the
    prompt's tokens as the family's tokenizer gives them, continued by decoding)."""
    prepare = prepare_source if model.config.has_encoder else prepare_sequence
    return [prepare(model, tokenizer, s).ids for s in sources]


def greedy_batch(
    model: nn.Module,
    src: Sequence[Sequence[int]],
    max_steps: int | None = None,
    batch_size: int = 256,
    bos_id: int | None = None,
    eos_id: int | None = None,
) -> list[list[int]]:
    """Cached greedy decoding of many sources at once (the one core, `decoding.greedy_ids`): for each,
    the output ids, ending with </s> when it was produced. Same result as `greedy_decode(...).output_ids`
    when bos_id and eos_id are the target vocabulary's, as there (`ends`); the step limit
    (`decoding.step_limit`) applies per source."""
    return greedy_ids(model, src, max_steps, batch_size, bos_id, eos_id)


def ends(tokenizer: Tokenizer) -> dict[str, int]:
    """The start and end tokens the app decodes with (`greedy_decode`, `capture`): the target vocabulary's, which
    an imported model's config may spell otherwise (its pad id as the start token, Marian)."""
    return {"bos_id": tokenizer.target.bos_id, "eos_id": tokenizer.target.eos_id}


def strip_eos(ids: Sequence[int], eos_id: int) -> list[int]:
    ids = list(ids)
    return ids[: ids.index(eos_id)] if eos_id in ids else ids


@dataclass
class Evaluation:
    """Greedy outputs of some examples and what they score."""

    outputs: list[list[int]]  # greedy output ids per example (with the final </s> if produced)
    exact_match: float  # fraction of examples whose output tokens equal the target's
    alignment: list[float] | None  # per decoder layer, the attention measure; None when not computed
    counted: int = 0  # output tokens the alignment measure counted


def predict(model: nn.Module, tokenizer: Tokenizer, sources: Sequence[str], batch_size: int = 256) -> list[list[int]]:
    """Greedy output ids for each source text."""
    return greedy_batch(model, source_ids(model, tokenizer, sources), batch_size=batch_size, **ends(tokenizer))


def exact_match(
    model: nn.Module,
    tokenizer: Tokenizer,
    examples: Sequence[Example],
    outputs: Sequence[Sequence[int]] | None = None,
    batch_size: int = 256,
) -> float:
    """Fraction of examples whose greedy output (up to </s>) is exactly the target, token for token.

    An output that never produced </s> counts as wrong.
    """
    if not examples:
        raise ValueError("exact_match needs at least one example")
    if outputs is None:
        outputs = predict(model, tokenizer, [e.source for e in examples], batch_size)
    vocab = tokenizer.target
    eos = vocab.eos_id
    hits = 0
    for ex, out in zip(examples, outputs, strict=True):
        gold = vocab.encode(ex.target) + [eos]
        hits += list(out) == gold
    return hits / len(examples)


@torch.no_grad()
def cross_attention_argmax(
    model: nn.Module,
    src: Sequence[Sequence[int]],
    outputs: Sequence[Sequence[int]],
    batch_size: int = 256,
    bos_id: int | None = None,
    eos_id: int | None = None,
) -> list[torch.Tensor]:
    """For each example, (L, T) long: per decoder layer, the argmax over source positions of the
    head-averaged cross-attention of decoder positions 0..T-1, where the decoder input is
    <s> + output without </s> (exactly `capture`'s `cross.mean(1).argmax(-1)` for that source when bos_id and
    eos_id are the target vocabulary's, `ends`; by default the model config's).
    """
    require_eval(model)
    cfg = model.config
    bos_id = cfg.bos_id if bos_id is None else bos_id
    eos_id = cfg.eos_id if eos_id is None else eos_id
    device = device_of(model)
    n_layers = len(model.decoder.layers)
    result: list[torch.Tensor] = []
    for start in range(0, len(src), batch_size):
        s_chunk = src[start : start + batch_size]
        t_chunk = [[bos_id] + strip_eos(o, eos_id) for o in outputs[start : start + batch_size]]
        with record(model) as rec:
            memory, mask = model.encode(pad_batch(s_chunk, cfg.pad_id, device))
            model.decode(pad_batch(t_chunk, cfg.pad_id, device), memory, mask)
        # (L, B, H, T, S) -> head average -> argmax over source positions: (L, B, T)
        cross = torch.stack([rec.attention[("cross", i)][-1] for i in range(n_layers)])
        best = cross.float().mean(2).argmax(-1)
        for b, tgt in enumerate(t_chunk):
            result.append(best[:, b, : len(tgt)].cpu())
    return result


def alignment_accuracy(
    model: nn.Module,
    tokenizer: Tokenizer,
    examples: Sequence[Example],
    outputs: Sequence[Sequence[int]] | None = None,
    batch_size: int = 256,
) -> list[float]:
    """Per decoder layer: the fraction of counted output tokens whose head-averaged cross-attention
    row peaks on a source position gold-aligned to that target token (see the module docstring)."""
    accuracy, _ = _alignment(model, tokenizer, examples, outputs, batch_size)
    return accuracy


def _alignment(model, tokenizer, examples, outputs, batch_size) -> tuple[list[float], int]:
    src = source_ids(model, tokenizer, [e.source for e in examples])
    if outputs is None:
        outputs = greedy_batch(model, src, batch_size=batch_size, **ends(tokenizer))
    n_layers = len(model.decoder.layers)
    hits = torch.zeros(n_layers, dtype=torch.long)
    counted = 0
    argmaxes = cross_attention_argmax(model, src, outputs, batch_size, **ends(tokenizer))
    for ex, out, best in zip(examples, outputs, argmaxes, strict=True):
        gold_len = len(tokenizer.target.split(ex.target))
        links: dict[int, set[int]] = {}
        for s, t in ex.alignment:
            links.setdefault(t, set()).add(s)
        n_out = len(strip_eos(out, tokenizer.target.eos_id))
        for j in range(min(n_out, gold_len)):
            if j not in links:
                continue
            counted += 1
            for layer in range(n_layers):
                hits[layer] += int(best[layer, j]) in links[j]
    if counted == 0:
        return [0.0] * n_layers, 0
    return [h / counted for h in hits.tolist()], counted


def evaluate(
    model: nn.Module, tokenizer: Tokenizer, examples: Sequence[Example], alignment: bool = True, batch_size: int = 256
) -> Evaluation:
    """Decode the examples once and score both exact match and (optionally) the attention measure."""
    outputs = predict(model, tokenizer, [e.source for e in examples], batch_size)
    em = exact_match(model, tokenizer, examples, outputs)
    if not alignment:
        return Evaluation(outputs, em, None)
    acc, counted = _alignment(model, tokenizer, examples, outputs, batch_size)
    return Evaluation(outputs, em, acc, counted)
