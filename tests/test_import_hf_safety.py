"""Bad Hugging Face folders of the T5 / BART / mBART families: damaged weights, hostile config numbers, tokenizer
files that do not belong to the model. Each is a CheckpointError naming the problem, raised before anything
beyond the limits is allocated; no file content is echoed."""

import json

import pytest
import torch

from model import CheckpointError, load_checkpoint
from model.checkpoints.formats import inspect_checkpoint
from model.text.inputs import prepare_source, prepare_target
from tests.hf_families import build_bart, build_mbart, build_t5, edit_json
from tests.i18n_helpers import matching, msgid, rendered

UNREADABLE = msgid("{name} is not a readable safetensors file ({problem})")
OUTSIDE = msgid(
    "{folder}: the tokenizer ({what}) has {n} token ids outside the model's {size} embeddings; it does not belong to "
    "this model"
)
NOT_SENTENCEPIECE = msgid("{folder}: {file} is not a readable sentencepiece model ({problem})")
NEEDS_ALL = msgid("{folder}: the tokenizer needs all of {files}")
NO_LANGUAGE = msgid("{folder}: tokenizer_config.json names a source language that mBART does not have")
HALF = msgid("Stored in half precision ({precision}); the weights were cast to float32.")

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")
pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf-bad")
    return {"t5": build_t5(root, True).folder, "bart": build_bart(root).folder, "mbart": build_mbart(root).folder}


@pytest.mark.parametrize("name", ["t5", "bart", "mbart"])
def test_a_truncated_weights_file_is_a_clear_error(copy, name):
    folder = copy(name)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=matching(UNREADABLE, name="model.safetensors")):
        load_checkpoint(folder)


@pytest.mark.parametrize(
    "name, changes, message",
    [
        ("t5", {"d_model": 10**9}, r"d_model is 1000000000, above this app's limit of 4096"),
        ("t5", {"d_kv": 10**6}, r"head_dim is 1000000, above this app's limit"),
        ("t5", {"num_heads": 120, "d_kv": 4000}, r"n_heads x head_dim is 480000, above this app's limit"),
        ("t5", {"relative_attention_num_buckets": 10**9}, r"relative_buckets is 1000000000, above this app's limit"),
        ("t5", {"vocab_size": 10**8}, r"src_vocab_size is 100000000, above this app's limit of 262144"),
        ("t5", {"num_layers": True}, r"n_encoder_layers must be an integer, not true/false"),
        ("t5", {"feed_forward_proj": "gated-db_password"}, r"feed_forward_proj is not one of relu, gelu"),
        ("t5", {"is_encoder_decoder": False}, r"a decoder-only T5 model; this app shows encoder-decoders"),
        ("bart", {"max_position_embeddings": 10**9}, r"max_len is 1000000000, above this app's limit of 16384"),
        ("bart", {"encoder_attention_heads": 0, "decoder_attention_heads": 0}, r"n_heads=0 does not divide"),
        ("bart", {"d_model": "hunter2"}, r"d_model must be an integer, not text"),
        ("bart", {"normalize_before": True}, r"normalize_before differs from what BART uses \(pre-LN blocks\)"),
        ("mbart", {"decoder_ffn_dim": 8}, r"encoder_ffn_dim differs from decoder_ffn_dim"),
        ("mbart", {"eos_token_id": [2, 3]}, r"eos_token_id lists 2 ids"),
        ("mbart", {"pad_token_id": 10**6}, r"pad_id=1000000 is outside the vocabulary"),
    ],
)
def test_hostile_config_numbers_are_refused_before_any_tensor(copy, no_model_built, name, changes, message):
    folder = copy(name)
    edit_json(folder / "config.json", **changes)
    generation = json.loads((folder / "generation_config.json").read_text())
    edit_json(folder / "generation_config.json", **{k: v for k, v in changes.items() if k in generation})
    with pytest.raises(CheckpointError, match=message) as err:
        load_checkpoint(folder)
    assert "hunter2" not in str(err.value) and "db_password" not in str(err.value)


def test_a_sentencepiece_model_larger_than_the_vocabulary_is_refused(copy, tmp_path):
    from tests.hf_families import train_sentencepiece

    folder = copy("t5")
    edit_json(folder / "tokenizer_config.json", extra_ids=100)  # 100 sentinels do not fit the tiny vocabulary
    with pytest.raises(CheckpointError, match=matching(OUTSIDE)):
        load_checkpoint(folder)
    folder = copy("mbart")
    (folder / "sentencepiece.bpe.model").write_bytes(train_sentencepiece(vocab_size=90))
    with pytest.raises(CheckpointError, match=matching(OUTSIDE, what="sentencepiece.bpe.model")):
        load_checkpoint(folder)


def test_damaged_or_mismatched_tokenizer_files_are_refused(copy):
    folder = copy("mbart")
    (folder / "sentencepiece.bpe.model").write_bytes(b"\x00\x01 not a model")
    with pytest.raises(CheckpointError, match=matching(NOT_SENTENCEPIECE)):
        load_checkpoint(folder)
    folder = copy("bart")
    vocab = json.loads((folder / "vocab.json").read_text())
    vocab["Ġzebra"] = 10**6
    (folder / "vocab.json").write_text(json.dumps(vocab))
    with pytest.raises(CheckpointError, match=matching(OUTSIDE, what="vocab.json", n=1, size=300)):
        load_checkpoint(folder)
    (folder / "merges.txt").unlink()
    with pytest.raises(CheckpointError, match=matching(NEEDS_ALL, files="vocab.json, merges.txt")):
        load_checkpoint(folder)


@pytest.mark.parametrize(
    "name, changes, message",
    [
        ("t5", {"eos_token_id": 2}, r"spiece.model has </s> at id 1, but config.json eos_token_id is 2"),
        ("bart", {"pad_token_id": 3}, r"vocab.json has <pad> at id 1, but config.json pad_token_id is 3"),
        ("mbart", {"eos_token_id": 0}, r"sentencepiece.bpe.model has </s> at id 2, but config.json eos_token_id is 0"),
    ],
)
def test_a_tokenizer_whose_special_ids_differ_from_the_config_is_refused(copy, name, changes, message):
    folder = copy(name)
    for file in ("config.json", "generation_config.json"):
        edit_json(folder / file, **changes)
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(folder)


def test_an_unknown_or_malformed_source_language_is_refused(copy):
    folder = copy("mbart")
    for lang in (["de_DE"], "xx_XX"):
        edit_json(folder / "tokenizer_config.json", src_lang=lang)
        with pytest.raises(CheckpointError, match=matching(NO_LANGUAGE)):
            load_checkpoint(folder)


@pytest.mark.parametrize("name, dtype, file", [("t5", "float16", "pytorch_model.bin"), ("bart", "bfloat16", None)])
@torch.no_grad()
def test_half_precision_folders_load_in_float32_and_match_transformers(copy, name, dtype, file):
    import transformers
    from safetensors.torch import load_file, save_file

    folder = copy(name)
    state = {k: v.to(getattr(torch, dtype)) for k, v in load_file(str(folder / "model.safetensors")).items()}
    if file:
        (folder / "model.safetensors").unlink()
        torch.save(state, folder / file)
    else:
        save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    info = inspect_checkpoint(folder)
    assert info.precision == dtype and rendered(HALF, precision=dtype) in info.notes
    model, tok = load_checkpoint(folder)
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    cls = transformers.T5ForConditionalGeneration if name == "t5" else transformers.BartForConditionalGeneration
    hf = cls.from_pretrained(str(folder), attn_implementation="eager", dtype=torch.float32).eval()
    src = torch.tensor([prepare_source(model, tok, "the cat sat on a mat").ids])
    tgt = torch.tensor([prepare_target(model, tok.target, "the red house")[0]])
    ours = model(src, tgt).log_softmax(-1)
    theirs = hf(input_ids=src, decoder_input_ids=tgt).logits.log_softmax(-1)
    assert (ours - theirs).abs().max().item() < 1e-4


def test_a_relative_bias_table_of_the_wrong_size_is_named(copy):
    folder = copy("t5")
    edit_json(folder / "config.json", relative_attention_num_buckets=16)
    with pytest.raises(CheckpointError, match=r"relative_attention_bias.weight has shape \(8, 6\)"):
        load_checkpoint(folder)


def test_inspect_reads_the_family_without_building_it(built, no_model_built):
    info = inspect_checkpoint(built["t5"])
    assert (info.format, info.n_heads, info.needs_n_heads, info.takes_vocabulary) == ("t5", 6, False, False)
    assert inspect_checkpoint(built["mbart"]).format == inspect_checkpoint(built["bart"]).format == "bart"
