"""The one decoding loop: one step function, one key/value cache, one step limit; strategies are policies.

    sources --encode once--> memory --DecoderSession.step(), one token per row per step--> logits (B, V)
            --the policy decides: Move(tokens, rows) or stop--> DecoderSession.reorder(rows), .append(tokens)

`DecoderSession` holds the encoder output and the key/value cache of B decoder rows (B sources, or
B hypotheses of one source); with `use_cache=False` it recomputes the whole prefix each step, as the
reference implementations do (same tokens and attention rows, for benchmarks and tests).
`step_limit` is the one limit every caller shares: at most max_len - 1 written tokens, so the decoder
input <s> y_1 .. y_n that `capture` and `evaluate` feed back always fits the positional table.
`run` is the loop of every strategy: it opens the record block that applies the interventions (and records the
attention when the policy reads it), builds the session and asks the policy at each step. `RowsPolicy` is the
policy of every strategy with one hypothesis per row (greedy, forced prefix, sampling: each a `Chooser`); beam
search (beam.py) keeps several hypotheses of one source as rows and reorders them. `generate` and `greedy_ids`
run it for many sources at once with nothing recorded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

from i18n import M_, N_

from ..interventions import NONE, Interventions
from ..network.recording import Recorder, record
from ..text.inputs import device_of, require_eval

NO_DECODING = N_(
    "This model has no decoder: an encoder-only model (BERT) reads a text and predicts at each position, it writes "
    "no tokens to decode."
)
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
    cap, rule = _STEP_CAP[0], limit_rule(model.config)
    wanted = rule["source"] * source_len + rule["slack"] if requested is None else requested
    room = rule["room"] - rule["prompt"] * source_len
    return max(0, min(int(wanted), room, cap if cap is not None else int(wanted)))


def require_decoder(model: nn.Module) -> None:
    """ValueError (a Message) when the model has no decoder to write tokens with: an encoder-only model (BERT)
    reads its text and predicts at each position, it does not continue or translate it."""
    if not model.config.has_decoder:
        raise ValueError(M_(NO_DECODING))


def limit_rule(config) -> dict[str, int]:
    """step_limit's default as numbers, for a source (or prompt) of n tokens: at most source * n + slack tokens and
    room - prompt * n, never below 0 (the lecture pack's page decodes by them). A decoder-only model's prompt is its
    decoder's first inputs: prompt and continuation share the positions, and by default it continues by DEFAULT_SLACK
    tokens (the prompt's length says nothing about the continuation's)."""
    encoder = config.has_encoder
    room = config.max_len - 1 if encoder else config.max_len
    return {"source": int(encoder), "slack": DEFAULT_SLACK, "room": room, "prompt": int(not encoder)}


def checked_limit(model: nn.Module, source_len: int, requested: int | None, changes: Interventions) -> int:
    """`step_limit`, shortened by each change that needs it (positions shifted: the last decoder input sits at
    position limit - 1 + shift, which must stay inside the positional table); ValueError
    (from Interventions.check) when the changes do not fit this model or this source; ValueError when the model
    writes no tokens (require_decoder)."""
    require_decoder(model)
    limit = changes.limit_steps(model, step_limit(model, source_len, requested))
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
    A decoder-only model has no encoder: the sources are prompts (all of one length) and row b's input is
    prompt_b y_1 .. y_t; the first step feeds the whole prompt, the next ones the newest token.
    """

    def __init__(self, model: nn.Module, sources: Sequence[Sequence[int]], bos_id: int, use_cache: bool = True):
        self.model = model
        device = device_of(model)
        self.written = 0  # tokens appended so far
        self.cache = model.new_cache() if use_cache else None
        if not model.config.has_encoder:
            if len({len(s) for s in sources}) > 1 or not all(len(s) for s in sources):
                raise ValueError("a decoder-only model decodes prompts of one length (at least one token) together")
            self.memory, self.mask = None, None
            self.inputs = torch.tensor([list(s) for s in sources], dtype=torch.long, device=device)  # (B, P)
            return
        self.memory, self.mask = model.encode(
            pad_batch(sources, model.config.pad_id, device)
        )  # (B, S, D), (B,1,1,S)|None
        if use_cache:  # the cross-attention keys and values, computed once from memory (what the pack's graphs do)
            self.cache = model.new_cache(self.memory)
        self.inputs = torch.full((len(sources), 1), bos_id, dtype=torch.long, device=device)  # (B, t+1)

    def step(self) -> torch.Tensor:
        """(B, V) logits of the token after each row's input; with the cache only what it lacks is fed."""
        new = self.inputs[:, self.cache.length :] if self.cache is not None else self.inputs
        logits = self.model.decode(new, self.memory, self.mask, self.cache, last_only=True)[:, -1]
        forced = self.model.config.forced_bos_id
        if forced is not None and self.written == 0:  # BART's <s>, mBART's language code: every
            logits = torch.full_like(logits, float("-inf"))  # strategy takes it (Hugging Face's forced BOS)
            logits[:, forced] = 0.0
        return logits

    def append(self, tokens: torch.Tensor) -> None:
        """tokens: (B,) the next input of every row."""
        self.inputs = torch.cat([self.inputs, tokens[:, None]], dim=1)
        self.written += 1

    def reorder(self, rows: torch.Tensor) -> None:
        """Keep rows `rows` (B',) of everything (inputs, memory, mask, cache), in that order."""
        self.inputs = self.inputs[rows]
        self.memory = self.memory[rows] if self.memory is not None else None
        self.mask = self.mask[rows] if self.mask is not None else None
        if self.cache is not None:
            for layer in self.cache.layers:
                for kv in (layer.self_attn, layer.cross_attn):
                    if kv.k is not None:
                        kv.k, kv.v = kv.k[rows], kv.v[rows]  # (B', H, T, dk)


@dataclass
class Move:
    """What a policy decides at one step: the next input of every row it keeps, and which rows (None: all, in order)."""

    tokens: torch.Tensor  # (B',) token ids
    rows: torch.Tensor | None = None  # (B',) the rows of the session kept, in their new order


class Policy(Protocol):
    def step(self, t: int, logits: torch.Tensor, recorder: Recorder | None) -> Move | None:
        """Given step t's logits (B, V) (and the attention of the step when recorded), the move; None stops."""


@torch.no_grad()
def run(
    model: nn.Module,
    sources: Sequence[Sequence[int]],
    policy: Policy,
    limit: int,
    *,
    bos_id: int,
    interventions: Interventions = NONE,
    use_cache: bool = True,
    keep: bool = False,
) -> None:
    """The decoding loop of every strategy: at most `limit` steps of `policy` over one DecoderSession.

    interventions apply to every pass (the recording hooks); keep=True also records each step's attention
    for the policy to read (cleared before each step). Without either, the fused attention path runs.
    A change that needs the whole prefix (a shuffle) turns the key/value cache off."""
    use_cache = use_cache and not interventions.needs_full_prefix
    block = record(model, interventions=interventions, keep=keep) if keep or interventions else contextlib.nullcontext()
    with block as rec:
        session = DecoderSession(model, sources, bos_id, use_cache)
        for t in range(limit):
            if keep:
                rec.clear()
            move = policy.step(t, session.step(), rec if keep else None)
            if move is None:
                break
            if move.rows is not None:
                session.reorder(move.rows)
            session.append(move.tokens)


# choose(t, logits (B, V)) -> (B,) token ids: what a strategy with one hypothesis per row decides at step t
Chooser = Callable[[int, torch.Tensor], torch.Tensor]


def greedy_choice(t: int, logits: torch.Tensor) -> torch.Tensor:
    return logits.argmax(-1)


class RowsPolicy:
    """One hypothesis per row: `choose` picks every row's token; a row stops after </s> (unless stop_at_eos=False)
    or at its own limit, and the loop when every row has. observe(t, logits, chosen, recorder) sees every step."""

    def __init__(
        self,
        limits: Sequence[int],
        choose: Chooser = greedy_choice,
        eos_id: int = 2,
        stop_at_eos: bool = True,
        observe: Callable[[int, torch.Tensor, torch.Tensor, Recorder | None], None] | None = None,
    ):
        self.limits, self.choose, self.eos_id, self.stop_at_eos, self.observe = (
            limits,
            choose,
            eos_id,
            stop_at_eos,
            observe,
        )
        self.written = [0] * len(limits)
        self.live = [i for i, n in enumerate(limits) if n > 0]
        self.steps: list[torch.Tensor] = []

    def step(self, t: int, logits: torch.Tensor, recorder: Recorder | None) -> Move | None:
        if not self.live:
            return None
        chosen = self.choose(t, logits)  # (B,)
        if self.observe is not None:
            self.observe(t, logits, chosen, recorder)
        self.steps.append(chosen)
        ended = chosen.tolist() if self.stop_at_eos else None
        for i in self.live:
            self.written[i] = t + 1
        self.live = [
            i for i in self.live if t + 1 < self.limits[i] and not (self.stop_at_eos and ended[i] == self.eos_id)
        ]
        return Move(chosen) if self.live else None

    def outputs(self) -> list[list[int]]:
        """Each row's output ids, ending with </s> when it was written."""
        table = torch.stack(self.steps, dim=1).tolist() if self.steps else [[] for _ in self.limits]  # (B, steps)
        return [row[:n] for row, n in zip(table, self.written)]


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
    interventions: Interventions = NONE,
) -> list[list[int]]:
    """`run` with one hypothesis per source (RowsPolicy), nothing recorded.

    sources: B source id lists; limits: (B,) most tokens each row writes (from `step_limit`).
    choose picks each step's tokens; observe(t, logits (B, V), chosen (B,)) sees every step. Returns each
    row's output ids, ending with </s> when it was written.
    """
    require_eval(model)
    cfg = model.config
    if not sources:
        return []
    if any(n > cfg.max_len - 1 for n in limits):
        raise ValueError(f"a step limit exceeds max_len - 1 = {cfg.max_len - 1}: take limits from step_limit()")
    seen = None if observe is None else (lambda t, logits, chosen, rec: observe(t, logits, chosen))
    policy = RowsPolicy(limits, choose, cfg.eos_id if eos_id is None else eos_id, stop_at_eos, seen)
    run(model, sources, policy, max(limits), bos_id=cfg.bos_id if bos_id is None else bos_id,
        interventions=interventions, use_cache=use_cache)  # fmt: skip
    return policy.outputs()


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
    apart = interventions.needs_full_prefix or not model.config.has_encoder
    if apart and len({len(s) for s in sources}) > 1:
        # a shuffle permutes the padded length's positions, and a decoder-only model's prompts are its inputs:
        # decode each source length apart, as one source alone
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
        out += generate(model, chunk, limits, bos_id=bos_id, eos_id=eos_id, interventions=interventions)
    return out
