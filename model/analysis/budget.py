"""The work a visitor's input will cost, estimated from the model's shape and the input's length before any work
starts, and checked against a budget (issue 22).

The config limits (model/network/config.py) bound the weights; they do not bound the work. Attention grows with
heads x length^2, not with the size of the weights: a 261 KB checkpoint with 32 heads and max_len 16384 asked
for 32 GB for a 16,000-character input. Every estimate below is an upper bound in bytes of what one call holds
at its peak (float32; recorded maps are counted twice: the tensor and its numpy copy):

- `capture_bytes(cfg, S, T, qkv)`: one recorded pass, S source and T decoder tokens: every attention map
  H x (L_enc S^2 + L_dec T^2 + L_dec T S), one layer's transient scores, activations, logits and log-probs;
  with qkv, each head's queries, keys, values and outputs.
- `decode_bytes(cfg, S, n, beams)`: n recorded decoding steps (each keeps the newest row of every map:
  L_dec H (S + t)), the key/value cache, one step's logits; beams > 1: beam search keeps 2 x beams hypotheses
  per step, each with its rows.
- `figure_bytes(cfg, S, T)`: the pages' figures and downloads of every map (numbers as text or typed arrays).
- `page_bytes(cfg, S, T)`: what one page run on a new input may need: the larger of the capture (with Q, K, V)
  and the greedy decoding up to the step limit, plus the figures.
- `importance_row_bytes(cfg, S, T)`: one row of head importance's batched passes.

Time follows: with S bounded by the memory budget and every decoding capped at $VIZ_MAX_STEPS steps
(default 256; the server calls model.decoding.set_step_cap at start), the slowest page run any input can ask
for costs about what the paper's base model costs on an ordinary input (a model that never writes </s> with
max_len 16384 decoded 4,000 characters before: 4.5 GB and minutes).

`WorkBudget` holds the limit: $VIZ_WORK_MB, default 256 MB per session (one session runs one page at a time;
a laptop with 8 GB serves a room of 30 with room to spare, since ordinary inputs need a few MB). It answers:
`source_room(cfg)` the most source tokens a page may read, `target_room(cfg, S)` the most decoder tokens,
`beam_room(cfg, S, n)` the widest beam, `importance_rows(cfg, S, T)` the batch size, each at most the model's
own limit. `fit_text(vocab, text, n)` cuts a text to its first n tokens (a prefix of what was typed).
Pure Python and arithmetic: no torch, nothing allocated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from i18n import M_, Message

from ..checkpoints.safe_io import size_text
from ..decoding import DEFAULT_SLACK, step_cap
from ..text.inputs import MAX_LEN_CUT, WHAT  # the names and the max_len warning of check_text's messages

ENV = "VIZ_WORK_MB"
MAX_TEXT_CHARS = (
    20_000  # typed or linked text, per box: far more than any model here reads (tokenizing 5 MB took 8-17 s)
)
DEFAULT_MB = 256
F32 = 4  # bytes per recorded number


class BudgetExceeded(ValueError):
    """A request that does not fit the work budget; its message (an i18n Message) says what would fit."""


def one_sequence(cfg, S: int, T: int) -> tuple[int, int]:
    """(S, T) as the model's shape reads them: a decoder-only model reads the prompt's S tokens and the T after them
    as one decoder sequence (no source side, no cross-attention); an encoder-only model writes nothing (T = 0)."""
    if not cfg.has_encoder:
        return 0, S + T
    return (S, 0) if not cfg.has_decoder else (S, T)


def _attention_elements(cfg, S: int, T: int) -> int:
    S, T = one_sequence(cfg, S, T)
    cross = T * S if cfg.has_encoder and cfg.has_decoder else 0
    return cfg.n_heads * (cfg.n_encoder_layers * S * S + cfg.n_decoder_layers * (T * T + cross))


def pass_bytes(cfg, S: int, T: int, rows: int = 1) -> int:
    """The transient peak of one forward pass of `rows` batch rows (nothing recorded): one layer's scores,
    softmax and mask at a time, the widest activations, the logits and their log-softmax."""
    S, T = one_sequence(cfg, S, T)
    scores = cfg.n_heads * max(S * S, T * T, T * S) * 3
    activations = (S + T) * max(cfg.d_ff, 4 * cfg.d_model) * 2
    logits = T * cfg.tgt_vocab_size * 3
    return rows * F32 * (scores + activations + logits)


def capture_bytes(cfg, S: int, T: int, qkv: bool = False) -> int:
    """One recorded pass (model.capture): every map twice (tensor and numpy), the pass, the log-probs."""
    S, T = one_sequence(cfg, S, T)
    maps = 2 * F32 * _attention_elements(cfg, S, T)
    vectors = 0
    if qkv:  # q, k, v and the head outputs of every layer and kind, tensor and numpy
        tokens = cfg.n_encoder_layers * 3 * S + cfg.n_decoder_layers * (3 * T + 2 * T + S + T)
        vectors = 2 * F32 * 2 * tokens * cfg.d_model
    embeddings = 4 * F32 * (S + T) * cfg.d_model
    return maps + vectors + embeddings + pass_bytes(cfg, S, T) + F32 * T * cfg.tgt_vocab_size


def decode_bytes(cfg, S: int, steps: int, beams: int = 1) -> int:
    """n recorded decoding steps (greedy or sampling: beams=1; beam search: beams hypotheses kept, 2x ranked)."""
    kept = 1 if beams == 1 else 2 * beams
    rows = cfg.n_decoder_layers * cfg.n_heads * (steps * S + steps * (steps + 1) // 2)  # newest rows, every step
    cache = beams * 2 * cfg.n_decoder_layers * (steps + S) * cfg.d_model
    per_step = beams * (cfg.tgt_vocab_size * 3 + 4 * cfg.d_model + max(cfg.d_ff, 4 * cfg.d_model))
    return F32 * (2 * kept * rows + cache + per_step) + pass_bytes(cfg, S, 1)


def figure_bytes(cfg, S: int, T: int) -> int:
    """Figures and downloads of every map: 24 bytes a number (a float64 typed array in base64 is 10.7 bytes, held
    as the figure's JSON, then in the protobuf message and the websocket frame that carry it)."""
    return 24 * _attention_elements(cfg, S, T)  # (one_sequence inside)


def steps_for(cfg, S: int) -> int:
    """The decoding step limit for S source tokens (model.decoding.step_limit, without a model): a decoder-only
    model continues its prompt of S tokens by DEFAULT_SLACK at most; an encoder-only model writes nothing."""
    cap = step_cap()
    if not cfg.has_decoder:
        return 0
    wanted, room = (S + DEFAULT_SLACK, cfg.max_len - 1) if cfg.has_encoder else (DEFAULT_SLACK, cfg.max_len - S)
    return max(0, min(wanted, room, wanted if cap is None else cap))


STEPS_ENV = "VIZ_MAX_STEPS"
DEFAULT_STEPS = 256  # the paper's base model at 148 tokens decodes to at most 198; every demo writes fewer than 60


def steps_from_environment() -> int:
    """$VIZ_MAX_STEPS (default 256): the server's cap on every decoding's steps (model.decoding.set_step_cap)."""
    try:
        steps = int(os.environ.get(STEPS_ENV, DEFAULT_STEPS))
    except ValueError:
        steps = DEFAULT_STEPS
    return steps if steps > 0 else DEFAULT_STEPS


def page_bytes(cfg, S: int, T: int | None = None) -> int:
    """One page run on a new input of S source tokens (T decoder tokens when a target is typed)."""
    steps = steps_for(cfg, S)
    T = steps + 1 if T is None else T
    return max(capture_bytes(cfg, S, T, qkv=True), decode_bytes(cfg, S, steps)) + figure_bytes(cfg, S, T)


def importance_row_bytes(cfg, S: int, T: int) -> int:
    """One row of head importance's batched passes: the pass, logits in float64 twice, no maps recorded."""
    return pass_bytes(cfg, S, T) + 2 * 8 * T * cfg.tgt_vocab_size + 2 * F32 * (S + T) * cfg.d_model


def _largest(fits, low: int, high: int) -> int:
    """The largest n in [low, high] with fits(n) (fits decreasing in n); low - 1 when none fits."""
    if high < low or not fits(low):
        return low - 1
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    return low


def budget_from_environment() -> int:
    """$VIZ_WORK_MB in bytes (default 256 MB); a value that is not a positive integer gives the default."""
    try:
        mb = int(os.environ.get(ENV, DEFAULT_MB))
    except ValueError:
        mb = DEFAULT_MB
    return (mb if mb > 0 else DEFAULT_MB) * 2**20


@dataclass(frozen=True)
class WorkBudget:
    """The most bytes one session's work may take; every question answered before any work starts."""

    max_bytes: int

    @classmethod
    def from_environment(cls) -> WorkBudget:
        return cls(budget_from_environment())

    def describe(self) -> str:
        return size_text(self.max_bytes)

    def source_room(self, cfg) -> int:
        """The most source tokens (</s> included) a page run may read: a new input's capture with Q, K, V, its
        greedy decoding to the step limit and its figures fit the budget. 0 when not even one token fits."""
        return _largest(lambda s: page_bytes(cfg, s) <= self.max_bytes, 1, cfg.max_len)

    def target_room(self, cfg, S: int) -> int:
        """The most decoder tokens (<s> included) a typed target may give beside S source tokens."""
        return _largest(lambda t: page_bytes(cfg, S, t) <= self.max_bytes, 1, cfg.max_len)

    def beam_room(self, cfg, S: int, steps: int) -> int:
        """The widest beam whose search over `steps` steps fits (0: not even a beam of 1)."""
        return _largest(lambda k: decode_bytes(cfg, S, steps, beams=k) <= self.max_bytes, 1, 4096)

    def importance_rows(self, cfg, S: int, T: int) -> int:
        """How many ablations one batched pass of head importance may hold (0: not even one)."""
        return max(0, self.max_bytes // max(1, importance_row_bytes(cfg, S, T)))

    def cut_notice(self, cfg, what: Message, n: int, room: int, kept: str) -> Message:
        """The warning when a text is cut to fit this budget (what was kept, and why)."""
        return M_(
            "The {what} has {n} tokens, but this model's attention ({heads} heads, {layers} layers: it grows with "
            "the square of the length) fits this server's work budget of {budget} for at most {room}: cut after "
            "“{kept}” ({dropped} tokens dropped).",
            what=what,
            n=n,
            heads=cfg.n_heads,
            layers=cfg.n_encoder_layers + cfg.n_decoder_layers,
            budget=self.describe(),
            room=room,
            kept=kept[-40:],
            dropped=n - room,
        )

    def refusal(self, what: Message, need: int, fits: Message) -> Message:
        """The error when a request does not fit this budget at all, saying what would fit."""
        return M_(
            "{what} would need about {need}, more than this server's work budget of {budget}; {fits}",
            what=what,
            need=size_text(need),
            budget=self.describe(),
            fits=fits,
        )


def fit_text(vocab, text: str, n: int) -> str:
    """The longest prefix of `text` that the vocabulary reads as at most n tokens of content (a <s> that a
    vocabulary puts in front not counted), cut where a space was when there is one: a prefix of what was typed."""

    def count(prefix: str) -> int:
        ids = vocab.encode(prefix)
        return len(ids) - (1 if getattr(vocab, "prepend_bos", False) and ids else 0)

    if count(text) <= n:
        return text
    end = _largest(lambda m: count(text[:m]) <= n, 0, len(text))
    kept = text[: max(end, 0)]
    space = kept.rfind(" ")
    return kept[:space].rstrip() if space > 0 and not text[len(kept) : len(kept) + 1].isspace() else kept.rstrip()


def _content_ids(vocab, text: str) -> list[int]:
    ids = vocab.encode(text)
    return ids[1:] if getattr(vocab, "prepend_bos", False) and ids else ids


def apply_budget(check, vocab, cfg, budget: WorkBudget, what: str = "input", source_tokens: int | None = None) -> None:
    """Cut a checked text (model.text.inputs.InputCheck) to what `budget` allows this model, in place: check.text
    becomes its longest prefix that fits and a warning says so; an error when not even one token fits.

    what: "input" (the source: room from source_room) or "target" (room from target_room beside
    `source_tokens` source tokens). Texts within the model's own max_len and the budget are left as they are."""
    if check.errors:
        return
    name = M_(WHAT.get(what, what))
    if what == "target":
        room = budget.target_room(cfg, source_tokens or 1) - 1  # <s> comes first
    else:
        room = budget.source_room(cfg) - 1  # </s> comes last
    if room < 1:
        check.errors.append(
            M_(
                "This model's attention ({heads} heads, {layers} layers) does not fit this server's work budget "
                "of {budget} even for one token.",
                heads=cfg.n_heads,
                layers=cfg.n_encoder_layers + cfg.n_decoder_layers,
                budget=budget.describe(),
            )
        )
        return
    if room >= cfg.max_len - 1:
        return  # the model's own max_len binds first: check_text has said what it cuts
    ids = _content_ids(vocab, check.text)
    if len(ids) <= room:
        return
    kept = fit_text(vocab, check.text, room)
    check.warnings[:] = [
        w for w in check.warnings if getattr(w, "template", None) != MAX_LEN_CUT
    ]  # one cut, named once
    check.warnings.append(budget.cut_notice(cfg, name, len(ids), room, kept))
    check.text = kept


def source_length(vocab, cfg, text: str) -> int:
    """Source tokens a text gives the model (</s> included, cut to max_len as model.inputs.prepare_source does)."""
    return min(len(vocab.encode(text)) + 1, cfg.max_len)


def beam_refusal(cfg, S: int, beam_size: int, budget: WorkBudget) -> Message | None:
    """None when a beam search of `beam_size` over S source tokens fits the budget, else what to say instead."""
    steps = steps_for(cfg, S)
    need = decode_bytes(cfg, S, steps, beams=beam_size)
    if need <= budget.max_bytes:
        return None
    room = budget.beam_room(cfg, S, steps)
    fits = M_("a beam of {k} fits this input.", k=room) if room >= 1 else M_("a shorter input is needed.")
    return budget.refusal(M_("A beam of {k} on this input", k=beam_size), need, fits)


def importance_batch(cfg, S: int, T: int, budget: WorkBudget, most: int) -> int:
    """Ablations per batched pass of head importance: at most `most`, as many as the budget allows (0: none)."""
    return min(most, budget.importance_rows(cfg, S, T))
