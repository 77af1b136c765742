"""The PyTorch translation tutorial's Seq2SeqTransformer (nn.Transformer inside, sequence-first).

Its attention comes from nn.MultiheadAttention, captured by hooks that ask for per-head weights with
the fused fast path off; ours comes from this project's own recording hooks.
"""

import pytest
import torch

from harness.reference.torch_tutorial import Seq2SeqTransformer, tut_run
from model import CheckpointError, capture, load_checkpoint
from model.checkpoints.formats import inspect_checkpoint
from tests.import_helpers import assert_close, assert_maps_equal, id_batch, our_run, perturb

# the tutorial mixes a float attn_mask with boolean padding masks; torch warns about that, not about us
pytestmark = pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")

UNK, PAD, BOS, EOS = 0, 1, 2, 3  # special_symbols = ['<unk>', '<pad>', '<bos>', '<eos>']


@pytest.fixture(scope="module")
def reference():
    torch.manual_seed(0)
    ref = Seq2SeqTransformer(
        3, 2, emb_size=20, nhead=5, src_vocab_size=26, tgt_vocab_size=30, dim_feedforward=36
    ).eval()
    perturb(ref, seed=3, scale=0.1)
    return ref


@pytest.fixture
def saved(tmp_path, reference):
    path = tmp_path / "seq2seq.pt"
    torch.save(reference.state_dict(), path)
    return path


@torch.no_grad()
def test_logits_and_every_attention_map_match(saved, reference):
    model, tok = load_checkpoint(saved, n_heads=5)
    c = model.config
    assert (c.norm_first, c.has_final_norm, c.n_encoder_layers, c.n_decoder_layers, c.d_ff) == (False, True, 3, 2, 36)
    src, tgt = id_batch(26, 30, BOS, BOS, PAD, src_len=9, tgt_len=6)
    ref_logits, ref_maps = tut_run(reference, src, tgt, PAD)
    assert all(m.shape[1] == 5 for maps in ref_maps.values() for m in maps)  # per-head, not averaged
    logits, maps = our_run(model, src, tgt)
    assert_close(logits, ref_logits)
    assert_maps_equal(maps, ref_maps)


@torch.no_grad()
def test_capture_wraps_the_source_in_bos_and_eos(saved, reference):
    model, tok = load_checkpoint(saved, n_heads=5)
    cap = capture(model, tok, "4 5 6", "9 8")
    assert cap.source_ids.tolist() == [BOS, 4, 5, 6, EOS]
    assert cap.target_ids.tolist() == [BOS, 9, 8]
    _, ref_maps = tut_run(
        reference, torch.tensor([cap.source_ids.tolist()]), torch.tensor([cap.target_ids.tolist()]), PAD
    )
    assert_close(torch.from_numpy(cap.cross), torch.stack([m[0] for m in ref_maps["cross"]]))


def test_detected_with_heads_asked(saved):
    info = inspect_checkpoint(saved)
    assert (info.format, info.needs_n_heads, info.d_model, info.default_n_heads) == ("torch-tutorial", True, 20, 5)
    assert 8 not in info.head_choices and 5 in info.head_choices


def test_wrong_head_count_is_caught_by_the_numbers_not_silently(saved, reference):
    """A head count that divides d_model loads, but it is a different model: the maps differ in shape."""
    model, _ = load_checkpoint(saved, n_heads=4)
    src, tgt = id_batch(26, 30, BOS, BOS, PAD)
    _, maps = our_run(model, src, tgt)
    assert maps["encoder_self"][0].shape[1] == 4


@pytest.mark.parametrize(
    "rows, message",
    [
        (
            39,
            r"multihead_attn\.in_proj_weight \(rows W_q of 3\) has shape \(13, 20\), but d_model=20, d_ff=36 needs \(20, 20\)",
        ),
        (40, r"multihead_attn\.in_proj_weight: a fused tensor of shape \(40, 20\) cannot be split into 3 equal parts"),
    ],
)
def test_fused_in_proj_of_the_wrong_size_is_named(tmp_path, reference, rows, message):
    state = dict(reference.state_dict())
    state["transformer.decoder.layers.1.multihead_attn.in_proj_weight"] = torch.zeros(rows, 20)
    torch.save(state, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(tmp_path / "bad.pt", n_heads=5)
