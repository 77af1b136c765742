"""The output a teacher-forced analysis scores, as capture reads it: the source ids, the scored output tokens
(the given target then </s>, or the unchanged model's greedy output) and the decoder inputs that predict them.
Head importance and every attribution method score the same output this way."""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from ..decoding import greedy_ids
from ..text.inputs import prepare_source, prepare_target
from ..text.tokenizer import Tokenizer


@dataclass
class Prepared:
    src: list[int]  # (S,) source ids with </s>
    src_tokens: list[str]
    inputs: list[int]  # (T_in,) decoder inputs <s> y_1 ..
    scored: list[int]  # (T,) output ids, row t written at decoder position t


def prepare(model: nn.Module, tokenizer: Tokenizer, source: str, target: str | None) -> Prepared:
    """The source ids and the scored output; the decoder inputs of `capture`: <s> and the output without </s>, input t
    predicting scored[t] (an output cut by the step limit leaves the last input predicting nothing that is scored)."""
    vocab = tokenizer.target
    src = prepare_source(model, tokenizer, source)
    if target is None:
        scored = greedy_ids(model, [src.ids], bos_id=vocab.bos_id, eos_id=vocab.eos_id)[0]
    else:
        ids, _ = prepare_target(model, vocab, target)
        scored = ids[1:] + [vocab.eos_id]
    inputs = [vocab.bos_id] + [i for i in scored if i != vocab.eos_id]
    return Prepared(src.ids, src.tokens, inputs, scored)
