"""Configuration of the encoder-decoder Transformer ("Attention Is All You Need", Vaswani et al. 2017).

One dataclass describes every model this project builds or imports; the variants that public
implementations differ in (post-LN vs pre-LN, learned vs sinusoidal positions, tied embeddings, ...)
are fields here, not forks of the model code.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from i18n import M_, N_, NM_, join_messages

from ..env import narrowest_bytes, parameter_limit
from .position_kinds.registry import MODULES as POSITIONAL_KINDS

# POSITIONAL_KINDS: the registry's kinds (model/network/position_kinds/: one module each, its factory and titles)
PE_LAYOUTS = ("interleaved", "half")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu")
NORM_KINDS = ("layernorm", "std", "rms", "rms_plus_one")
# where a block's norms sit beside norm_first's pre-/post-LN: "sandwich" (a norm before each sublayer and one on its
# output before the residual add: Gemma 2/3), "output" (only the one on the sublayer's output: OLMo 2)
BLOCK_NORMS = ("default", "sandwich", "output")
QK_NORMS = ("none", "head", "all")  # an RMS norm on each head's q and k (Gemma 3, Qwen3), on the whole q and k (OLMo 2)
LAYER_KINDS = ("global", "local")  # every earlier key, or the sliding window's (Mistral, Gemma 2/3, Phi-3)
# The three shapes of the one model: both stacks (the paper), the decoder alone (GPT-2, Llama, Qwen2: no encoder,
# no cross-attention, the whole sequence in the decoder) or the encoder alone (BERT).
SHAPES = ("encoder-decoder", "decoder-only", "encoder-only")
# What turns the last hidden states into logits: a linear layer (the generator), BERT's masked-LM head
# (dense -> activation -> norm -> linear), or nothing (BertModel: hidden states only).
OUTPUT_HEADS = ("linear", "mlm", "none")

# What a config may ask for before anything is allocated: the paper's big model (d_model 1024, 16 heads,
# d_ff 4096, 6+6 layers, 37k-64k vocabularies, positions in the thousands) fits with room to spare;
# d_model 65536 or max_len 10**9 (tens of GB to hundreds of TB) do not.
LIMITS: dict[str, int] = {
    "d_model": 4096,
    "n_heads": 128,
    "d_ff": 32768,
    "layers": 48,  # on each side
    "vocab": 262144,  # tokens on each side
    "max_len": 16384,
    "attention_width": 32768,  # n_heads * head_dim (T5 sets the head width apart from d_model)
    "relative_buckets": 1024,
    "parameters": 0,  # weights plus positional tables: from this machine's memory (model/env.parameter_limit), below
}

LIMITS["parameters"] = parameter_limit(narrowest_bytes())  # a float32 model: its loader counts 4 bytes a number


@dataclass
class TransformerConfig:
    src_vocab_size: int  # tokens in the source vocabulary (specials included)
    tgt_vocab_size: int  # tokens in the target vocabulary (specials included)
    d_model: int = 512  # width of every residual stream
    n_heads: int = 8  # attention heads per layer; d_model must divide evenly
    d_ff: int = 2048  # hidden width of the position-wise feed-forward network
    n_encoder_layers: int = 6
    n_decoder_layers: int = 6
    dropout: float = 0.1  # on sublayer outputs, attention weights and embeddings+PE (training only)
    norm_first: bool = False  # False: post-LN as in the paper, LayerNorm(x + Sublayer(x)); True: pre-LN
    final_norm: bool | None = None  # a LayerNorm after each stack; None means "same as norm_first"
    # "sinusoidal" (fixed, paper), "learned" (an embedding table), "none" (no positions), or inside self-attention:
    # "rope" (Su et al. 2021: q and k rotated by position), "alibi" (Press et al. 2022: -slope_h * |i - j| on the
    # scores), "relative" (T5: a learned bias per head and bucketed distance, one table per stack)
    positional: str = "sinusoidal"
    pe_base: float = 10000.0  # the base of the sinusoid wavelengths, and of RoPE's frequencies base^(-2i/d_head)
    # "interleaved": sin on even dims, cos on odd (RoPE: adjacent pairs (2i, 2i+1) rotate, as Su et al.);
    # "half": sin block, cos block (RoPE: dims i and i + d_head/2 rotate, "rotate_half" of GPT-NeoX / LLaMA)
    pe_layout: str = "interleaved"
    relative_buckets: int = 32  # positional="relative": buckets of T5's bias (half per direction in the encoder)
    relative_max_distance: int = 128  # positional="relative": distances from here on share the last bucket
    max_len: int = 512  # longest sequence the positional encoding covers, on each side
    share_embeddings: bool = False  # one embedding table for source and target (needs equal vocab sizes)
    tie_generator: bool = False  # the output projection reuses the target embedding matrix (paper: yes)
    generator_bias: bool = True  # a bias on the output projection
    scale_embeddings: bool = True  # multiply token embeddings by sqrt(d_model) before adding PE (paper: yes)
    activation: str = "relu"  # feed-forward nonlinearity: "relu" (paper), "gelu", "gelu_tanh" (T5 v1.1) or "silu"
    norm: str = "layernorm"  # "layernorm": torch LayerNorm; "std": a_2*(x-mean)/(std_unbiased+eps)+b_2;
    # "rms": weight * x / sqrt(mean(x^2) + eps), no mean and no bias (T5)
    layer_norm_eps: float = 1e-5
    pad_id: int = 0  # id of <pad> on both sides: padded keys get zero attention weight
    bos_id: int = 1  # the decoder's first input token
    eos_id: int = 2  # generation stops after this token
    head_dim: int | None = None  # width of one head's q/k/v; None: d_model // n_heads (T5 sets it apart: d_kv)
    bias: bool = True  # biases on the attention projections and the feed-forward layers (T5: none)
    ff_gated: bool = False  # FFN(x) = W2 (act(W1 x) * W3 x), a gated feed-forward (T5 v1.1 / flan-T5)
    feed_forward: bool = True  # False: attention-only layers, no feed-forward sublayer nor its norm (d_ff unused)
    scale_scores: bool = True  # divide q.k by sqrt(d_head) (paper: yes; T5: no, its init absorbs it)
    rescale_output: bool = False  # multiply the decoder output by d_model^-0.5 before the generator (T5 v1.0)
    embed_norm: bool = False  # a norm on embeddings + positions, before the first layer (BART, mBART)
    forced_bos_id: int | None = None  # decoding's first output token is forced to this id (BART <s>, mBART lang)
    # "encoder-decoder" (the paper), "decoder-only" (n_encoder_layers 0: one sequence through the decoder, no
    # cross-attention) or "encoder-only" (n_decoder_layers 0). The stack a shape lacks is not built at all.
    shape: str = "encoder-decoder"
    # key/value heads of every attention (grouped-query attention, Llama 2/3, Qwen2); None: n_heads. Query head h
    # reads key/value head h // (n_heads / n_kv_heads) (see kv_head_of).
    n_kv_heads: int | None = None
    qkv_bias: bool | None = None  # biases on q, k, v only; None: as `bias` (Qwen2: q/k/v yes, output and FFN no)
    rope_dim: int | None = None  # positional="rope": the first rope_dim dims of each head rotate (partial RoPE)
    type_vocab_size: int = 0  # BERT's token-type table; row 0 (segment A) is added to every token's embedding
    output_head: str = "linear"  # "linear" (the generator), "mlm" (BERT: dense, act, norm, then it) or "none"
    # Sliding-window attention: a query at position i of a "local" layer sees the keys j with i - j < sliding_window
    # (transformers' convention; the causal mask still hides j > i)
    sliding_window: int | None = None
    # the kind of each layer of each stack, "global" or "local" (LAYER_KINDS); None: every layer local when
    # sliding_window is set (Mistral, Phi-3), else global. Gemma 2: local, global, ...; Gemma 3: 5 local, 1 global
    layer_types: list[str] | None = None
    local_pe_base: float | None = None  # RoPE base of the local layers (Gemma 3's rope_local_base_freq); None: pe_base
    attn_softcap: float | None = None  # scores -> c * tanh(scores / c) before the mask and softmax (Gemma 2)
    final_softcap: float | None = None  # logits -> c * tanh(logits / c) (Gemma 2 and 3)
    query_scale: float | None = None  # q.k scaled by query_scale^-1/2 instead of d_head^-1/2 (query_pre_attn_scalar)
    scale_by_layer: bool = False  # layer i's self-attention: q.k also divided by i + 1 (GPT-2's inverse_layer_idx)
    qk_norm: str = "none"  # QK_NORMS: "head" per head over d_head (Gemma 3, Qwen3), "all" over n_heads*d_head (OLMo 2)
    block_norms: str = "default"  # BLOCK_NORMS; "rms_plus_one" norms read their weight as 1 + w (Gemma)
    extra: dict[str, Any] = field(default_factory=dict)  # free-form notes (e.g. where an import came from)

    def __post_init__(self) -> None:
        """Check types, then each field against LIMITS and its allowed values, then the relations between fields
        (only once every field is valid alone): all before any tensor is built.

        Messages name the field and the limit; string values from a file are never echoed (i18n Messages)."""
        types = _type_problems(self)
        if types:
            raise ValueError(_invalid(types))
        problems = limit_problems(self)  # each field alone: its range or its allowed values
        for name, allowed in (
            ("positional", POSITIONAL_KINDS),
            ("pe_layout", PE_LAYOUTS),
            ("activation", ACTIVATIONS),
            ("norm", NORM_KINDS),
            ("shape", SHAPES),
            ("output_head", OUTPUT_HEADS),
            ("qk_norm", QK_NORMS),
            ("block_norms", BLOCK_NORMS),
        ):
            if getattr(self, name) not in allowed:
                problems.append(M_("{name} is not one of {allowed}", name=name, allowed=", ".join(allowed)))
        if not (self.pe_base > 1 and math.isfinite(self.pe_base)):
            problems.append(M_("pe_base must be a finite number above 1"))
        for name in ("local_pe_base", "attn_softcap", "final_softcap", "query_scale"):
            value = getattr(self, name)
            if value is not None and not (value > 0 and math.isfinite(value)):
                problems.append(M_("{name} must be a finite number above 0", name=name))
        if self.local_pe_base is not None and self.local_pe_base <= 1:
            problems.append(M_("{name} must be a finite number above 1", name="local_pe_base"))
        if self.sliding_window is not None and self.sliding_window < 1:
            problems.append(
                M_("{name} is {value}; it must be at least 1", name="sliding_window", value=self.sliding_window)
            )
        if self.layer_types is not None and any(t not in LAYER_KINDS for t in self.layer_types):
            problems.append(M_("{name} is not one of {allowed}", name="layer_types", allowed=", ".join(LAYER_KINDS)))
        if not (0 <= self.dropout < 1):
            problems.append(M_("dropout must lie in [0, 1)"))
        if not (0 < self.layer_norm_eps < 1):
            problems.append(M_("layer_norm_eps must lie in (0, 1)"))
        for name in ("pad_id", "bos_id", "eos_id", "forced_bos_id"):
            if (value := getattr(self, name)) is not None and value < 0:
                problems.append(M_("{name} is {value}; it must be at least 0", name=name, value=value))
        if problems:  # relations only between fields that are each valid (no division by a zero n_heads)
            raise ValueError(_invalid(problems))
        if self.n_heads % self.kv_heads:
            problems.append(M_("n_heads={h} is not a multiple of n_kv_heads={kv}", h=self.n_heads, kv=self.kv_heads))
        if self.rope_dim is not None and (self.rope_dim % 2 or self.rope_dim > self.d_head):
            problems.append(M_("rope_dim must be even and at most the head width {d}", d=self.d_head))
        if self.head_dim is None and self.d_model % self.n_heads:
            problems.append(M_("d_model={d} is not divisible by n_heads={h}", d=self.d_model, h=self.n_heads))
        stacks = [
            n
            for n, present in ((self.n_encoder_layers, self.has_encoder), (self.n_decoder_layers, self.has_decoder))
            if present
        ]
        if self.layer_types is not None and any(len(self.layer_types) != n for n in stacks):
            problems.append(M_("layer_types must name one kind per layer of each stack"))
        if self.sliding_window is not None and self.shape != "decoder-only":
            problems.append(M_("sliding_window needs a decoder-only model"))
        if "local" in self.kinds and self.sliding_window is None:
            problems.append(M_("a local layer needs sliding_window"))
        if self.block_norms != "default" and not self.norm_first:
            problems.append(M_("block_norms={kind} needs norm_first", kind=self.block_norms))
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            problems.append(
                M_(
                    "share_embeddings needs equal vocabularies, got {src} and {tgt}",
                    src=self.src_vocab_size,
                    tgt=self.tgt_vocab_size,
                )
            )
        if self.d_model % 2:
            problems.append(M_("d_model={d} must be even for sinusoidal positions", d=self.d_model))
        if self.positional == "rope" and self.d_head % 2:
            problems.append(M_("d_model / n_heads = {d} must be even for rotary positions", d=self.d_head))
        if self.positional == "relative":
            if self.relative_buckets < 4:
                problems.append(M_("relative_buckets must be at least 4, got {n}", n=self.relative_buckets))
            elif self.relative_max_distance <= self.relative_buckets // 2:
                problems.append(
                    M_(
                        "relative_max_distance must be above relative_buckets / 2 = {n}",
                        n=self.relative_buckets // 2,
                    )
                )
        for name in ("pad_id", "bos_id", "eos_id", "forced_bos_id"):
            value = getattr(self, name)
            if value is not None and value >= min(self.src_vocab_size, self.tgt_vocab_size):
                problems.append(M_("{name}={value} is outside the vocabulary", name=name, value=value))
        if problems:
            raise ValueError(_invalid(problems))

    @property
    def d_head(self) -> int:
        """Width of one head's queries, keys and values (d_k = d_v in the paper)."""
        return self.d_model // self.n_heads if self.head_dim is None else self.head_dim

    @property
    def kinds(self) -> list[str]:
        """The kind of each layer ("global" or "local"), as layer_types says or as sliding_window implies."""
        if self.layer_types is not None:
            return list(self.layer_types)
        n = max(self.n_encoder_layers if self.has_encoder else 0, self.n_decoder_layers if self.has_decoder else 0)
        return ["local" if self.sliding_window is not None else "global"] * n

    def layer_kind(self, layer: int) -> str:
        """ "local" (the sliding window) or "global" (every earlier key) for layer `layer` of a stack."""
        kinds = self.kinds
        return kinds[layer] if layer < len(kinds) else "global"

    def score_scale(self, layer: int | None = None) -> bool | float:
        """What q.k is multiplied by in an attention of layer `layer` (None: cross-attention): True (1/sqrt(d_head)),
        False (1: T5) or a number (Gemma's query_pre_attn_scalar^-1/2; GPT-2's scale_attn_by_inverse_layer_idx
        divides a layer's by its number + 1)."""
        scale = self.query_scale**-0.5 if self.query_scale is not None else self.scale_scores
        if not self.scale_by_layer or layer is None:
            return scale
        return (self.d_head**-0.5 if scale is True else 1.0 if scale is False else scale) / (layer + 1)

    def window_of(self, layer: int) -> int | None:
        """The sliding window of layer `layer` (None: a global layer sees every key the mask allows)."""
        return self.sliding_window if self.layer_kind(layer) == "local" else None

    @property
    def kv_heads(self) -> int:
        """Key/value heads per attention (n_heads unless grouped-query attention)."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    def kv_head_of(self, head: int) -> int:
        """The key/value head that query head `head` reads (each group of n_heads / kv_heads query heads shares one)."""
        return head // (self.n_heads // self.kv_heads)

    @property
    def has_encoder(self) -> bool:
        return self.shape != "decoder-only"

    @property
    def has_decoder(self) -> bool:
        return self.shape != "encoder-only"

    @property
    def attention_kinds(self) -> tuple[str, ...]:
        """The attention this shape records: encoder_self, decoder_self and cross (encoder-decoder), decoder_self
        (decoder-only) or encoder_self (encoder-only), in the order of recording.ATTENTION_KINDS."""
        kinds = {"encoder_self": self.has_encoder, "decoder_self": self.has_decoder}
        kinds["cross"] = self.has_encoder and self.has_decoder
        return tuple(k for k, present in kinds.items() if present)

    @property
    def attention_width(self) -> int:
        """n_heads * d_head: the width of the concatenated heads (d_model in the paper)."""
        return self.n_heads * self.d_head

    @property
    def has_final_norm(self) -> bool:
        return self.norm_first if self.final_norm is None else self.final_norm

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TransformerConfig:
        """Build from a dict (a parsed config.json); unknown fields are counted, never named (they are file contents)."""
        if not isinstance(data, dict):
            raise ValueError(M_("a TransformerConfig must be a JSON object of fields"))
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = [k for k in data if k not in known]
        if unknown:
            n = len(unknown)
            raise ValueError(
                NM_(
                    "the config has {n} field this project does not know (not named here)",
                    "the config has {n} fields this project does not know (not named here)",
                    n,
                )
            )
        missing = [n for n in ("src_vocab_size", "tgt_vocab_size") if n not in data]
        if missing:
            raise ValueError(M_("TransformerConfig is missing required fields: {fields}", fields=", ".join(missing)))
        return cls(**data)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> TransformerConfig:
        """A named architecture from PRESETS; vocabulary sizes (and anything else) as keywords."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})


_INTS = (
    "src_vocab_size",
    "tgt_vocab_size",
    "d_model",
    "n_heads",
    "d_ff",
    "n_encoder_layers",
    "n_decoder_layers",
    "max_len",
    "relative_buckets",
    "relative_max_distance",
    "pad_id",
    "bos_id",
    "eos_id",
    "type_vocab_size",
)
_REALS = ("dropout", "pe_base", "layer_norm_eps")
_OPTIONAL_REALS = ("local_pe_base", "attn_softcap", "final_softcap", "query_scale")
_BOOLS = (
    "norm_first",
    "share_embeddings",
    "tie_generator",
    "generator_bias",
    "scale_embeddings",
    "bias",
    "ff_gated",
    "feed_forward",
    "scale_scores",
    "scale_by_layer",
    "rescale_output",
    "embed_norm",
)
_OPTIONAL_INTS = ("head_dim", "forced_bos_id", "n_kv_heads", "rope_dim", "sliding_window")
_STRINGS = ("positional", "pe_layout", "activation", "norm", "shape", "output_head", "qk_norm", "block_norms")


def _invalid(problems: list) -> str:
    """ValueError's message for a config with these problems (i18n Messages)."""
    return M_("invalid TransformerConfig: {problems}", problems=join_messages("; ", problems))


_KINDS = {  # JSON types, as the messages name them
    bool: N_("true/false"),
    int: N_("an integer"),
    float: N_("a number with a fraction"),
    str: N_("text"),
    list: N_("a list"),
    dict: N_("an object"),
    type(None): "null",
}


# (fields, what their values must be, the message naming a field whose value is not)
_TYPE_RULES = (
    (_INTS, lambda v: type(v) is int, N_("{name} must be an integer, not {kind}")),
    (_REALS, lambda v: type(v) in (int, float), N_("{name} must be a number, not {kind}")),
    (_BOOLS, lambda v: type(v) is bool, N_("{name} must be true or false, not {kind}")),
    (_STRINGS, lambda v: type(v) is str, N_("{name} must be text, not {kind}")),
    (_OPTIONAL_INTS, lambda v: v is None or type(v) is int, N_("{name} must be an integer or null, not {kind}")),
    (
        _OPTIONAL_REALS,
        lambda v: v is None or type(v) in (int, float),
        N_("{name} must be a number or null, not {kind}"),
    ),
)


def _type_problems(c: TransformerConfig) -> list[str]:
    """Fields of the wrong JSON type (a float d_model, true for a layer count, ...), named with the type found."""

    def kind(v: Any) -> str:
        return M_(_KINDS[type(v)]) if type(v) in _KINDS else type(v).__name__

    problems = [M_(template, name=n, kind=kind(getattr(c, n)))
                for names, ok, template in _TYPE_RULES for n in names if not ok(getattr(c, n))]  # fmt: skip
    types = c.layer_types
    if types is not None and not (isinstance(types, list) and all(type(t) is str for t in types)):
        problems.append(M_("{name} must be a list of text or null, not {kind}", name="layer_types", kind=kind(types)))
    if c.qkv_bias is not None and type(c.qkv_bias) is not bool:
        problems.append(M_("qkv_bias must be true, false or null, not {kind}", kind=kind(c.qkv_bias)))
    if c.final_norm is not None and type(c.final_norm) is not bool:
        problems.append(M_("final_norm must be true, false or null, not {kind}", kind=kind(c.final_norm)))
    if not isinstance(c.extra, dict):
        problems.append(M_("extra must be an object, not {kind}", kind=kind(c.extra)))
    return problems


def parameter_count(c: TransformerConfig) -> int:
    """Numbers the model will allocate: every parameter (tied ones once) plus the positional tables of the stacks
    its shape has."""
    d, f, w, b = c.d_model, c.d_ff, c.attention_width, int(c.bias)
    kv = c.kv_heads * c.d_head
    qkv_b = int(c.bias if c.qkv_bias is None else c.qkv_bias)
    attention = d * w + 2 * d * kv + (w + 2 * kv) * qkv_b + w * d + d * b
    norm = d if c.norm in ("rms", "rms_plus_one") else 2 * d
    ff = (2 if c.ff_gated else 1) * (d * f + f * b) + f * d + d * b + norm if c.feed_forward else 0
    attention += {"none": 0, "head": 2 * c.d_head, "all": w + kv}[c.qk_norm] if c.qk_norm in QK_NORMS else 0
    if c.feed_forward:
        ff += {"sandwich": norm, "output": 0}.get(c.block_norms, 0)  # one more norm per sublayer (two per layer)
    attention += {"sandwich": norm, "output": 0}.get(c.block_norms, 0)
    stacks = int(c.has_encoder) + int(c.has_decoder)
    encoder = c.n_encoder_layers * (attention + ff + norm)
    cross = attention + norm if c.shape == "encoder-decoder" else 0
    decoder = c.n_decoder_layers * (attention + cross + ff + norm)
    final = stacks * norm if c.has_final_norm else 0
    final += stacks * norm if c.embed_norm else 0
    one_table = c.share_embeddings or c.shape != "encoder-decoder"
    embed = c.src_vocab_size * d + (0 if one_table else c.tgt_vocab_size * d) + c.type_vocab_size * d
    head = 0
    if c.output_head != "none":
        head = (0 if c.tie_generator else c.tgt_vocab_size * d) + (c.tgt_vocab_size if c.generator_bias else 0)
        head += d * d + d + norm if c.output_head == "mlm" else 0
    relative = c.relative_buckets * c.n_heads if c.positional == "relative" else 0
    # sinusoidal and learned kinds keep a (max_len, d) table; the others' zero table is a view of one row (no memory)
    table = c.max_len * d if c.positional in ("sinusoidal", "learned") else d
    positions = stacks * (table + relative)
    return encoder + decoder + final + embed + head + positions


def limit_problems(c: TransformerConfig) -> list[str]:
    """Each field outside 1..LIMITS, and the total size, as a sentence naming the limit (i18n Messages)."""
    bounds = {
        "d_model": LIMITS["d_model"],
        "n_heads": LIMITS["n_heads"],
        "d_ff": LIMITS["d_ff"],
        "n_encoder_layers": LIMITS["layers"],
        "n_decoder_layers": LIMITS["layers"],
        "src_vocab_size": LIMITS["vocab"],
        "tgt_vocab_size": LIMITS["vocab"],
        "max_len": LIMITS["max_len"],
        "relative_buckets": LIMITS["relative_buckets"],
        "relative_max_distance": LIMITS["max_len"],
    }
    if c.head_dim is not None:
        bounds["head_dim"] = LIMITS["d_model"]
    if c.n_kv_heads is not None:
        bounds["n_kv_heads"] = LIMITS["n_heads"]
    if c.rope_dim is not None:
        bounds["rope_dim"] = LIMITS["d_model"]
    problems = []
    if c.type_vocab_size < 0 or c.type_vocab_size > LIMITS["vocab"]:
        problems.append(M_("type_vocab_size must lie in 0..{limit}", limit=LIMITS["vocab"]))
    absent = {"decoder-only": "n_encoder_layers", "encoder-only": "n_decoder_layers"}.get(c.shape)
    if absent is not None:  # the stack this shape lacks: exactly 0 layers
        bounds.pop(absent)
        if getattr(c, absent) != 0:
            problems.append(M_("{name} must be 0 in a {shape} model", name=absent, shape=c.shape))
    for name, bound in bounds.items():
        value = getattr(c, name)
        if value < 1:
            problems.append(M_("{name} is {value}; it must be at least 1", name=name, value=value))
        elif value > bound:
            problems.append(
                M_("{name} is {value}, above this app's limit of {limit}", name=name, value=value, limit=bound)
            )
    if not problems and c.attention_width > LIMITS["attention_width"]:
        problems.append(
            M_(
                "n_heads x head_dim is {value}, above this app's limit of {limit}",
                value=c.attention_width,
                limit=LIMITS["attention_width"],
            )
        )
    if not problems and (n := parameter_count(c)) > LIMITS["parameters"]:
        problems.append(
            M_(
                "the model would hold {n} million numbers, more than this server's memory for weights holds: "
                "{limit} million",
                n=f"{n / 1e6:,.0f}",
                limit=f"{LIMITS['parameters'] / 1e6:,.0f}",
            )
        )
    return problems


# Architectures only; vocabulary sizes come from the tokenizer.
PRESETS: dict[str, dict[str, Any]] = {
    # Table 3 of the paper, "base": 65M parameters with a shared 37k BPE vocabulary.
    "base": dict(d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6, dropout=0.1),
    # Table 3, "big".
    "big": dict(d_model=1024, n_heads=16, d_ff=4096, n_encoder_layers=6, n_decoder_layers=6, dropout=0.3),
    # The demo models that ship with the app: small enough to train on a laptop CPU in minutes.
    "demo": dict(d_model=64, n_heads=4, d_ff=256, n_encoder_layers=2, n_decoder_layers=2, dropout=0.1, max_len=128),
    # For tests: tiny and fast.
    "tiny": dict(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=2, n_decoder_layers=2, dropout=0.0, max_len=64),
}
