"""The Annotated Transformer (harvardnlp): a plain state_dict of `make_model(src_vocab, tgt_vocab, N, d_model, d_ff, h)`.

Its model, and how it maps here:
    src_embed = Sequential(Embeddings (lut, * sqrt(d_model)), PositionalEncoding (buffer pe (1, max_len, d)))
    encoder.layers.i: self_attn.linears.0..3 (W_q, W_k, W_v, W_o), feed_forward.w_1/w_2 (ReLU),
                      sublayer.0/1.norm (a_2, b_2): pre-LN, x + Sublayer(LayerNorm(x))
    decoder.layers.i: self_attn, src_attn (-> cross_attn), feed_forward, sublayer.0/1/2.norm
    encoder.norm, decoder.norm: a final norm on each stack
    generator.proj: Linear, then log_softmax (logits here; log_softmax of them is its output)
Its LayerNorm is a_2 * (x - mean) / (std + eps) + b_2 with the unbiased std and eps=1e-6 added to the
std: this project's norm="std". The number of heads h is not stored: it is an argument.
"""

from __future__ import annotations

from i18n import M_

from . import state_dicts
from .conventions import Conventions, Side

NAME = "annotated"
TITLE = M_("The Annotated Transformer (harvardnlp)")
SIGNATURE = ("src_embed.0.lut.weight", "generator.proj.weight")
NOTES = M_("Source and target sentences are <s> ... </s>; padding is <blank> (id 2 without a vocabulary).")

_SPECIALS = {"bos": 0, "eos": 1, "pad": 2, "unk": 3}  # specials=["<s>", "</s>", "<blank>", "<unk>"]
CONVENTIONS = Conventions(source=Side(_SPECIALS, starts_with_bos=True), target=Side(_SPECIALS, starts_with_bos=False))

LAYOUT = state_dicts.Layout(
    embeddings=("src_embed.0.lut.weight", "tgt_embed.0.lut.weight"),
    positions=("src_embed.1.pe", "tgt_embed.1.pe"),
    layers=("encoder.layers", "decoder.layers"),
    attention=("self_attn", "self_attn", "src_attn"),
    projections=("linears.0", "linears.1", "linears.2", "linears.3"),
    feed_forward=("feed_forward.w_1", "feed_forward.w_2"),
    norm="sublayer.{j}.norm",
    final_norms=("encoder.norm", "decoder.norm"),
    generator="generator.proj",
    norm_first=True,
    norm_kind="std",
    norm_eps=1e-6,
    norm_params=("a_2", "b_2"),
    generator_bias=None,
)

detect, inspect, load = state_dicts.protocol(__name__)
