"""What a decoding with one hypothesis per row records: a `Step` per token and the whole `Trace`, built by
`decode_trace` from any `Chooser` (greedy, forced prefix, sampling) over the one loop (core.run)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ..interventions import NONE, Interventions
from ..network.recording import Recorder
from ..text.inputs import prepare_sequence, prepare_source, require_eval
from ..text.tokenizer import Tokenizer
from . import core
from .core import Chooser, RowsPolicy, checked_limit


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
    prompt: bool = False  # decoder-only: the source tokens are the prompt, the decoder's first inputs
    # what was changed while decoding, JSON-ready: {} or e.g. {"ablate": [["cross", 1, 0]], "positional": "off"}
    interventions: dict = field(default_factory=dict)

    @property
    def output_ids(self) -> list[int]:
        return [s.token_id for s in self.steps]

    @property
    def output_tokens(self) -> list[str]:
        return [s.token for s in self.steps]

    def decoder_inputs(self, t: int) -> list[str]:
        """The decoder's input tokens at step t: <s> y_1 .. y_t (decoder-only: prompt y_1 .. y_t)."""
        return (list(self.source_tokens) if self.prompt else [self.start_token]) + self.output_tokens[:t]

    def cross_alignment(self) -> np.ndarray:
        """(L, H, T, S): row t is the cross-attention of step t; T = number of steps."""
        if not self.steps:
            return np.zeros((0, 0, 0, len(self.source_tokens)), dtype=np.float32)
        return np.stack([s.cross for s in self.steps], axis=2)

    def decoder_self_matrix(self) -> np.ndarray:
        """(L, H, T, T): row t is step t's self-attention row, zero above the diagonal. Decoder-only:
        (L, H, T, P + T - 1), row t over the prompt's P tokens and y_1 .. y_t."""
        T = len(self.steps)
        if not T:
            return np.zeros((0, 0, 0, 0), dtype=np.float32)
        L, H, first = self.steps[0].decoder_self.shape
        out = np.zeros((L, H, T, first + T - 1), dtype=np.float32)
        for t, s in enumerate(self.steps):
            out[:, :, t, : first + t] = s.decoder_self
        return out


def _last_rows(recorder, kind: str, layers: int, heads: int = 0) -> np.ndarray:
    """(L, H, Tk): the last query row of each layer's single recorded map of this kind, batch row 0
    ((L, heads, 0) when the model has no attention of this kind: a decoder-only model's cross-attention)."""
    if (kind, 0) not in recorder.attention:
        return np.zeros((layers, heads, 0), dtype=np.float32)
    return torch.stack([recorder.attention[(kind, i)][-1][0, :, -1, :] for i in range(layers)]).float().cpu().numpy()


def decode_trace(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    choose: Chooser,
    max_len: int | None = None,
    top_k: int = 5,
    use_cache: bool = True,
    stop_at_eos: bool = True,
    distribution: Callable[[torch.Tensor], torch.Tensor] | None = None,
    forced: Callable[[int], bool] = lambda t: False,
    interventions: Interventions = NONE,
) -> Trace:
    """Decode one source with `choose`, recording every step's attention rows and top-k candidates.

    distribution(logits (V,)) -> probabilities (V,) the step reports (default: the model's softmax).
    interventions change every step (the same hooks as `capture`); the Trace records them.
    """
    require_eval(model)
    vocab = tokenizer.target
    prompt = not model.config.has_encoder  # decoder-only: the source is the prompt
    src_in = (prepare_sequence if prompt else prepare_source)(model, tokenizer, source)
    limit = checked_limit(model, len(src_in.ids), max_len, interventions)
    trace = Trace(src_in.tokens, src_in.ids, truncated=src_in.truncated, start_token=vocab.token(vocab.bos_id),
                  interventions=interventions.describe(), prompt=prompt)  # fmt: skip
    n_layers = len(model.decoder.layers)
    k = max(1, min(top_k, model.config.tgt_vocab_size))
    probs_of = distribution or (lambda logits: logits.float().softmax(-1))

    def observe(t: int, logits: torch.Tensor, chosen: torch.Tensor, rec: Recorder | None) -> None:
        probs = probs_of(logits[0])  # (V,)
        top_p, top_i = probs.topk(k)
        choice = int(chosen[0])
        top_ids = top_i.cpu().numpy()
        trace.steps.append(
            Step(
                index=t,
                token=vocab.token(choice),
                token_id=choice,
                prob=float(probs[choice]) if 0 <= choice < probs.numel() else 0.0,
                forced=forced(t),
                top_ids=top_ids,
                top_tokens=vocab.decode(top_ids),
                top_probs=top_p.cpu().numpy(),
                decoder_self=_last_rows(rec, "decoder_self", n_layers),
                cross=_last_rows(rec, "cross", n_layers, model.config.n_heads),
            )
        )

    policy = RowsPolicy([limit], choose, vocab.eos_id, stop_at_eos, observe)
    core.run(model, [src_in.ids], policy, limit, bos_id=vocab.bos_id, interventions=interventions, use_cache=use_cache,
        keep=True)  # fmt: skip
    out = policy.outputs()[0]
    if stop_at_eos and out[-1:] == [vocab.eos_id]:
        trace.stop_reason = "eos"
    trace.text = vocab.detokenize(trace.output_tokens)
    return trace
