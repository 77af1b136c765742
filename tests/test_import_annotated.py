"""The Annotated Transformer's make_model state_dict: loaded here, it computes what its own code computes."""

import json

import pytest
import torch

from harness.reference.annotated import ann_make_model, ann_run
from model import CheckpointError, capture, load_checkpoint
from model.checkpoints.formats import inspect_checkpoint
from tests.i18n_helpers import matching, msgid, msgid_starting, rendered
from tests.import_helpers import assert_close, assert_maps_equal, id_batch, our_run, perturb

NOT_SINUSOIDAL = msgid_starting("{where}: {key} is not the sinusoidal positional encoding this format defines")
LAYOUT = msgid("; it is the {other} layout, which this format's code does not use")
NOT_DIVIDING = msgid("{where}: n_heads={h} does not divide d_model={d}; possible head counts: {divisors}")

BOS, EOS, PAD, UNK = 0, 1, 2, 3  # specials=["<s>", "</s>", "<blank>", "<unk>"]


@pytest.fixture(scope="module")
def reference():
    torch.manual_seed(0)
    ref = ann_make_model(31, 27, N=2, d_model=24, d_ff=40, h=3).eval()
    perturb(ref, seed=1)
    return ref


@pytest.fixture
def saved(tmp_path, reference):
    path = tmp_path / "annotated.pt"
    torch.save(reference.state_dict(), path)  # what its training script saves
    return path


@torch.no_grad()
def test_log_probs_and_every_attention_map_match(saved, reference):
    model, tok = load_checkpoint(saved, n_heads=3)
    c = model.config
    assert (c.norm, c.layer_norm_eps, c.norm_first, c.has_final_norm) == ("std", 1e-6, True, True)
    assert (c.n_encoder_layers, c.n_decoder_layers, c.d_ff, c.max_len, c.pad_id) == (2, 2, 40, 5000, PAD)
    src, tgt = id_batch(31, 27, BOS, BOS, PAD)
    ref_logp, ref_maps = ann_run(reference, src, tgt, PAD)
    logits, maps = our_run(model, src, tgt)
    assert_close(logits.log_softmax(-1), ref_logp)
    assert_maps_equal(maps, ref_maps)
    assert maps["encoder_self"][0][1, :, :, -2:].abs().max() == 0  # padded source keys get no weight
    assert torch.equal(model.src_pe.table, reference.src_embed[1].pe[0])  # the file's own float32 table is used


@torch.no_grad()
def test_capture_in_id_mode_wraps_the_source_like_its_training_data(saved, reference):
    model, tok = load_checkpoint(saved, n_heads=3)
    cap = capture(model, tok, "5 9 <id 11>", "7 8")
    assert cap.source_ids.tolist() == [BOS, 5, 9, 11, EOS]  # <s> x </s>, as its collate_batch builds sources
    assert cap.target_ids.tolist() == [BOS, 7, 8]
    assert cap.source_tokens == ["<id 0>", "<id 5>", "<id 9>", "<id 11>", "<id 1>"]
    _, ref_maps = ann_run(
        reference, torch.tensor([cap.source_ids.tolist()]), torch.tensor([cap.target_ids.tolist()]), PAD
    )
    for kind, ours in (("encoder_self", cap.encoder_self), ("decoder_self", cap.decoder_self), ("cross", cap.cross)):
        assert_close(torch.from_numpy(ours), torch.stack([m[0] for m in ref_maps[kind]]))


def test_vocabulary_file_gives_words(saved, tmp_path):
    specials = ["<s>", "</s>", "<blank>", "<unk>"]
    src = specials + [f"de{i}" for i in range(27)]
    tgt = specials + [f"en{i}" for i in range(23)]
    (tmp_path / "vocab.json").write_text(json.dumps({"source": src, "target": tgt}))
    model, tok = load_checkpoint(saved, n_heads=3, vocab=tmp_path / "vocab.json")
    assert tok.source.encode("de1 zzz") == [BOS, 5, UNK]
    cap = capture(model, tok, "de1 de2", "en3")
    assert cap.source_tokens == ["<s>", "de1", "de2", "</s>"]
    assert cap.target_tokens == ["<s>", "en3"]


def test_inspect_asks_for_heads_and_vocabulary(saved):
    info = inspect_checkpoint(saved)
    assert (info.format, info.needs_n_heads, info.takes_vocabulary) == ("annotated", True, True)
    assert (info.d_model, info.src_vocab_size, info.tgt_vocab_size) == (24, 31, 27)
    assert info.head_choices == [1, 2, 3, 4, 6, 8, 12, 24] and info.default_n_heads == 8


def test_wrong_positional_buffer_is_refused_naming_the_difference(tmp_path, reference):
    state = reference.state_dict()
    state["src_embed.1.pe"] = state["src_embed.1.pe"].clone()
    state["src_embed.1.pe"][0, 3, 5] += 0.5
    torch.save(state, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=matching(NOT_SINUSOIDAL, key="src_embed.1.pe", pos=3, dim=5)):
        load_checkpoint(tmp_path / "bad.pt", n_heads=3)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_positional_table_with_a_value_that_is_no_number_is_refused(tmp_path, reference, value):
    state = reference.state_dict()
    state["tgt_embed.1.pe"] = state["tgt_embed.1.pe"].clone()
    state["tgt_embed.1.pe"][0, 4000, 7] = value  # far down the table, where the tolerance is widest
    torch.save(state, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=matching(NOT_SINUSOIDAL, key="tgt_embed.1.pe")):
        load_checkpoint(tmp_path / "bad.pt", n_heads=3)


def test_loaded_models_are_in_eval_mode(saved):
    model, _ = load_checkpoint(saved, n_heads=3)
    assert not any(m.training for m in model.modules())


def test_half_layout_table_is_named(tmp_path, reference):
    from model.network.positional import sinusoidal_encoding

    state = reference.state_dict()
    state["tgt_embed.1.pe"] = sinusoidal_encoding(5000, 24, layout="half")[None]
    torch.save(state, tmp_path / "half.pt")
    with pytest.raises(
        CheckpointError, match=matching(NOT_SINUSOIDAL, key="tgt_embed.1.pe", hint=rendered(LAYOUT, other="half"))
    ):
        load_checkpoint(tmp_path / "half.pt", n_heads=3)


def test_missing_and_unknown_keys_are_named(tmp_path, reference):
    state = dict(reference.state_dict())
    del state["decoder.layers.1.src_attn.linears.2.weight"]
    state["encoder.layers.0.extra_gate.weight"] = torch.zeros(3)
    torch.save(state, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(tmp_path / "bad.pt", n_heads=3)
    assert "missing keys: decoder.layers.1.src_attn.linears.2.weight" in str(err.value)
    assert "unexpected keys" in str(err.value) and "encoder.layers.0.extra_gate.weight" in str(err.value)


def test_heads_that_do_not_divide_d_model_are_refused(saved):
    with pytest.raises(
        CheckpointError,
        match=matching(NOT_DIVIDING, h=5, d=24, divisors=[1, 2, 3, 4, 6, 8, 12, 24]),
    ):
        load_checkpoint(saved, n_heads=5)


def test_inconsistent_shapes_are_named(tmp_path, reference):
    state = dict(reference.state_dict())
    state["decoder.layers.0.feed_forward.w_1.weight"] = torch.zeros(50, 24)
    torch.save(state, tmp_path / "bad.pt")
    with pytest.raises(
        CheckpointError,
        match=r"decoder\.layers\.0\.feed_forward\.w_1\.weight has shape \(50, 24\), but d_model=24, d_ff=40 needs \(40, 24\)",
    ):
        load_checkpoint(tmp_path / "bad.pt", n_heads=3)
