"""The work a visitor's input will cost, estimated from the model's shape and the input's length before any work
starts, and checked against a budget.

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
- `lazy_capture_bytes(cfg, S, T)`: a lazy capture (O(L·T·D) kept, one block of weights at a time, one map).
- `attention_page_bytes`, `compare_page_bytes`: what those pages really compute (ui.shell.navigation.COSTS names them).
- `backward_bytes(cfg, S, T, rows)` and `forward_ops(cfg, S, T)`: what autograd keeps, and the operations of a pass.
- `decoding_need(cfg, n, S, steps)`, `pack_need(cfg, lengths, weights)`: (bytes, operations) of the experiments'
  batched decoding of n examples, and of a lecture pack.
Each attribution method counts its own cost beside its computation (a `plan` in its module,
model/analysis/attribution_methods/), with the functions here.

Operations are a second limit ($VIZ_WORK_GOPS, default 1,000 billion a request: about 16 s of one core on a
GPT-2-sized model, DEFAULT_GOPS): `WorkBudget.admit(what, bytes, ops, fits)` returns a `Plan` or raises BudgetExceeded, a Message saying
which limit it passes (OVER_MEMORY, OVER_OPS) and what fits (a shorter input: `shorter_input`; fewer examples,
fewer inputs, fewer points), always before the work starts.

Time follows: with S bounded by the memory budget and every decoding capped at $VIZ_MAX_STEPS steps
(default 256; the server calls model.decoding.set_step_cap at start), the slowest page run any input can ask
for costs about what the paper's base model costs on an ordinary input (a model that never writes </s> with
max_len 16384 decoded 4,000 characters before: 4.5 GB and minutes).

`WorkBudget` holds the limit: $VIZ_WORK_MB, default 256 MB per session (one session runs one page at a time;
a laptop with 8 GB serves a room of 30 with room to spare, since ordinary inputs need a few MB). It answers:
`source_room(cfg)` the most source tokens a page may read, `target_room(cfg, S)` the most decoder tokens,
`beam_room(cfg, S, n)` the widest beam, `importance_rows(cfg, S, T)` the batch size, each at most the model's
own limit. A visitor's text is fitted to it in model/analysis/budget_input.py (`apply_budget`, `fit_text`).
Pure Python and arithmetic: no torch, nothing allocated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from i18n import M_, N_, Message

from ..checkpoints.safe_io import size_text
from ..decoding import DEFAULT_SLACK, step_cap
from ..env import positive_int

ENV = "VIZ_WORK_MB"
MAX_TEXT_CHARS = (
    20_000  # typed or linked text, per box: far more than any model here reads (tokenizing 5 MB took 8-17 s)
)
DEFAULT_MB = 256
F32 = 4  # bytes per recorded number


BUDGET_CUT = N_(
    "The {what} has {n} tokens, but this model's attention ({heads} heads, {layers} layers: it grows with "
    "the square of the length) fits this server's work budget of {budget} for at most {room}: cut after "
    "“{kept}” ({dropped} tokens dropped)."
)
BUDGET_CUT_LONG = N_(
    "The {what} has more than {n} tokens, but this model's attention ({heads} heads, {layers} layers: "
    "it grows with the square of the length) fits this server's work budget of {budget} for at most "
    "{room}: cut after “{kept}”."
)  # the text was longer than check_text counts (model.text.inputs.count_limit)


OVER_MEMORY = N_("{what} would need about {need}, more than this server's work budget of {budget}; {fits}")
OVER_OPS = N_(
    "{what} would need about {need} billion operations, more than this server's {ops} billion for one request; {fits}"
)


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


def pass_bytes(cfg, S: int, T: int, rows: int = 1, last_only: bool = False) -> int:
    """The transient peak of one forward pass of `rows` batch rows (nothing recorded): one layer's scores,
    softmax and mask at a time, the widest activations, the logits and their log-softmax (last_only: of the last
    position only, as a decoding step's prefill computes them)."""
    S, T = one_sequence(cfg, S, T)
    scores = cfg.n_heads * max(S * S, T * T, T * S) * 3
    activations = (S + T) * max(cfg.d_ff, 4 * cfg.d_model) * 2
    logits = (1 if last_only else T) * cfg.tgt_vocab_size * 3
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


def first_pass_maps(cfg, S: int) -> int:
    """Elements of the attention maps a recorded decoding holds after its first pass over the S source tokens, until
    the next step's record replaces them: every head's whole S x S map in each encoder layer (encoder-decoder), or in
    each decoder layer (decoder-only: the prompt is the decoder's first input). Measured in tests/test_hostile_files.py
    against the tensors the recorder holds."""
    layers = cfg.n_encoder_layers if cfg.has_encoder else cfg.n_decoder_layers
    return cfg.n_heads * layers * S * S


def decode_bytes(cfg, S: int, steps: int, beams: int = 1) -> int:
    """n recorded decoding steps (greedy or sampling: beams=1; beam search: beams hypotheses kept, 2x ranked): the
    rows every step records, the key/value cache of every hypothesis (self-attention over S + steps positions and
    the cross-attention's over S), one step's logits and activations, and the first pass's whole maps
    (first_pass_maps: a long prompt's S x S maps of every head and layer outweigh all the rows after them)."""
    kept = 1 if beams == 1 else 2 * beams
    rows = cfg.n_decoder_layers * cfg.n_heads * (steps * S + steps * (steps + 1) // 2)  # newest rows, every step
    cross = S if cfg.has_encoder and cfg.has_decoder else 0
    cache = beams * 2 * cfg.n_decoder_layers * (steps + S + cross) * cfg.d_model
    per_step = beams * (cfg.tgt_vocab_size * 3 + 4 * cfg.d_model + max(cfg.d_ff, 4 * cfg.d_model))
    first = 2 * first_pass_maps(cfg, S)  # the recorder's tensors and the pass's own
    return F32 * (2 * kept * rows + cache + per_step + first) + pass_bytes(cfg, S, 1)


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
    return positive_int(STEPS_ENV, DEFAULT_STEPS)


def page_bytes(cfg, S: int, T: int | None = None) -> int:
    """One page run on a new input of S source tokens (T decoder tokens when a target is typed)."""
    steps = steps_for(cfg, S)
    T = steps + 1 if T is None else T
    return max(capture_bytes(cfg, S, T, qkv=True), decode_bytes(cfg, S, steps)) + figure_bytes(cfg, S, T)


def greedy_bytes(cfg, S: int, steps: int) -> int:
    """The shared decode of an input (ui.serving.caches.own_output: fused, nothing recorded): the key/value cache of
    `steps` steps and one step's pass."""
    cache = 2 * cfg.n_decoder_layers * (steps + S) * cfg.d_model
    return F32 * cache + pass_bytes(cfg, S, 1, last_only=True)


THUMBNAIL_CELLS = 48  # viz.overview_figs.THUMBNAIL_CELLS: an overview thumbnail's most cells a side
CHART_CELLS = 256  # a chart's most cells a side: longer maps are pooled into blocks (LazyCapture.pooled)
WHOLE_VIEW_TOKENS = 256  # up to this length a view may draw every map of a kind whole (bertviz's model view)
BLOCK_BYTES = F32 * 2**21  # one block of a lazy capture's weights or logits (lazy_capture.BLOCK_NUMBERS)
BIAS_BLOCK_BYTES = F32 * 2**22  # one block of a fused pass's scores with a bias (attention.BIAS_BLOCK_NUMBERS)


def lazy_capture_bytes(cfg, S: int, T: int, qkv: bool = False) -> int:
    """A lazy capture (capture(..., lazy=True), model/analysis/lazy_capture.py): what it keeps, O(L·T·D), and the
    peak of its fused pass, never O(L·H·T²). Kept: every attention module's queries (H heads) and keys (H_kv key
    heads) after RoPE, the final hidden states, the positional rows and embeddings, each position's top tokens.
    The pass: the widest activations, the boolean mask (a byte a cell), the fused attention's scores of one block
    of rows (a bias's block, or the kernel's own), one block of logits; then one block of weights at a time for a
    map, its summary or its pooling, and one whole map of a head (Tq x Tk) for the view that asks for it.
    qkv=True: the eager capture's Q, K, V and head outputs as well (capture_bytes counts them)."""
    S, T = one_sequence(cfg, S, T)
    width, kv_width = cfg.attention_width, cfg.kv_heads * cfg.d_head  # a token's queries; its keys
    cross = cfg.has_encoder and cfg.has_decoder
    kept = cfg.n_encoder_layers * S * (width + kv_width)
    kept += cfg.n_decoder_layers * (T * (width + kv_width) + ((T * width + S * kv_width) if cross else 0))
    kept += 6 * (S + T) * cfg.d_model + 3 * (S + T) * 8  # hidden states, rows, embeddings; top tokens
    activations = (S + T) * max(cfg.d_ff, 4 * cfg.d_model) * 2
    mask = max(S * S, T * T, T * S) // F32  # booleans, in float32 numbers
    logits = 2 * F32 * max(2**21, 128 * cfg.tgt_vocab_size)  # a block of at least 128 positions (OUTPUT_ROWS), twice
    held = F32 * (kept + activations + mask + max(S * S, T * T, T * S)) + BIAS_BLOCK_BYTES + 2 * BLOCK_BYTES + logits
    if qkv:
        held += capture_bytes(cfg, S, T, qkv=True) - capture_bytes(cfg, S, T)
    return held


def attention_view_bytes(cfg, S: int, T: int) -> int:
    """The largest of the Attention page's views, one at a time: all heads of one layer (24 bytes a number, as
    figure_bytes) each pooled to at most 256 x 256 cells, every layer and head as thumbnails of at most 48 x 48
    cells, or (up to 256 tokens) bertviz's model view of one kind (weights written as whole thousandths: about 4
    bytes, held three times: 12). A decoder-only model's views draw its one sequence, prompt and continuation
    (one_sequence)."""
    S, T = one_sequence(cfg, S, T)
    qk = max(S * S, T * T, T * S)
    layers = max(cfg.n_encoder_layers, cfg.n_decoder_layers)
    grid = 24 * cfg.n_heads * min(qk, CHART_CELLS**2)
    overview = 24 * layers * cfg.n_heads * min(qk, THUMBNAIL_CELLS**2)
    one_kind = 0
    if max(S, T) <= WHOLE_VIEW_TOKENS:
        one_kind = cfg.n_heads * max(cfg.n_encoder_layers * S * S, cfg.n_decoder_layers * max(T * T, T * S))
    return max(grid, overview, 12 * one_kind)


def attention_page_bytes(cfg, S: int, T: int | None = None) -> int:
    """The Attention page on a new input: the shared decode, one lazy capture of its output (no Q, K, V: that
    page does not show them; every map computed when a view asks) and its largest view."""
    steps = steps_for(cfg, S)
    T = steps + 1 if T is None else T
    return max(lazy_capture_bytes(cfg, S, T), greedy_bytes(cfg, S, steps)) + attention_view_bytes(cfg, S, T)


def attention_page_ops(cfg, S: int, T: int | None = None) -> int:
    """The Attention page's operations on a new input: the shared decode (at most one pass over the prompt and its
    steps) and the lazy capture's pass. A long input of a larger model costs minutes on a CPU: the default limit
    of operations refuses it, an operator who raises it (and the worker's deadline) lets it run in the worker."""
    steps = steps_for(cfg, S)
    T = steps + 1 if T is None else T
    return forward_ops(cfg, S, steps + 1) + forward_ops(cfg, S, T)


def compare_view_bytes(cfg, S: int, T: int) -> int:
    """The Compare page's figures: three maps of one layer and head (A, B, A - B), 24 bytes a number."""
    return 3 * 24 * max(S * S, T * T, T * S)


def compare_page_bytes(cfg, S: int, T: int | None = None) -> int:
    """The Compare page on a new input, counted for one model as if the other were its twin: each side's shared
    decode and one recorded pass (no Q, K, V) and the three maps, twice. Both sides are cut by it (the sidebar for
    A, pages/compare.py for B), so that the two together fit the budget whichever is larger."""
    steps = steps_for(cfg, S)
    T = steps + 1 if T is None else T
    return 2 * (max(capture_bytes(cfg, S, T), greedy_bytes(cfg, S, steps)) + compare_view_bytes(cfg, S, T))


def backward_bytes(cfg, S: int, T: int, rows: int = 1) -> int:
    """What autograd keeps for one backward pass of `rows` rows through the encoder (S tokens) and the decoder (T
    inputs), from the embeddings to the log-probabilities: per layer the inputs of every linear map, norm and
    activation (12 x d_model and 2 x d_ff a token for a block; 18 x d_model and 2 x d_ff for a decoder block,
    its cross-attention included), the attention probabilities, their softmax input and dropout mask (3 per
    score), the logits and their log-softmax (3 per logit); and the gradient of the input embeddings.
    tests/test_budget.py measures what autograd really saves (saved_tensors_hooks) against it.
    A decoder-only model runs its prompt (S) and continuation (T) as one sequence; an encoder-only model's output
    head predicts at each of its S positions."""
    d, f, H = cfg.d_model, max(cfg.d_ff, 4 * cfg.d_model), cfg.n_heads
    predicted = T + S if not cfg.has_encoder else (T if cfg.has_decoder else S)  # rows of logits
    S, T = one_sequence(cfg, S, T)
    enc = cfg.n_encoder_layers * (S * (12 * d + 2 * f) + 3 * H * S * S)
    dec = cfg.n_decoder_layers * (T * (18 * d + 2 * f) + 3 * H * (T * T + T * S))
    ends = 3 * predicted * cfg.tgt_vocab_size + 4 * (S if cfg.has_encoder else T) * d
    return rows * F32 * (enc + dec + ends)


def forward_ops(cfg, S: int, T: int) -> int:
    """Multiply-adds x 2 of one row's forward pass: every projection, feed-forward and the generator, and the
    attention scores and weighted sums (a decoder-only model: its one sequence; an encoder-only one: its head over
    every position)."""
    predicted = T + S if not cfg.has_encoder else (T if cfg.has_decoder else S)
    S, T = one_sequence(cfg, S, T)
    d, f, H = cfg.d_model, cfg.d_ff, cfg.n_heads
    enc = cfg.n_encoder_layers * (S * (4 * d * d + 2 * d * f) + 2 * S * S * d)
    dec = cfg.n_decoder_layers * (T * (8 * d * d + 2 * d * f) + 2 * (T * T + T * S) * d)
    head = predicted * d * cfg.tgt_vocab_size
    del H  # the scores' cost does not depend on how d is split into heads
    return 2 * (enc + dec + head)


OPS_ENV = "VIZ_WORK_GOPS"
# operations one request may cost: about 16 s of one core of a 2-core laptop on a GPT-2-sized model's matrix
# products (~60 GFLOP/s, benchmarks/bench_long), more for a small model's many small ones (the worker's deadline
# stops those); GPT-2 small's Attention page at its full 1,024 tokens (the continuation's decode and the capture's
# pass, 701 billion) fits, a SmolLM-135M at 8,192 tokens (14,556 billion) does not
DEFAULT_GOPS = 1000


def ops_from_environment() -> int:
    """$VIZ_WORK_GOPS x 10^9 (default 1,000): the operations one request may cost; not a positive integer: default."""
    return positive_int(OPS_ENV, DEFAULT_GOPS) * 10**9


@dataclass(frozen=True)
class Plan:
    """What one computation may do within the budget, counted before it starts (each attribution method's `plan`,
    model/analysis/attribution_methods/): its peak bytes and operations in the worst case within these limits, and
    for the batched and adaptive ones how far they may go."""

    rows: int = 1  # rows (path points, ablations) of one batched pass
    pieces: int = 0  # integrated gradients: pieces of the path in all, T at least (one a row: no halving)
    ops: int = 0  # the operations of the worst case within these limits
    bytes: int = 0  # the peak memory of one pass within these limits


def shorter_input(S: int, T: int, fits) -> Message:
    """What fits when a computation over S source and T output tokens does not: the longest input n < S with
    fits(n, t) for t = T n / S output tokens (the output taken to shrink with the input, as the demos' do)."""
    n = largest(lambda k: fits(k, max(1, -(-T * k // max(S, 1)))), 1, S - 1)
    return M_("an input of at most {n} tokens fits.", n=n) if n >= 1 else M_("a shorter input is needed.")


def admit_input(budget: WorkBudget, what: Message, need, S: int, T: int) -> Plan:
    """budget.admit of need(S, T) = (bytes, operations) of a computation over S source and T output tokens; what
    fits when it does not: a shorter input (shorter_input)."""
    return budget.admit(what, *need(S, T), lambda: shorter_input(S, T, lambda s, t: budget.fits(*need(s, t))))


def input_plan(what: Message, need):
    """The `plan(cfg, S, T, settings, budget)` of a computation with a fixed cost need(cfg, S, T) = (bytes,
    operations): admit_input, refused with a shorter input that fits (the attribution methods without settings)."""
    return lambda cfg, S, T, settings, budget: admit_input(budget, what, lambda s, t: need(cfg, s, t), S, T)


def gradient_rows(cfg, S: int, T: int, budget: WorkBudget) -> int:
    """How many rows one backward pass may hold within the budget (what autograd keeps: backward_bytes);
    BudgetExceeded saying what fits when not even one does."""
    admit_input(budget, M_("A gradient through this model"), lambda s, t: (backward_bytes(cfg, s, t), 0), S, T)
    return int(budget.max_bytes // max(1, backward_bytes(cfg, S, T)))


def decoding_need(cfg, n: int, S: int, steps: int, batch: int = 240) -> tuple[int, int]:
    """(bytes, operations) of greedy decoding n examples of at most S source tokens for at most `steps` steps,
    `batch` rows at a time (the experiments' batched decoding, model.decoding.greedy_ids): each example costs about
    one pass over its source and `steps` decoder positions; a batch holds its key/value caches and one step's
    logits."""
    rows = max(1, min(n, batch))
    held = rows * (greedy_bytes(cfg, S, steps) + F32 * 3 * cfg.tgt_vocab_size)
    return held, n * forward_ops(cfg, S, steps)


STEP_OPS = 10**7  # the least one decoder layer's step costs, in operations: ~1 ms of its ~20 small calls' overhead


def decode_ops(cfg, S: int, steps: int, rows: int = 1) -> int:
    """Operations of decoding one input of S source tokens for `steps` steps with `rows` hypotheses at once (a
    beam's width): the arithmetic, and each step's fixed cost per decoder layer (STEP_OPS), which a small model's
    step by step decoding spends most of its time in (563 steps of a 2-layer d_model 128 model: 1.6 billion
    operations of arithmetic, 1.5 CPU s)."""
    return decoding_need(cfg, rows, S, steps)[1] + steps * cfg.n_decoder_layers * STEP_OPS


def admit_examples(cfg, what: Message, n: int, S: int, steps: int, budget: WorkBudget) -> Plan:
    """The Plan of greedy decoding n examples (decoding_need), or BudgetExceeded saying how many examples fit."""

    def fits() -> Message:
        k = largest(lambda m: budget.fits(*decoding_need(cfg, m, S, steps)), 1, n - 1)
        return M_("{n} examples fit.", n=k) if k >= 1 else M_("a shorter input is needed.")

    return budget.admit(what, *decoding_need(cfg, n, S, steps), fits)


def importance_row_bytes(cfg, S: int, T: int) -> int:
    """One row of head importance's batched passes: the pass, logits in float64 twice, no maps recorded."""
    return pass_bytes(cfg, S, T) + 2 * 8 * T * cfg.tgt_vocab_size + 2 * F32 * (S + T) * cfg.d_model


def largest(fits, low: int, high: int) -> int:
    """The largest n in [low, high] with fits(n) (fits decreasing in n); low - 1 when none fits."""
    if high < low or not fits(low):
        return low - 1
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    return low


def budget_from_environment() -> int:
    """$VIZ_WORK_MB in bytes (default 256 MB); a value that is not a positive integer gives the default."""
    return positive_int(ENV, DEFAULT_MB) * 2**20


@dataclass(frozen=True)
class WorkBudget:
    """The most bytes one session's work may take; every question answered before any work starts."""

    max_bytes: int
    max_ops: int | None = None  # operations one request may cost; None: $VIZ_WORK_GOPS (ops_from_environment)

    @classmethod
    def from_environment(cls) -> WorkBudget:
        return cls(budget_from_environment(), ops_from_environment())

    @property
    def ops(self) -> int:
        return ops_from_environment() if self.max_ops is None else self.max_ops

    def fits(self, need_bytes: int, need_ops: int) -> bool:
        return need_bytes <= self.max_bytes and need_ops <= self.ops

    def admit(self, what: Message, need_bytes: int, need_ops: int, fits: Callable[[], Message]) -> Plan:
        """A Plan of this need when it fits both limits; else BudgetExceeded naming the limit it passes and what
        fits (fits() is asked only then)."""
        if need_bytes > self.max_bytes:
            raise BudgetExceeded(self.refusal(what, need_bytes, fits()))
        if need_ops > self.ops:
            over = M_(OVER_OPS, what=what, need=-(-need_ops // 10**9), ops=self.ops // 10**9, fits=fits())
            raise BudgetExceeded(over)
        return Plan(ops=int(need_ops), bytes=int(need_bytes))

    def describe(self) -> str:
        return size_text(self.max_bytes)

    def source_room(self, cfg, cost=None) -> int:
        """The most source tokens (</s> included) a page run may read: cost(cfg, S) of the page (default
        page_bytes: a new input's capture with Q, K, V, its greedy decoding to the step limit and the figures of
        every map) fits the budget. 0 when not even one token fits."""
        cost = cost or page_bytes
        return largest(lambda s: cost(cfg, s) <= self.max_bytes, 1, cfg.max_len)

    def target_room(self, cfg, S: int, cost=None) -> int:
        """The most decoder tokens (<s> included) a typed target may give beside S source tokens."""
        cost = cost or page_bytes
        return largest(lambda t: cost(cfg, S, t) <= self.max_bytes, 1, cfg.max_len)

    def beam_room(self, cfg, S: int, steps: int) -> int:
        """The widest beam whose search over `steps` steps fits (0: not even a beam of 1)."""
        return largest(lambda k: decode_bytes(cfg, S, steps, beams=k) <= self.max_bytes, 1, 4096)

    def importance_rows(self, cfg, S: int, T: int) -> int:
        """How many ablations one batched pass of head importance may hold (0: not even one)."""
        return max(0, self.max_bytes // max(1, importance_row_bytes(cfg, S, T)))

    def cut_notice(self, cfg, what: Message, n: int, room: int, kept: str, complete: bool = True) -> Message:
        """The warning when a text is cut to fit this budget (what was kept, and why); complete=False: the text
        was longer than what was counted (n is a lower bound)."""
        return M_(
            BUDGET_CUT if complete else BUDGET_CUT_LONG,
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
            OVER_MEMORY,
            what=what,
            need=size_text(need),
            budget=self.describe(),
            fits=fits,
        )


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
