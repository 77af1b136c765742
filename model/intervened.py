"""Decoding and exact match under interventions, as the pages call them: the one switch to the library's calls.

    decode(model, tokenizer, source, changes, top_k, prefix) -> Trace    greedy decoding with heads/positions changed
    fresh_examples(card, n)                                              n examples the demo never trained on
    exact_match_with(model, tokenizer, examples, changes) -> MatchResult exact match and a typical failure

At the merge of issue 14 (library half: `greedy_decode(..., ablate=..., positional=...)` and
`positional_experiment(...)`), `decode` calls greedy_decode directly (it already does when greedy_decode takes
`ablate`) and the fallbacks below go. Until then they use only the existing core: `record(model,
interventions=...)` around the one decoding loop (`generate`), and one teacher-forced pass under the same
interventions for each step's attention rows and candidates (the same numbers the cached steps compute).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from .decoding import Step, Trace, generate, greedy_decode, greedy_ids, step_limit
from .evaluate import exact_match, source_ids, strip_eos
from .inputs import as_batch, prepare_source, require_eval
from .interventions import Interventions
from .recording import record
from .tasks import Example, dataset, get_task, held_out
from .tokenizer import Tokenizer

LIBRARY_DECODE = "ablate" in inspect.signature(greedy_decode).parameters  # issue 14's library half is merged
FRESH_SEED_OFFSET = 4  # held_out seeds: +1 the card's report, +2 the training progress bar, +3 the tests


def decode(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    changes: Interventions = Interventions(),
    top_k: int = 5,
    prefix: Sequence[int] = (),
) -> Trace:
    """greedy_decode(model, tokenizer, source, top_k=top_k, prefix=prefix) with `changes` applied to every step.

    ValueError when a change does not fit the model (a head it lacks, a shift past max_len)."""
    if not changes:
        return greedy_decode(model, tokenizer, source, top_k=top_k, prefix=prefix)
    if LIBRARY_DECODE:  # pragma: no cover - the library half of issue 14
        return greedy_decode(
            model, tokenizer, source, top_k=top_k, prefix=prefix, ablate=sorted(changes.ablate),
            positional=changes.positional, shift=changes.shift, seed=changes.seed,
        )  # fmt: skip
    return _decode_fallback(model, tokenizer, source, changes, top_k, prefix)


@torch.no_grad()
def _decode_fallback(model, tokenizer, source, changes: Interventions, top_k: int, prefix: Sequence[int]) -> Trace:
    require_eval(model)
    vocab = tokenizer.target
    forced = [int(i) for i in prefix]
    if any(not 0 <= i < model.config.tgt_vocab_size for i in forced):
        raise ValueError(f"prefix ids are outside the target vocabulary (0..{model.config.tgt_vocab_size - 1})")
    src = prepare_source(model, tokenizer, source)
    limit = step_limit(model, len(src.ids))
    changes.check(model, (len(src.ids), limit))

    def choose(t: int, logits: torch.Tensor) -> torch.Tensor:
        if t < len(forced):
            return torch.full((logits.size(0),), forced[t], dtype=torch.long, device=logits.device)
        return logits.argmax(-1)

    with record(model, interventions=changes):
        out = generate(model, [src.ids], [limit], choose, bos_id=vocab.bos_id, eos_id=vocab.eos_id)[0]
    trace = Trace(src.tokens, src.ids, truncated=src.truncated, start_token=vocab.token(vocab.bos_id))
    if not out:
        return trace
    inputs = [vocab.bos_id] + out[:-1]  # step t's decoder input is inputs[: t + 1]
    with record(model, interventions=changes) as rec:
        memory, mask = model.encode(as_batch(model, src.ids))
        probs = model.decode(as_batch(model, inputs), memory, mask)[0].float().softmax(-1)  # (T, V)
    layers = range(len(model.decoder.layers))
    self_maps = torch.stack([rec.attention[("decoder_self", i)][-1][0] for i in layers]).float().numpy()  # (L,H,T,T)
    cross = torch.stack([rec.attention[("cross", i)][-1][0] for i in layers]).float().numpy()  # (L, H, T, S)
    k = max(1, min(top_k, probs.size(-1)))
    top_p, top_i = probs.topk(k)  # (T, k)
    for t, token_id in enumerate(out):
        ids = top_i[t].numpy()
        trace.steps.append(
            Step(t, vocab.token(token_id), token_id, float(probs[t, token_id]), t < len(forced), ids,
                 vocab.decode(ids), top_p[t].numpy(), self_maps[:, :, t, : t + 1], cross[:, :, t])
        )  # fmt: skip
    if out[-1] == vocab.eos_id:
        trace.stop_reason = "eos"
    trace.text = vocab.detokenize(trace.output_tokens)
    return trace


def max_shift(model: nn.Module, tokenizer: Tokenizer, source: str) -> int:
    """The largest k for positional="shifted" that decoding `source` allows: every position p + k of the source and
    of the longest decoder input must stay within max_len (0: no room to shift)."""
    src_len = len(prepare_source(model, tokenizer, source).ids)
    return max(0, model.config.max_len - max(src_len, step_limit(model, src_len)))


class UnknownTraining(ValueError):
    """A model's card does not say what it was trained on: no fresh examples can be drawn for it."""


def fresh_examples(card: dict, n: int = 200) -> list[Example]:
    """n examples of a shipped demo's task that it never trained on (its card names task, seed and train_size).

    UnknownTraining (a ValueError) when the card does not say how the model was trained."""
    try:
        task = get_task(card["task"])
        seed, size = int(card["seed"]), int(card["recipe"]["train_size"])
    except (KeyError, TypeError, ValueError):
        raise UnknownTraining("the model's card does not name a known task, seed and training size") from None
    train = {e.source for e in dataset(task, size, seed)}
    return held_out(task, n, seed + FRESH_SEED_OFFSET, exclude=train)


@dataclass
class MatchResult:
    """Exact match of greedy outputs on some examples, under some interventions (describe() form)."""

    exact_match: float
    examples: int
    interventions: dict
    failure: tuple[str, str, str] | None  # (source, target, output) of the first example the model got wrong


@torch.no_grad()
def exact_match_with(
    model: nn.Module, tokenizer: Tokenizer, examples: Sequence[Example], changes: Interventions = Interventions()
) -> MatchResult:
    """Batched greedy decoding of every example with `changes` applied, scored by exact match."""
    require_eval(model)
    src = source_ids(model, tokenizer, [e.source for e in examples])
    changes.check(model, [len(s) for s in src] + [step_limit(model, len(s)) for s in src])
    with record(model, interventions=changes) as rec:
        outputs = []
        for start in range(0, len(src), 64):  # the records of one chunk are dropped before the next
            outputs += greedy_ids(model, src[start : start + 64])
            rec.clear()
    score = exact_match(model, tokenizer, examples, outputs)
    vocab, failure = tokenizer.target, None
    for ex, out in zip(examples, outputs):
        if list(out) != vocab.encode(ex.target) + [model.config.eos_id]:
            failure = (ex.source, ex.target, vocab.detokenize(vocab.decode(strip_eos(out, model.config.eos_id))))
            break
    return MatchResult(score, len(examples), changes.describe(), failure)
