"""Configuration of the encoder-decoder Transformer ("Attention Is All You Need", Vaswani et al. 2017).

One dataclass describes every model this project builds or imports; the variants that public
implementations differ in (post-LN vs pre-LN, learned vs sinusoidal positions, tied embeddings, ...)
are fields here, not forks of the model code.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

POSITIONAL_KINDS = ("sinusoidal", "learned")
PE_LAYOUTS = ("interleaved", "half")
ACTIVATIONS = ("relu", "gelu", "silu")
NORM_KINDS = ("layernorm", "std")


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
    positional: str = "sinusoidal"  # "sinusoidal" (fixed, paper) or "learned" (an embedding table)
    pe_base: float = 10000.0  # the base of the sinusoid wavelengths
    pe_layout: str = "interleaved"  # "interleaved": sin on even dims, cos on odd; "half": sin block, cos block
    max_len: int = 512  # longest sequence the positional encoding covers, on each side
    share_embeddings: bool = False  # one embedding table for source and target (needs equal vocab sizes)
    tie_generator: bool = False  # the output projection reuses the target embedding matrix (paper: yes)
    generator_bias: bool = True  # a bias on the output projection
    scale_embeddings: bool = True  # multiply token embeddings by sqrt(d_model) before adding PE (paper: yes)
    activation: str = "relu"  # feed-forward nonlinearity: "relu" (paper), "gelu" or "silu"
    norm: str = "layernorm"  # "layernorm": torch LayerNorm; "std": a_2*(x-mean)/(std_unbiased+eps)+b_2
    layer_norm_eps: float = 1e-5
    pad_id: int = 0  # id of <pad> on both sides: padded keys get zero attention weight
    bos_id: int = 1  # the decoder's first input token
    eos_id: int = 2  # generation stops after this token
    extra: dict[str, Any] = field(default_factory=dict)  # free-form notes (e.g. where an import came from)

    def __post_init__(self) -> None:
        problems = []
        if self.d_model % self.n_heads:
            problems.append(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if self.positional not in POSITIONAL_KINDS:
            problems.append(f"positional={self.positional!r} (expected one of {POSITIONAL_KINDS})")
        if self.pe_layout not in PE_LAYOUTS:
            problems.append(f"pe_layout={self.pe_layout!r} (expected one of {PE_LAYOUTS})")
        if self.activation not in ACTIVATIONS:
            problems.append(f"activation={self.activation!r} (expected one of {ACTIVATIONS})")
        if self.norm not in NORM_KINDS:
            problems.append(f"norm={self.norm!r} (expected one of {NORM_KINDS})")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            problems.append(
                f"share_embeddings needs equal vocabularies, got {self.src_vocab_size} and {self.tgt_vocab_size}"
            )
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "n_heads", "d_ff", "max_len"):
            if getattr(self, name) < 1:
                problems.append(f"{name}={getattr(self, name)} must be positive")
        if self.d_model % 2:
            problems.append(f"d_model={self.d_model} must be even for sinusoidal positions")
        if problems:
            raise ValueError("invalid TransformerConfig: " + "; ".join(problems))

    @property
    def d_head(self) -> int:
        """Width of one head's queries, keys and values (d_k = d_v in the paper)."""
        return self.d_model // self.n_heads

    @property
    def has_final_norm(self) -> bool:
        return self.norm_first if self.final_norm is None else self.final_norm

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TransformerConfig":
        """Build from a dict, naming unknown fields instead of failing with a bare TypeError."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown TransformerConfig fields: {', '.join(unknown)}")
        missing = [n for n in ("src_vocab_size", "tgt_vocab_size") if n not in data]
        if missing:
            raise ValueError(f"TransformerConfig is missing required fields: {', '.join(missing)}")
        return cls(**data)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> "TransformerConfig":
        """A named architecture from PRESETS; vocabulary sizes (and anything else) as keywords."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose from {', '.join(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})


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
