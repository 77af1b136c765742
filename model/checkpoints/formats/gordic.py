"""gordicaleksa/pytorch-original-transformer: a training-state dict {"state_dict": ..., plus metadata}.

Its model, and how it maps here:
    src_embedding.embeddings_table (* sqrt(d_model)), src_pos_embedding.positional_encodings_table (max_len, d)
    encoder.encoder_layers.i: multi_headed_attention.qkv_nets.0..2 (W_q, W_k, W_v), out_projection_net (W_o),
                              pointwise_net.linear1/linear2 (ReLU), sublayers.0/1.norm (nn.LayerNorm): pre-LN
    decoder.decoder_layers.i: trg_multi_headed_attention (-> self_attn), src_multi_headed_attention (-> cross_attn),
                              pointwise_net, sublayers.0/1/2.norm
    encoder.norm, decoder.norm: final nn.LayerNorm on each stack
    decoder_generator.linear: Linear, then log_softmax
The number of heads is not stored (its training script uses 8): it is an argument.
"""

from __future__ import annotations

from i18n import M_

from . import state_dicts
from .conventions import Conventions, Side

NAME = "gordic"
TITLE = M_("pytorch-original-transformer (gordicaleksa)")
SIGNATURE = ("src_embedding.embeddings_table.weight", "decoder_generator.linear.weight")
NOTES = M_(
    "Sources carry no <s> or </s> in this format: the end marker the app appends is <pad>, which attention "
    "masks out (a zero column). Targets are <s> ... </s>."
)

CONVENTIONS = Conventions(
    source=Side({"unk": 0, "pad": 1}, ends_with_eos=False),  # source Field: no init or eos token
    target=Side({"unk": 0, "pad": 1, "bos": 2, "eos": 3}),
)

LAYOUT = state_dicts.Layout(
    embeddings=("src_embedding.embeddings_table.weight", "trg_embedding.embeddings_table.weight"),
    positions=("src_pos_embedding.positional_encodings_table", "trg_pos_embedding.positional_encodings_table"),
    layers=("encoder.encoder_layers", "decoder.decoder_layers"),
    attention=("multi_headed_attention", "trg_multi_headed_attention", "src_multi_headed_attention"),
    projections=("qkv_nets.0", "qkv_nets.1", "qkv_nets.2", "out_projection_net"),
    feed_forward=("pointwise_net.linear1", "pointwise_net.linear2"),
    norm="sublayers.{j}.norm",
    final_norms=("encoder.norm", "decoder.norm"),
    generator="decoder_generator.linear",
    norm_first=True,
)

detect, inspect, load = state_dicts.protocol(__name__)
