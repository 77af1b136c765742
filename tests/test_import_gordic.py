"""pytorch-original-transformer's training state (state_dict plus metadata): same numbers as its code."""

import json

import pytest
import torch

from harness.reference.gordic import GorTransformer, gor_run
from model import CheckpointError, capture, load_checkpoint
from model.checkpoints.formats import inspect_checkpoint
from tests.i18n_helpers import matching, msgid
from tests.import_helpers import assert_close, assert_maps_equal, id_batch, our_run, perturb

LACKS = msgid("{origin}: the {side} vocabulary lacks special tokens the format needs ({looked})")
TOO_MANY = msgid("{origin} has {n} {side} tokens but the model's {side} embedding has {size} rows")

UNK, PAD, BOS, EOS = 0, 1, 2, 3  # torchtext Field specials: <unk>, <pad>, then init/eos of the target field


@pytest.fixture(scope="module")
def reference():
    torch.manual_seed(0)
    ref = GorTransformer(
        model_dimension=16, src_vocab_size=29, trg_vocab_size=33, number_of_heads=4, number_of_layers=2
    ).eval()
    perturb(ref, seed=2)
    return ref


@pytest.fixture
def saved(tmp_path, reference):
    path = tmp_path / "transformer_000000.pth"
    # its get_training_state(): metadata beside the state_dict
    torch.save(
        {
            "commit_hash": "abc123",
            "dataset_name": "IWSLT",
            "language_direction": "E2G",
            "num_of_epochs": 20,
            "state_dict": reference.state_dict(),
        },
        path,
    )
    return path


@torch.no_grad()
def test_log_probs_and_every_attention_map_match(saved, reference):
    model, tok = load_checkpoint(saved, n_heads=4)
    c = model.config
    assert (c.norm, c.norm_first, c.has_final_norm, c.d_ff, c.n_heads) == ("layernorm", True, True, 64, 4)
    src, tgt = id_batch(29, 33, None, BOS, PAD, src_len=8, tgt_len=5)
    ref_logp, ref_maps = gor_run(reference, src, tgt, PAD)
    logits, maps = our_run(model, src, tgt)
    assert_close(logits.log_softmax(-1).reshape(-1, 33), ref_logp.reshape(-1, 33))
    assert_maps_equal(maps, ref_maps)


@torch.no_grad()
def test_capture_matches_on_the_real_tokens_of_a_bare_source(saved, reference):
    """Its sources have no <s> or </s>: the appended end marker is <pad>, masked out, so nothing changes."""
    model, tok = load_checkpoint(saved, n_heads=4)
    cap = capture(model, tok, "5 6 7 8", "9 10")
    assert cap.source_ids.tolist() == [5, 6, 7, 8, PAD]
    assert cap.target_ids.tolist() == [BOS, 9, 10]
    _, ref_maps = gor_run(reference, torch.tensor([[5, 6, 7, 8]]), torch.tensor([cap.target_ids.tolist()]), PAD)
    ref_cross = torch.stack([m[0] for m in ref_maps["cross"]])  # (L, H, T, 4)
    assert_close(torch.from_numpy(cap.cross[..., :4]), ref_cross)
    assert cap.cross[..., 4].max() == 0
    ref_enc = torch.stack([m[0] for m in ref_maps["encoder_self"]])
    assert_close(torch.from_numpy(cap.encoder_self[:, :, :4, :4]), ref_enc)
    assert_close(torch.from_numpy(cap.decoder_self), torch.stack([m[0] for m in ref_maps["decoder_self"]]))


def test_metadata_is_shown_and_heads_asked(saved):
    info = inspect_checkpoint(saved)
    assert (info.format, info.needs_n_heads, info.takes_vocabulary, info.default_n_heads) == ("gordic", True, True, 8)
    assert info.metadata == {
        "commit_hash": "abc123",
        "dataset_name": "IWSLT",
        "language_direction": "E2G",
        "num_of_epochs": 20,
    }


def test_separate_vocabulary_files_per_side(saved, tmp_path):
    (tmp_path / "src.txt").write_text("\n".join(["<unk>", "<pad>"] + [f"w{i}" for i in range(27)]) + "\n")
    (tmp_path / "tgt.json").write_text(json.dumps(["<unk>", "<pad>", "<s>", "</s>"] + [f"v{i}" for i in range(29)]))
    model, tok = load_checkpoint(
        saved, n_heads=4, source_vocab=tmp_path / "src.txt", target_vocab=tmp_path / "tgt.json"
    )
    assert (tok.source.eos_id, tok.target.bos_id, tok.target.eos_id, model.config.pad_id) == (PAD, BOS, EOS, PAD)
    cap = capture(model, tok, "w0 w1 nope", "v0")
    assert cap.source_tokens == ["w0", "w1", "<unk>", "<pad>"]
    assert cap.target_tokens == ["<s>", "v0"]


def test_target_vocabulary_without_start_token_is_refused(saved, tmp_path):
    (tmp_path / "tgt.json").write_text(json.dumps(["<unk>", "<pad>", "<eos>"] + [f"v{i}" for i in range(30)]))
    with pytest.raises(
        CheckpointError,
        match=matching(LACKS, side="target", looked="bos: <s> or <bos> or <sos>"),
    ):
        load_checkpoint(saved, n_heads=4, target_vocab=tmp_path / "tgt.json")


def test_vocabulary_size_must_match_the_embeddings(saved, tmp_path):
    (tmp_path / "v.json").write_text(json.dumps(["<unk>", "<pad>", "<s>", "</s>", "a"]))
    with pytest.raises(CheckpointError, match=matching(TOO_MANY, origin="v.json", n=5, side="source", size=29)):
        load_checkpoint(saved, n_heads=4, vocab=tmp_path / "v.json")
