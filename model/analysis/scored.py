"""The output a teacher-forced analysis scores, as capture reads it: the source ids, the scored output tokens
(the given target then </s>, or the unchanged model's greedy output) and the decoder inputs that predict them.
Head importance and every attribution method score the same output this way.

The three shapes:
- encoder-decoder: the source (with </s>) is explained; decoder input t predicts scored[t] (first = 0);
- decoder-only: the prompt (its ids as the family's tokenizer gives them) is explained; the model reads the prompt and
  the continuation as one sequence (inputs), position first + t = P - 1 + t predicting scored[t];
- encoder-only with an output head (BERT's masked-LM head): the text is explained; scored[t] is the head's own top
  prediction at position t (first = 0), nothing is decoded (inputs empty).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from ..decoding import greedy_ids
from ..text.inputs import prepare_sequence, prepare_source, prepare_target
from ..text.tokenizer import Tokenizer


@dataclass
class Prepared:
    src: list[int]  # (S,) source ids with </s>; decoder-only: the prompt's ids; encoder-only: the text's ids
    src_tokens: list[str]
    inputs: list[int]  # (T_in,) decoder inputs <s> y_1 ..; decoder-only: prompt then y_1 ..; encoder-only: none
    scored: list[int]  # (T,) output ids, row t scored at position first + t of the pass
    first: int = 0  # the position whose output scores scored[0] (decoder-only: the prompt's last token, S - 1)


def prepare(model: nn.Module, tokenizer: Tokenizer, source: str, target: str | None) -> Prepared:
    """The source ids and the scored output; the decoder inputs of `capture`: <s> and the output without </s>, input t
    predicting scored[t] (an output cut by the step limit leaves the last input predicting nothing that is scored)."""
    cfg = model.config
    if not cfg.has_encoder:
        return _prepare_decoder_only(model, tokenizer, source, target)
    if not cfg.has_decoder:
        return _prepare_encoder_only(model, tokenizer, source)
    vocab = tokenizer.target
    src = prepare_source(model, tokenizer, source)
    if target is None:
        scored = greedy_ids(model, [src.ids], bos_id=vocab.bos_id, eos_id=vocab.eos_id)[0]
    else:
        ids, _ = prepare_target(model, vocab, target)
        scored = ids[1:] + [vocab.eos_id]
    inputs = [vocab.bos_id] + [i for i in scored if i != vocab.eos_id]
    return Prepared(src.ids, src.tokens, inputs, scored)


def _prepare_decoder_only(model: nn.Module, tokenizer: Tokenizer, prompt: str, target: str | None) -> Prepared:
    """The prompt, and its continuation: the given target (then </s>) or the model's own greedy one."""
    vocab = tokenizer.target
    seq = prepare_sequence(model, tokenizer, prompt)
    if not seq.ids:
        raise ValueError("the prompt is empty: there is nothing to explain the continuation by")
    if target is None:
        scored = greedy_ids(model, [seq.ids], bos_id=vocab.bos_id, eos_id=vocab.eos_id)[0]
    else:
        scored = prepare_sequence(model, tokenizer, prompt, target).ids[len(seq.ids) :]
        scored = scored[: model.config.max_len - len(seq.ids)] + [vocab.eos_id]
    inputs = seq.ids + [i for i in scored if i != vocab.eos_id]
    return Prepared(seq.ids, seq.tokens, inputs[: model.config.max_len], scored, first=len(seq.ids) - 1)


def _prepare_encoder_only(model: nn.Module, tokenizer: Tokenizer, text: str) -> Prepared:
    """The text, and the output head's top prediction at each of its positions (one pass: capture's)."""
    from .capture import capture

    if model.generator is None:
        raise ValueError("this model has no output head: there is no prediction to explain")
    src = prepare_source(model, tokenizer, text)
    cap = capture(model, tokenizer, text)
    return Prepared(src.ids, src.tokens, [], [int(i) for i in cap.log_probs.argmax(-1)])
