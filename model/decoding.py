"""Decoding: one step function, one key/value cache, one step limit; strategies only choose tokens.

    sources --encode once--> memory --DecoderSession.step(), one token per row per step--> logits (B, V)
            --a strategy picks the next token of every row--> DecoderSession.append(tokens)

`DecoderSession` holds the encoder output and the key/value cache of B decoder rows (B sources, or
B hypotheses of one source); with `use_cache=False` it recomputes the whole prefix each step, as the
reference implementations do (same tokens and attention rows, for benchmarks and tests).
`step_limit` is the one limit every caller shares: at most max_len - 1 written tokens, so the decoder
input <s> y_1 .. y_n that `capture` and `evaluate` feed back always fits the positional table.
`generate` is the loop of every strategy with one hypothesis per row (greedy, forced prefix,
sampling): `greedy_decode` runs it for one source and records each step's attention, `greedy_ids`
for many sources at once with nothing recorded. Interventions (heads switched off, positions changed,
model/interventions.py) are arguments of every strategy, applied by the same recording hooks as
`capture`'s and written into the Trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .interventions import NONE, Interventions
from .network.recording import record
from .text.inputs import device_of, prepare_source, require_eval
from .text.tokenizer import Tokenizer


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
    # what was changed while decoding, JSON-ready: {} or e.g. {"ablate": [["cross", 1, 0]], "positional": "off"}
    interventions: dict = field(default_factory=dict)

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


DEFAULT_SLACK = 50  # default step limit: the source length plus this many tokens (the paper's setting)
_STEP_CAP: list[int | None] = [None]  # a server's cap on every decoding's steps (set_step_cap); None: no cap


def set_step_cap(steps: int | None) -> None:
    """Cap every decoding of this process at `steps` tokens (None: no cap). The app's server sets it once at
    start from its work budget ($VIZ_MAX_STEPS, model/analysis/budget.py): a model that never writes </s> then costs at
    most that many steps, whatever its max_len. Library use has no cap."""
    _STEP_CAP[0] = None if steps is None else max(1, int(steps))


def step_cap() -> int | None:
    return _STEP_CAP[0]


def step_limit(model: nn.Module, source_len: int, requested: int | None = None) -> int:
    """The most tokens one decoding of a source of `source_len` tokens writes: `requested`, by default
    the source plus 50 as in the paper ("maximum output length during inference to input length + 50",
    section 6.1; enough for every demo task), and never more than max_len - 1, so that the decoder input
    <s> y_1 .. y_n fed back by `capture` and `evaluate` fits the positional table; nor more than a server's
    step cap (set_step_cap)."""
    wanted = source_len + DEFAULT_SLACK if requested is None else requested
    cap = _STEP_CAP[0]
    return max(0, min(int(wanted), model.config.max_len - 1, cap if cap is not None else int(wanted)))


def checked_limit(model: nn.Module, source_len: int, requested: int | None, changes: Interventions) -> int:
    """`step_limit`, under positional="shifted" also short enough that the shifted decoder positions
    (the last input sits at position limit - 1 + shift) stay inside the positional table; ValueError
    (from Interventions.check) when the changes do not fit this model or this source."""
    limit = step_limit(model, source_len, requested)
    if changes.positional == "shifted":
        limit = max(0, min(limit, model.config.max_len - changes.shift))
    changes.check(model, (source_len, limit))
    return limit


def pad_batch(rows: Sequence[Sequence[int]], pad_id: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """(B, T) long tensor, each row right-padded with pad_id to the longest row."""
    width = max((len(r) for r in rows), default=0)
    out = torch.full((len(rows), max(width, 1)), pad_id, dtype=torch.long, device=device)
    for i, r in enumerate(rows):
        if len(r):
            out[i, : len(r)] = torch.as_tensor(list(r), dtype=torch.long)
    return out


class DecoderSession:
    """The encoder output and decoder key/value cache of B rows, advanced one token per step.

    sources: B source id lists (each ending with </s>; padded here). Row b's decoder input so far is
    `inputs[b]` = <s> y_1 .. y_t. `step()` gives the next-token logits of every row, `append` adds the
    chosen tokens, `reorder` keeps and repeats rows (beam search).
    """

    def __init__(self, model: nn.Module, sources: Sequence[Sequence[int]], bos_id: int, use_cache: bool = True):
        self.model = model
        device = device_of(model)
        self.memory, self.mask = model.encode(
            pad_batch(sources, model.config.pad_id, device)
        )  # (B, S, D), (B,1,1,S)|None
        self.cache = model.new_cache() if use_cache else None
        self.inputs = torch.full((len(sources), 1), bos_id, dtype=torch.long, device=device)  # (B, t+1)

    def step(self) -> torch.Tensor:
        """(B, V) logits of the token after each row's input; with the cache only the newest token is fed."""
        new = self.inputs[:, -1:] if self.cache is not None else self.inputs
        logits = self.model.decode(new, self.memory, self.mask, self.cache, last_only=True)[:, -1]
        forced = self.model.config.forced_bos_id
        if forced is not None and self.inputs.size(1) == 1:  # BART's <s>, mBART's language code: every
            logits = torch.full_like(logits, float("-inf"))  # strategy takes it (Hugging Face's forced BOS)
            logits[:, forced] = 0.0
        return logits

    def append(self, tokens: torch.Tensor) -> None:
        """tokens: (B,) the next input of every row."""
        self.inputs = torch.cat([self.inputs, tokens[:, None]], dim=1)

    def reorder(self, rows: torch.Tensor) -> None:
        """Keep rows `rows` (B',) of everything (inputs, memory, mask, cache), in that order."""
        self.inputs = self.inputs[rows]
        self.memory = self.memory[rows]
        self.mask = self.mask[rows] if self.mask is not None else None
        if self.cache is not None:
            for layer in self.cache.layers:
                for kv in (layer.self_attn, layer.cross_attn):
                    if kv.k is not None:
                        kv.k, kv.v = kv.k[rows], kv.v[rows]  # (B', H, T, dk)


# choose(t, logits (B, V)) -> (B,) token ids: what a strategy decides at step t
Chooser = Callable[[int, torch.Tensor], torch.Tensor]


def greedy_choice(t: int, logits: torch.Tensor) -> torch.Tensor:
    return logits.argmax(-1)


@torch.no_grad()
def generate(
    model: nn.Module,
    sources: Sequence[Sequence[int]],
    limits: Sequence[int],
    choose: Chooser = greedy_choice,
    *,
    bos_id: int | None = None,
    eos_id: int | None = None,
    use_cache: bool = True,
    stop_at_eos: bool = True,
    observe: Callable[[int, torch.Tensor, torch.Tensor], None] | None = None,
) -> list[list[int]]:
    """The decoding loop of every strategy with one hypothesis per source.

    sources: B source id lists; limits: (B,) most tokens each row writes (from `step_limit`).
    choose picks each step's tokens; observe(t, logits (B, V), chosen (B,)) sees every step (to
    record it). A row stops after </s> (unless stop_at_eos=False) or at its limit; the loop stops
    when every row has. Returns each row's output ids, ending with </s> when it was written.
    """
    require_eval(model)
    cfg = model.config
    bos_id = cfg.bos_id if bos_id is None else bos_id
    eos_id = cfg.eos_id if eos_id is None else eos_id
    if not sources:
        return []
    if any(n > cfg.max_len - 1 for n in limits):
        raise ValueError(f"a step limit exceeds max_len - 1 = {cfg.max_len - 1}: take limits from step_limit()")
    session = DecoderSession(model, sources, bos_id, use_cache)
    written = [0] * len(sources)
    live = [i for i, n in enumerate(limits) if n > 0]
    steps = []
    for t in range(max(limits)):
        if not live:
            break
        logits = session.step()  # (B, V)
        chosen = choose(t, logits)  # (B,)
        if observe is not None:
            observe(t, logits, chosen)
        steps.append(chosen)
        session.append(chosen)
        ended = chosen.tolist() if stop_at_eos else None
        for i in live:
            written[i] = t + 1
        live = [i for i in live if t + 1 < limits[i] and not (stop_at_eos and ended[i] == eos_id)]
    table = torch.stack(steps, dim=1).tolist() if steps else [[] for _ in sources]  # (B, steps)
    return [row[:n] for row, n in zip(table, written)]


@torch.no_grad()
def greedy_ids(
    model: nn.Module,
    sources: Sequence[Sequence[int]],
    max_steps: int | None = None,
    batch_size: int = 256,
    bos_id: int | None = None,
    eos_id: int | None = None,
    interventions: Interventions = NONE,
) -> list[list[int]]:
    """Cached greedy decoding of many sources at once, nothing recorded: each one's output ids,
    ending with </s> when it was written; `step_limit` applies per source (`checked_limit` with
    interventions, which the recording hooks apply to every row; nothing is kept)."""
    if interventions.needs_full_prefix and len({len(s) for s in sources}) > 1:
        # a shuffle permutes the padded length's positions: decode each source length apart, as one source alone
        by_length: dict[int, list[int]] = {}
        for i, s in enumerate(sources):
            by_length.setdefault(len(s), []).append(i)
        found: dict[int, list[int]] = {}
        for rows in by_length.values():
            part = greedy_ids(model, [sources[i] for i in rows], max_steps, batch_size, bos_id, eos_id, interventions)
            found.update(zip(rows, part))
        return [found[i] for i in range(len(sources))]
    out: list[list[int]] = []
    for start in range(0, len(sources), batch_size):
        chunk = sources[start : start + batch_size]
        limits = [checked_limit(model, len(s), max_steps, interventions) for s in chunk]
        if not interventions:  # the fused attention path
            out += generate(model, chunk, limits, bos_id=bos_id, eos_id=eos_id)
            continue
        with record(model, interventions=interventions, keep=False):
            out += generate(model, chunk, limits, bos_id=bos_id, eos_id=eos_id,
                            use_cache=not interventions.needs_full_prefix)  # fmt: skip
    return out


def _last_rows(recorder, kind: str, layers: int) -> np.ndarray:
    """(L, H, Tk): the last query row of each layer's single recorded map of this kind, batch row 0."""
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
    src_in = prepare_source(model, tokenizer, source)
    limit = checked_limit(model, len(src_in.ids), max_len, interventions)
    trace = Trace(src_in.tokens, src_in.ids, truncated=src_in.truncated, start_token=vocab.token(vocab.bos_id),
                  interventions=interventions.describe())  # fmt: skip
    n_layers = len(model.decoder.layers)
    k = max(1, min(top_k, model.config.tgt_vocab_size))
    probs_of = distribution or (lambda logits: logits.float().softmax(-1))

    def observe(t: int, logits: torch.Tensor, chosen: torch.Tensor) -> None:
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
                cross=_last_rows(rec, "cross", n_layers),
            )
        )
        rec.clear()

    use_cache = use_cache and not interventions.needs_full_prefix
    with record(model, interventions=interventions) as rec:
        out = generate(model, [src_in.ids], [limit], choose, bos_id=vocab.bos_id, eos_id=vocab.eos_id,
                       use_cache=use_cache, stop_at_eos=stop_at_eos, observe=observe)[0]  # fmt: skip
    if stop_at_eos and out[-1:] == [vocab.eos_id]:
        trace.stop_reason = "eos"
    trace.text = vocab.detokenize(trace.output_tokens)
    return trace


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
    ablate: Sequence[tuple[str, int, int]] | None = None,
    positional: str | None = None,
    shift: int = 1,
    seed: int = 0,
) -> Trace:
    """Decode `source` greedily, recording each step's attention rows and top-k candidates.

    max_len: most tokens to generate (default and bound: `step_limit`). prefix: token ids to force as
    the first outputs (the user picked other candidates); greedy choice continues after them.
    stop_at_eos=False keeps going past </s> (for benchmarks).
    ablate, positional, shift, seed: interventions, as in `capture` (model/interventions.py), applied at
    every step; ValueError names a bad one before any work. Trace.interventions records them.
    """
    changes = Interventions.make(ablate, positional, shift, seed)
    bad = [i for i in prefix if not 0 <= int(i) < model.config.tgt_vocab_size]
    if bad:
        raise ValueError(f"prefix ids {bad} are outside the target vocabulary (0..{model.config.tgt_vocab_size - 1})")
    forced = [int(i) for i in prefix]

    def choose(t: int, logits: torch.Tensor) -> torch.Tensor:
        if t < len(forced):
            return torch.full((logits.size(0),), forced[t], dtype=torch.long, device=logits.device)
        return logits.argmax(-1)

    return decode_trace(model, tokenizer, source, choose, max_len, top_k, use_cache, stop_at_eos,
                        forced=lambda t: t < len(forced), interventions=changes)  # fmt: skip


def sampling_distribution(logits: torch.Tensor, temperature: float, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """(..., V) probabilities a token is drawn from: softmax(logits / temperature), cut to the top_k
    most probable tokens (0: all) and renormalised, then cut to the smallest set whose probability reaches top_p
    (the nucleus, measured on the top-k tokens' renormalised probabilities), renormalised: the order and the
    definition of Hugging Face's generate (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper).
    temperature 0 puts all mass on the argmax (greedy)."""
    logits = logits.float()
    if temperature <= 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.size(-1)).float()
    probs = (logits / temperature).softmax(-1)
    if 0 < top_k < probs.size(-1):
        kth = probs.topk(top_k, dim=-1).values[..., -1:]  # (..., 1) the k-th largest probability
        probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
        probs = probs / probs.sum(-1, keepdim=True)  # top-p reads the top-k tokens' own distribution
    if top_p < 1.0:
        sorted_p, order = probs.sort(-1, descending=True)
        before = sorted_p.cumsum(-1) - sorted_p  # mass of the more probable tokens
        keep_sorted = before < top_p  # the most probable token is always kept
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        probs = torch.where(keep, probs, torch.zeros_like(probs))
    return probs / probs.sum(-1, keepdim=True)


@torch.no_grad()
def sample(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int = 0,
    max_len: int | None = None,
    shown: int = 5,
    ablate: Sequence[tuple[str, int, int]] | None = None,
    positional: str | None = None,
    shift: int = 1,
    shuffle_seed: int = 0,
) -> Trace:
    """Decode `source` by drawing each token from `sampling_distribution`, recording every step like
    `greedy_decode`. The same seed gives the same draw; temperature 0 is greedy decoding.

    Each Step's prob, top_ids and top_probs describe the distribution the token was drawn from
    (after temperature, top_k and top_p); `shown` candidates are kept per step.
    ablate, positional, shift: interventions as in `greedy_decode`; shuffle_seed is their `seed` (which
    permutation positional="shuffled" uses), named apart from the seed of the draw.
    """
    changes = Interventions.make(ablate, positional, shift, shuffle_seed)
    if temperature < 0 or not 0 < top_p <= 1 or top_k < 0:
        raise ValueError("sampling needs temperature >= 0, 0 < top_p <= 1 and top_k >= 0")
    generator = torch.Generator(device=device_of(model)).manual_seed(int(seed))

    def distribution(logits: torch.Tensor) -> torch.Tensor:
        return sampling_distribution(logits, temperature, top_k, top_p)

    def choose(t: int, logits: torch.Tensor) -> torch.Tensor:
        if temperature <= 0:
            return logits.argmax(-1)
        return torch.multinomial(distribution(logits), 1, generator=generator)[:, 0]

    return decode_trace(model, tokenizer, source, choose, max_len, shown, distribution=distribution,
                        interventions=changes)  # fmt: skip
