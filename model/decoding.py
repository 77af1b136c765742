"""Greedy decoding, one token per step, with every step's attention recorded.

With `use_cache=True` each step feeds only the newest token and reuses the keys and values of all
earlier positions (and the cross-attention keys and values of the source, computed once).
`use_cache=False` recomputes the whole prefix each step, as the reference implementations do; both
give the same tokens and attention rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .inputs import as_batch, prepare_source, require_eval
from .recording import record
from .tokenizer import Tokenizer


@dataclass
class Step:
    """One generated token and what the decoder looked at to produce it (t = index, from 0)."""

    index: int  # t: the decoder input was <s> y_1 .. y_t
    token: str  # y_{t+1}, the token chosen at this step
    token_id: int
    prob: float  # the model's probability of the chosen token
    forced: bool  # chosen by the caller (a prefix) rather than by argmax
    top_ids: np.ndarray  # (k,) the k most probable next tokens, most probable first
    top_tokens: list[str]
    top_probs: np.ndarray  # (k,)
    decoder_self: np.ndarray  # (L, H, t+1) the newest position's self-attention over <s> y_1 .. y_t
    cross: np.ndarray  # (L, H, S) the newest position's attention over the source tokens


@dataclass
class Trace:
    """A whole greedy decoding: the source, one Step per generated token, and why it stopped."""

    source_tokens: list[str]  # S tokens, ending with </s>
    source_ids: list[int]
    steps: list[Step] = field(default_factory=list)
    stop_reason: str = "max_len"  # "eos" or "max_len"
    truncated: int = 0  # source tokens cut to fit the model's max_len
    text: str = ""  # the generated text, specials left out
    start_token: str = "<s>"  # the decoder's first input (Marian starts from <pad>)

    @property
    def output_ids(self) -> list[int]:
        return [s.token_id for s in self.steps]

    @property
    def output_tokens(self) -> list[str]:
        return [s.token for s in self.steps]

    def decoder_inputs(self, t: int) -> list[str]:
        """The decoder's input tokens at step t: <s> y_1 .. y_t."""
        return [self.start_token] + self.output_tokens[:t]

    def cross_alignment(self) -> np.ndarray:
        """(L, H, T, S): row t is the cross-attention of step t; T = number of steps."""
        if not self.steps:
            return np.zeros((0, 0, 0, len(self.source_tokens)), dtype=np.float32)
        return np.stack([s.cross for s in self.steps], axis=2)

    def decoder_self_matrix(self) -> np.ndarray:
        """(L, H, T, T): row t is step t's self-attention row, zero above the diagonal."""
        T = len(self.steps)
        if not T:
            return np.zeros((0, 0, 0, 0), dtype=np.float32)
        L, H, _ = self.steps[0].decoder_self.shape
        out = np.zeros((L, H, T, T), dtype=np.float32)
        for t, s in enumerate(self.steps):
            out[:, :, t, : t + 1] = s.decoder_self
        return out


def default_max_steps(model: nn.Module, source_len: int) -> int:
    """Twice the source plus some slack, within the positional table: enough for every demo task."""
    return min(model.config.max_len, 2 * source_len + 16)


def _last_rows(recorder, kind: str, layers: int) -> np.ndarray:
    """(L, H, Tk): the last query row of each layer's single recorded map of this kind."""
    return torch.stack([recorder.attention[(kind, i)][-1][0, :, -1, :] for i in range(layers)]).float().cpu().numpy()


@torch.no_grad()
def greedy_decode(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    max_len: int | None = None,
    top_k: int = 5,
    use_cache: bool = True,
    prefix: Sequence[int] = (),
    stop_at_eos: bool = True,
) -> Trace:
    """Decode `source` greedily, recording each step's attention rows and top-k candidates.

    max_len: most tokens to generate (default: twice the source length plus 16, within the model's
    max_len). prefix: token ids to force as the first outputs (the user picked other candidates);
    greedy choice continues after them. stop_at_eos=False keeps going past </s> (for benchmarks).
    """
    require_eval(model)
    vocab = tokenizer.target
    bad = [i for i in prefix if not 0 <= int(i) < model.config.tgt_vocab_size]
    if bad:
        raise ValueError(f"prefix ids {bad} are outside the target vocabulary (0..{model.config.tgt_vocab_size - 1})")
    src_in = prepare_source(model, tokenizer, source)
    steps_limit = default_max_steps(model, len(src_in.ids)) if max_len is None else min(max_len, model.config.max_len)
    trace = Trace(src_in.tokens, src_in.ids, truncated=src_in.truncated, start_token=vocab.token(vocab.bos_id))
    memory, mask = model.encode(as_batch(model, src_in.ids))
    cache = model.new_cache() if use_cache else None
    ys = [vocab.bos_id]
    n_layers = len(model.decoder.layers)
    k = max(1, min(top_k, model.config.tgt_vocab_size))
    with record(model) as rec:
        for t in range(steps_limit):
            rec.clear()
            new = ys[-1:] if use_cache else ys
            logits = model.decode(as_batch(model, new), memory, mask, cache, last_only=True)  # (1, 1, V)
            probs = logits[0, -1].float().softmax(-1)
            top_p, top_i = probs.topk(k)
            forced = t < len(prefix)
            choice = int(prefix[t]) if forced else int(top_i[0])
            top_ids = top_i.cpu().numpy()
            trace.steps.append(
                Step(
                    index=t,
                    token=vocab.token(choice),
                    token_id=choice,
                    prob=float(probs[choice]) if 0 <= choice < probs.numel() else 0.0,
                    forced=forced,
                    top_ids=top_ids,
                    top_tokens=vocab.decode(top_ids),
                    top_probs=top_p.cpu().numpy(),
                    decoder_self=_last_rows(rec, "decoder_self", n_layers),
                    cross=_last_rows(rec, "cross", n_layers),
                )
            )
            ys.append(choice)
            if stop_at_eos and choice == vocab.eos_id:
                trace.stop_reason = "eos"
                break
    trace.text = vocab.detokenize(trace.output_tokens)
    return trace


@torch.no_grad()
def generate_ids(model: nn.Module, src_ids: list[int], max_steps: int, bos_id: int, eos_id: int) -> list[int]:
    """Plain cached greedy decoding, nothing recorded: the output ids, ending with </s> if it was produced."""
    memory, mask = model.encode(as_batch(model, src_ids))
    cache = model.new_cache()
    ys = [bos_id]
    for _ in range(max_steps):
        logits = model.decode(as_batch(model, ys[-1:]), memory, mask, cache, last_only=True)
        ys.append(int(logits[0, -1].argmax()))
        if ys[-1] == eos_id:
            break
    return ys[1:]
