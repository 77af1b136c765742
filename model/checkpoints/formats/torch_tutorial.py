"""The PyTorch tutorial "Language Translation with nn.Transformer and torchtext": `Seq2SeqTransformer`.

Its model, and how it maps here:
    src_tok_emb.embedding (* sqrt(emb_size)), tgt_tok_emb.embedding
    positional_encoding.pos_embedding: one (max_len, 1, emb_size) sinusoid buffer for both sides
    transformer = nn.Transformer(d_model, nhead, ...) with its defaults: post-LN (norm_first=False),
        ReLU, LayerNorm eps 1e-5, and a final LayerNorm on each stack (transformer.encoder.norm, .decoder.norm)
    transformer.encoder.layers.i.self_attn.in_proj_weight (3d, d) = [W_q; W_k; W_v], split here; out_proj
    transformer.decoder.layers.i.multihead_attn -> cross_attn; linear1/linear2; norm1..norm3
    generator: Linear (logits)
Sequence-first tensors (S, B, D) there, batch-first here: the weights do not depend on it. The number
of heads is not stored (the tutorial uses 8): it is an argument. A state_dict cannot show whether the
model was built with norm_first=True or another activation; the tutorial's defaults are assumed.
"""

from __future__ import annotations

from i18n import M_

from . import state_dicts
from .conventions import Conventions, Side

NAME = "torch-tutorial"
TITLE = M_("PyTorch translation tutorial (Seq2SeqTransformer around nn.Transformer)")
SIGNATURE = ("src_tok_emb.embedding.weight", "positional_encoding.pos_embedding")
NOTES = M_(
    "Source and target sentences are <bos> ... <eos>; post-LN with ReLU (the tutorial's nn.Transformer defaults) is assumed."
)

_SPECIALS = {"unk": 0, "pad": 1, "bos": 2, "eos": 3}  # special_symbols = ['<unk>', '<pad>', '<bos>', '<eos>']
CONVENTIONS = Conventions(source=Side(_SPECIALS, starts_with_bos=True), target=Side(_SPECIALS))

LAYOUT = state_dicts.Layout(
    embeddings=("src_tok_emb.embedding.weight", "tgt_tok_emb.embedding.weight"),
    positions=("positional_encoding.pos_embedding",),
    layers=("transformer.encoder.layers", "transformer.decoder.layers"),
    attention=("self_attn", "self_attn", "multihead_attn"),
    projections=("in_proj", "in_proj", "in_proj", "out_proj"),
    packed=True,
    feed_forward=("linear1", "linear2"),
    norm="norm{n}",
    final_norms=("transformer.encoder.norm", "transformer.decoder.norm"),
    generator="generator",
    norm_first=False,
)

detect, inspect, load = state_dicts.protocol(__name__)
